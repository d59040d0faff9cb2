"""The ops side of the permission layer: tokens (issue, revoke, POS-only), member lookups
(exact keys only, masked, audited), admin masking and audited admin edits, and the roles
the migration granted matching core.roles."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied, ValidationError
from rest_framework.test import APIClient

from core.models import AuditLog
from core.roles import ROLE_PERMISSIONS
from ops.models import ApiToken, Member, Product, Store
from ops.services import api_token_issue
from ops.tests.factories import make_user, pos_token
from ops.tools import run_tool

pytestmark = pytest.mark.django_db


def test_the_groups_hold_exactly_the_permissions_of_the_table():
    for role, perms in ROLE_PERMISSIONS.items():
        group = Group.objects.get(name=role)
        granted = {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.select_related("content_type")}
        assert granted == set(perms), role


def test_a_pos_token_store_must_be_one_its_user_works_at_in_the_service_and_the_admin(client):
    device = make_user("perm_pos", role="pos", stores=["GZ-TH"])
    with pytest.raises(ValidationError):
        api_token_issue(user=device, name="x", store=Store.objects.get(code="FS-ZM"))
    # A person's token bound to their own store got 403 everywhere (not a POS device, yet POS-bound).
    staff = make_user("perm_staff_bound", role="staff", stores=["GZ-TH"])
    with pytest.raises(ValidationError, match="只有 POS 设备账号"):
        api_token_issue(user=staff, name="x", store=Store.objects.get(code="GZ-TH"))
    root = make_user("perm_root", role=None, stores=[], is_staff=True, is_superuser=True)
    client.force_login(root)
    r = client.post("/admin/ops/apitoken/add/", {"user": device.pk, "store": Store.objects.get(code="FS-ZM").pk, "name": "x"})
    assert r.status_code == 200 and "没有被分配到佛山祖庙店" in r.content.decode()
    assert not ApiToken.objects.filter(user=device).exists()
    r = client.post("/admin/ops/apitoken/add/", {"user": device.pk, "store": Store.objects.get(code="GZ-TH").pk, "name": "吧台"})
    token = ApiToken.objects.get(user=device)
    assert r.status_code == 302 and AuditLog.objects.filter(action="token_issued", target_id=token.pk, actor=root).exists()
    r = client.post(f"/admin/ops/apitoken/{token.pk}/change/", {"revoked": "on"})
    token.refresh_from_db()
    assert token.revoked and AuditLog.objects.filter(action="token_revoked", target_id=token.pk, actor=root).exists()


def test_a_pos_token_on_a_non_pos_endpoint_is_refused_and_audited():
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {pos_token('GZ-TH', username='perm_pos2')}")
    for method, url in (("get", "/api/v1/stores"), ("get", "/api/v1/proposals"), ("post", "/api/v1/chat")):
        assert getattr(c, method)(url).status_code == 403, url
    assert AuditLog.objects.filter(action="permission_denied", actor_username="perm_pos2").count() == 3


def test_member_balance_needs_the_exact_number_or_the_whole_phone_and_every_lookup_is_audited():
    staff = make_user("perm_staff_fs", role="staff", stores=["FS-ZM"])
    member = Member.objects.exclude(home_store__code="FS-ZM").order_by("number").first()  # chain-wide stored value
    result = run_tool("member_balance", {"member": member.phone}, user=staff)
    row = result.rows[0]
    assert row["member"] == member.number and member.phone not in str(result.as_dict()) and member.name not in result.summary
    for partial in (member.phone[:7], member.phone[-4:], member.number[:-1]):
        with pytest.raises(ValidationError):
            run_tool("member_balance", {"member": partial}, user=staff)
    lookups = AuditLog.objects.filter(action="member_lookup", actor=staff)
    # Misses within a minute count up on one row (core.audit.audit_collapsed): still every lookup.
    assert sum(r.repeat.times if hasattr(r, "repeat") else 1 for r in lookups) == 4
    assert lookups.filter(after__found=True).get().target_id == member.pk
    # The audit list showed 「查询会员余额 M00010 林明」: the surname only, as in chat and the admin.
    found = lookups.get(after__found=True)
    assert found.target_repr == f"{member.number} {member.name[0]}{'*' * (len(member.name) - 1)}" and member.name not in found.target_repr
    with pytest.raises(PermissionDenied):
        run_tool("member_balance", {"member": member.number}, user=make_user("perm_pos3", role="pos", stores=["GZ-TH"]))
    # Filed under the asker's store, so its manager sees them (store-less rows reached head office only).
    assert set(lookups.values_list("store__code", flat=True)) == {"FS-ZM"}
    from rest_framework.test import APIClient

    from ops.services import api_token_issue

    manager = make_user("perm_manager_fs", role="manager", stores=["FS-ZM"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_token_issue(user=manager, name='t')[1]}")
    rows = client.get("/api/v1/audit", {"action": "member_lookup"}).json()
    assert sum(r["times"] for r in rows if r["actor"] == "perm_staff_fs") == 4, rows[:2]


def test_head_office_lists_members_masked_unless_it_holds_view_member_pii(client):
    from django.contrib.auth.models import Permission

    hq = make_user("perm_hq", role="hq", stores=[], is_staff=True)
    client.force_login(hq)
    member = Member.objects.order_by("number").first()
    page = client.get("/admin/ops/member/", {"q": member.number}).content.decode()
    assert member.number in page and member.phone not in page and member.phone[-4:] in page
    hq.user_permissions.add(Permission.objects.get(codename="view_member_pii", content_type__app_label="ops"))
    page = client.get("/admin/ops/member/", {"q": member.number}).content.decode()
    assert member.phone in page


def test_admin_edits_of_stores_and_products_are_audited(client):
    root = make_user("perm_root2", role=None, stores=[], is_staff=True, is_superuser=True)
    client.force_login(root)
    product = Product.objects.get(sku="B001")
    data = {"sku": product.sku, "name": product.name, "category": product.category, "unit": product.unit,
            "price": "99.00", "case_size": product.case_size, "aliases": '["青岛"]', "active": "on"}
    assert client.post(f"/admin/ops/product/{product.pk}/change/", data).status_code == 302
    row = AuditLog.objects.filter(action="object_changed", target_id=product.pk, actor=root).latest("id")
    assert row.before["price"] == str(product.price) and row.after["price"] == "99.00"
