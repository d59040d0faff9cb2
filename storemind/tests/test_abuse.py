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
def rates(settings):
    """Lower rates for one test (the one rate table, read on every request)."""

    def set_rates(**scopes):
        settings.SM_RATES = {**settings.SM_RATES, **scopes}

    return set_rates


def _login(client, username, password, forwarded_for=None):
    extra = {"HTTP_X_FORWARDED_FOR": forwarded_for} if forwarded_for else {}
    return client.post("/accounts/login/", {"username": username, "password": password}, **extra)


@override_settings(SM_LOGIN_MAX_FAILURES=5, SM_TRUSTED_PROXIES="10.0.0.0/8")
def test_one_guesser_behind_the_proxy_locks_out_only_their_own_address():
    """Behind Caddy every request comes from the proxy. 25 wrong passwords from one person used
    to lock every account out for 15 minutes; the real client address is the proxy's
    X-Forwarded-For, and another person logs in through the same proxy."""
    victim = make_user("proxy_victim", role="staff")
    other = make_user("proxy_other", role="staff")
    proxy = Client(REMOTE_ADDR="10.0.0.2")
    for n in range(25):  # many accounts, so no account limit is reached: the address limit is
        assert _login(proxy, f"nobody_{n % 8}", "wrong", "203.0.113.9").status_code == 200
    assert _login(proxy, victim.username, "pw-123456", "203.0.113.9").status_code == 429  # the guesser: locked
    assert _login(Client(REMOTE_ADDR="10.0.0.2"), other.username, "pw-123456", "198.51.100.7").status_code == 302
    from core.models import AuditLog

    lockouts = AuditLog.objects.filter(action="permission_denied", after__attempt="login")
    assert [r.after["reason"] for r in lockouts] == ["login locked out: 25 failures for address 203.0.113.9"]  # once, not 25 times
    # The guesser's own X-Forwarded-For, sent straight to gunicorn, is not believed.
    direct = Client(REMOTE_ADDR="198.51.100.66")
    for n in range(25):
        assert _login(direct, f"someone_{n % 8}", "wrong", f"192.0.2.{n}").status_code == 200
    assert _login(direct, victim.username, "pw-123456", "192.0.2.200").status_code == 429


@override_settings(SM_LOGIN_MAX_FAILURES=3,
                   CACHES={"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0",
                                       "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2}}})
def test_with_redis_down_the_lockout_still_holds():
    """With the cache unreachable the guard used to fail open (8 of 8 wrong passwords got 200)."""
    user = make_user("no_redis_target", role="staff")
    client = Client(REMOTE_ADDR="10.9.8.8")
    codes = [_login(client, user.username, "wrong").status_code for _ in range(5)]
    assert codes == [200, 200, 200, 429, 429]


def test_wrong_api_tokens_are_throttled_per_address_and_audited_once(rates):
    from core.models import AuditLog

    rates(bad_token="5/min")
    before = AuditLog.objects.filter(action="permission_denied", after__attempt="API token").count()
    client = APIClient(REMOTE_ADDR="203.0.113.77")
    codes = [client.get("/api/v1/stores", HTTP_AUTHORIZATION=f"Bearer wrong-{n}").status_code for n in range(12)]
    assert codes == [401] * 5 + [429] * 7
    rows = AuditLog.objects.filter(action="permission_denied", after__attempt="API token")
    assert rows.count() == before + 1 and "203.0.113.77" in rows.first().after["reason"]
    # Another address is not affected.
    assert APIClient(REMOTE_ADDR="203.0.113.78").get("/api/v1/stores", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401


def _mcp_text(user, name, args) -> str:
    from mcpserver.server import MCPError, dispatch

    try:
        return dispatch(user, name, args).content[0].text
    except MCPError as exc:  # invalid parameters: a JSON-RPC error, its message says why
        return str(exc)


def test_staff_cannot_walk_the_member_list_but_head_office_may(rates):
    """One staff token looked up all 240 members in 10.6 s over MCP; a bartender needs one at a time."""
    from ops.models import Member

    rates(member_lookup="5/10min")
    staff = make_user("walker_staff", role="staff", stores=["GZ-TH"])
    numbers = list(Member.objects.order_by("number").values_list("number", flat=True)[:9])
    texts = [_mcp_text(staff, "query_ops", {"tool": "member_balance", "params": {"member": n}}) for n in numbers]
    assert not any("太频繁" in t for t in texts[:5]) and all("查询会员太频繁" in t for t in texts[5:]), texts
    hq = make_user("walker_hq", role="hq")
    assert not any("太频繁" in _mcp_text(hq, "query_ops", {"tool": "member_balance", "params": {"member": n}}) for n in numbers)


def test_mcp_tool_calls_count_in_the_same_rate_table(rates):
    rates(mcp="3/min")
    user = make_user("mcp_flooder", role="staff", stores=["GZ-TH"])
    texts = [_mcp_text(user, "list_stores", {}) for _ in range(5)]
    assert not any("太频繁" in t for t in texts[:3]) and all("操作太频繁" in t for t in texts[3:])


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


def test_a_pos_token_probing_many_proposal_ids_writes_one_audit_row():
    """300 different proposal ids from one POS token wrote 300 audit rows in 3 s; they are one
    attempt (the route, not the path) that counts up on one row."""
    from core.models import AuditLog
    from ops.tests.factories import pos_token

    key = pos_token("GZ-TH", username="prober_pos")
    client = APIClient()
    codes = {client.post(f"/api/v1/proposals/{n}/confirm", HTTP_AUTHORIZATION=f"Bearer {key}").status_code for n in range(1000, 1060)}
    assert codes == {403}
    rows = AuditLog.objects.filter(actor__username="prober_pos", action="permission_denied")
    assert rows.count() == 1 and rows.get().repeat.times == 60
    assert rows.get().after["attempt"] == "POST /api/v1/proposals/<int:pk>/confirm"
    assert rows.get().after["path"] == "/api/v1/proposals/1000/confirm"


def test_member_lookups_collapse_per_member_and_channel():
    """Every MCP member lookup wrote a row: the same member again within a minute counts up on
    one row; another member, or the same one over another channel, is a row of its own."""
    from core.audit import request_meta
    from core.models import AuditLog, DenialRepeat
    from ops.models import Member

    staff = make_user("lookup_counter", role="staff", stores=["GZ-TH"])
    first, second = Member.objects.order_by("number").values_list("number", flat=True)[:2]
    token = request_meta.set({"request_id": "t", "channel": "mcp"})
    try:
        texts = [_mcp_text(staff, "query_ops", {"tool": "member_balance", "params": {"member": first}}) for _ in range(4)]
        _mcp_text(staff, "query_ops", {"tool": "member_balance", "params": {"member": second}})
    finally:
        request_meta.reset(token)
    assert all("余额" in t for t in texts), texts
    answer = _api(staff).post("/api/v1/chat", {"query": f"会员{first}的余额是多少"}, format="json").json()
    assert "余额" in answer["answer"], answer
    rows = list(AuditLog.objects.filter(actor=staff, action="member_lookup").order_by("created_at"))
    assert [r.after.get("channel") for r in rows] == ["mcp", "mcp", "rest"]
    assert rows[0].target_id == rows[2].target_id != rows[1].target_id
    assert rows[0].repeat.times == 4 and not DenialRepeat.objects.filter(audit__in=rows[1:]).exists()
