"""Floods: per-user throttles on chat, feedback, confirm/reject and proposal creation;
password guessing on the admin login is locked out."""
from __future__ import annotations

import pytest
from django.test import Client, override_settings
from rest_framework.test import APIClient

from ops.tests.factories import make_user

pytestmark = pytest.mark.django_db


def _api(user) -> APIClient:
    c = APIClient()
    c.force_authenticate(user)
    return c


@override_settings(SM_LOGIN_MAX_FAILURES=3)
def test_login_is_locked_after_repeated_wrong_passwords():
    """The admin's login redirects to the product login page; both are guarded."""
    user = make_user("guess_target", role="manager", is_staff=True)
    client = Client(REMOTE_ADDR="10.9.8.7")
    for _ in range(3):
        r = client.post("/accounts/login/", {"username": user.username, "password": "wrong-guess"})
        assert r.status_code == 200  # the form again, with an error
    locked = client.post("/accounts/login/", {"username": user.username, "password": "pw-123456"})
    assert locked.status_code == 429 and int(locked["Retry-After"]) > 0
    assert "_auth_user_id" not in client.session  # even the right password is refused while locked
    other = make_user("not_guessed", role="staff", is_staff=True)
    assert client.post("/accounts/login/", {"username": other.username, "password": "pw-123456"}).status_code == 302


@pytest.fixture
def rates(monkeypatch):
    """Lower rates for one test (the throttle class reads its rates once, at import)."""
    from core.throttling import FailOpenScopedRateThrottle

    def set_rates(**scopes):
        monkeypatch.setattr(FailOpenScopedRateThrottle, "THROTTLE_RATES", {**FailOpenScopedRateThrottle.THROTTLE_RATES, **scopes})

    return set_rates


def test_a_flood_of_denied_confirms_is_throttled_per_user(rates):
    from core.models import AuditLog
    from workflow.models import Proposal
    from workflow.services import proposal_create

    rates(decide="5/min")
    staff = make_user("flood_staff", role="staff")
    proposal, _ = proposal_create(user=staff, kind=Proposal.Kind.RESTOCK, store="GZ-TH", source=Proposal.Source.API,
                                  payload={"lines": [{"sku": "B001", "quantity": 5, "unit": "瓶", "reason": "补货"}]})
    codes = [_api(staff).post(f"/api/v1/proposals/{proposal.pk}/confirm").status_code for _ in range(12)]
    assert codes[:5] == [403] * 5 and set(codes[5:]) == {429}
    assert AuditLog.objects.filter(actor=staff, action=AuditLog.Action.PERMISSION_DENIED).count() <= 5
    other = make_user("flood_other", role="manager")
    assert _api(other).post(f"/api/v1/proposals/{proposal.pk}/reject", {"reason": "不需要"}, format="json").status_code == 200


def test_chat_is_throttled_per_user(rates):
    rates(chat="2/min")
    user = make_user("chatty", role="staff")
    codes = [_api(user).post("/api/v1/chat", {"query": "会员卡能跨店用吗"}, format="json").status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    page = Client()
    page.force_login(user)
    r = page.post("/", {"query": "会员卡能跨店用吗"})
    assert r.status_code == 429 and r["Retry-After"]
