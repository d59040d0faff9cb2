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
