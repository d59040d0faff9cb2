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
    ("missing workflow.confirm_restock", "缺少权限：workflow.confirm_restock"),
    ("数量太大", "数量太大"),
])
def test_a_denial_reason_reads_in_chinese_on_the_audit_list(stored, shown):
    # The /proposals/ audit trail showed 「原因：POS token on a non-POS endpoint」.
    from types import SimpleNamespace

    from workflow.templatetags.audit import audit_detail

    assert audit_detail(SimpleNamespace(after={"attempt": "GET /api/v1/stores", "reason": stored})) == f"原因：{shown}"


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
