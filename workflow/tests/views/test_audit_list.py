"""The audit list on /proposals/ and /audit/: one readable line per entry."""
import pytest
from django.test import Client

from ops.models import Store
from ops.tests.factories import make_user
from workflow.services import proposal_create, proposal_reject

pytestmark = pytest.mark.django_db


def test_an_audit_line_says_what_was_proposed_and_why_it_was_rejected_and_names_the_store_once():
    # Was 「… 拒绝 #17 补货申请 · 广州天河店 · 已拒绝 · 广州天河店」: no quantity, no reason, the store twice.
    staff = make_user("audit_staff", role="staff", stores=["GZ-TH"])
    manager = make_user("audit_manager", role="manager", stores=["GZ-TH"])
    proposal, _ = proposal_create(user=staff, kind="restock", store=Store.objects.get(code="GZ-TH"), source="api",
                                  payload={"lines": [{"sku": "B003", "quantity": 77, "unit": "瓶", "reason": "测试"}]})
    proposal_reject(proposal=proposal, user=manager, reason="数量太大")
    client = Client()
    client.force_login(manager)
    page = client.get("/audit/", HTTP_HX_REQUEST="true").content.decode()
    rejected = next(line for line in page.split("<li>") if "audit_manager" in line and f"#{proposal.pk}" in line)
    proposed = next(line for line in page.split("<li>") if "audit_staff" in line and f"#{proposal.pk}" in line)
    assert "原因：数量太大" in rejected and rejected.count("广州天河店") == 1
    assert "77瓶" in proposed


@pytest.mark.parametrize("stored,shown", [
    ("POS token on a non-POS endpoint", "POS 设备令牌访问了非 POS 接口"),
    ("store outside the user's scope (ops.view_sales)", "门店不在其负责的范围内"),
    # Was the code name, 「缺少权限：workflow.confirm_restock」 / 「…workflow.add_proposal」.
    ("missing workflow.confirm_restock", "缺少权限：确认补货申请"),
    ("missing workflow.add_proposal", "缺少权限：新增操作提案"),
    ("missing core.view_auditlog", "缺少权限：查看审计日志"),
    ("missing nowhere.do_thing", "缺少权限：nowhere.do_thing"),
    ("数量太大", "数量太大"),
])
def test_a_denial_reason_reads_in_chinese_on_the_audit_list(stored, shown):
    # The /proposals/ audit trail showed 「原因：POS token on a non-POS endpoint」.
    from types import SimpleNamespace

    from workflow.templatetags.audit import audit_detail

    assert audit_detail(SimpleNamespace(action="permission_denied", after={"attempt": "GET /api/v1/stores", "reason": stored})) == f"原因：{shown}"


def test_the_audit_page_pages_back_through_older_rows(client):
    # Only the latest 100 rows were ever shown, and ?page=2 gave the same list.
    from core.audit import audit_record

    manager = make_user("audit_pager_manager", role="manager", stores=["GZ-TH"])
    store = Store.objects.get(code="GZ-TH")
    for i in range(105):
        audit_record(actor=manager, action="object_changed", store=store, after={"n": i})
    client.force_login(manager)
    first = client.get("/audit/")
    total = first.context["page"].paginator.count
    assert total >= 105 and "较早" in first.content.decode()
    second = client.get("/audit/", {"page": 2})
    assert not {a.pk for a in first.context["audit"]} & {a.pk for a in second.context["audit"]}


def test_a_refused_page_is_a_whole_chinese_page_and_an_htmx_request_gets_the_fragment():
    # Staff opening /audit/ got a bare 79-byte fragment; /admin/ops/member/ was Django's English
    # 「403 Forbidden」 page (lang="en"); an unknown address was English 「Not Found」.
    staff = make_user("audit_page_staff", role="staff", stores=["GZ-TH"])
    client = Client()
    client.force_login(staff)
    page = client.get("/audit/")
    body = page.content.decode()
    assert page.status_code == 403 and '<html lang="zh-CN">' in body and "只有店长和总部可以查看审计日志。" in body and "没有权限" in body
    fragment = client.get("/audit/", HTTP_HX_REQUEST="true")
    assert fragment.status_code == 403 and "<html" not in fragment.content.decode()
    manager = Client()
    manager.force_login(make_user("audit_page_manager", role="manager", stores=["GZ-TH"], is_staff=True))
    admin_page = manager.get("/admin/ops/member/")  # members are HQ's
    body = admin_page.content.decode()
    assert admin_page.status_code == 403 and '<html lang="zh-CN">' in body and "你的角色没有权限打开这个页面" in body
    assert "Forbidden" not in body
    missing = client.get("/no-such-page/")
    assert missing.status_code == 404 and "页面不存在" in missing.content.decode() and "Not Found" not in missing.content.decode()


def test_a_stock_adjustment_on_the_audit_list_names_the_product_and_its_reason_in_chinese():
    # /audit/ showed 「库存调整 TRIALB-MGRADJ-2: -1 · 原因：damage」: a code, and no product.
    from ops.services import inventory_adjust

    manager = make_user("audit_adj_manager", role="manager", stores=["GZ-TH"])
    inventory_adjust(user=manager, data={"store": "GZ-TH", "sku": "B001", "delta": -1, "reason": "damage",
                                         "external_id": "AUDIT-ADJ-1"})
    client = Client()
    client.force_login(manager)
    page = client.get("/audit/", HTTP_HX_REQUEST="true").content.decode()
    assert "青岛啤酒 -1（AUDIT-ADJ-1）" in page and "原因：报损" in page and "damage" not in page
