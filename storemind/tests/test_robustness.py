"""What was seen under bad input and races: JSON errors even in debug mode, no orphan
conversation, and concurrent identical requests on real connections never a 500."""
from __future__ import annotations

import threading
import uuid

import pytest
from django.test import Client, override_settings
from rest_framework.test import APIClient

from ops.services import api_token_issue
from ops.tests.factories import make_user, pos_token
from storemind.tests.committed import committed_writes


def _bearer(key: str) -> APIClient:
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return c


@pytest.mark.django_db
@override_settings(DEBUG=True)
def test_api_errors_are_json_never_the_debug_page(monkeypatch):
    from ops.api import views

    user = make_user("debug_json", role="staff")
    key = api_token_issue(user=user, name="t")[1]
    client = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Bearer {key}")
    r = client.get("/api/v1/no-such-endpoint")
    assert r.status_code == 404 and r["Content-Type"] == "application/json" and "detail" in r.json()

    def boom(self, request):
        raise RuntimeError("a bug")

    monkeypatch.setattr(views.StoresView, "get", boom)
    r = client.get("/api/v1/stores")
    assert r.status_code == 500 and r["Content-Type"] == "application/json"
    assert r.json() == {"detail": "服务器内部错误，请稍后重试。"}
    assert b"Traceback" not in r.content


@pytest.mark.django_db
def test_a_rejected_or_failed_chat_leaves_no_conversation(monkeypatch):
    from django.core.exceptions import ValidationError

    from agent import services
    from agent.models import Conversation

    user = make_user("orphan_check", role="staff")
    with pytest.raises(ValidationError):
        services.chat_ask(user=user, query="会员\x00卡", thread_id="new-thread-1")

    def fail(*args, **kwargs):
        raise RuntimeError("pipeline crashed")

    monkeypatch.setattr(services, "answer_question", fail)
    with pytest.raises(RuntimeError):
        services.chat_ask(user=user, query="会员卡能跨店用吗", thread_id="new-thread-2")
    with pytest.raises(RuntimeError):
        services.chat_ask(user=user, query="会员卡能跨店用吗")
    assert not Conversation.objects.filter(user=user).exists()


def _concurrently(n: int, fn) -> list:
    """Run fn(i) in n threads released together; each thread has its own DB connection."""
    from django.db import connection

    barrier = threading.Barrier(n)
    results: list = [None] * n

    def run(i):
        try:
            barrier.wait(timeout=30)
            results[i] = fn(i)
        except Exception as exc:  # reported by the assertion below, not swallowed
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return results


@pytest.fixture
def committed_db(django_db_setup, django_db_blocker):
    """Real, committed transactions; what these tests write carries 'RACE-' and is undone."""
    with committed_writes(django_db_blocker, prefix="RACE-", usernames=r"^(pos_)?race_"):
        yield


def test_a_rate_limit_lets_exactly_its_limit_through_when_requests_arrive_together(committed_db, settings):
    """The cache throttle read, appended and wrote back: 35–37 of 50 simultaneous requests
    passed a 30/min limit. The database counter is one atomic statement."""
    from workflow.models import Proposal
    from workflow.services import proposal_create

    # A day-long window: the burst cannot straddle two windows (a minute boundary could).
    settings.SM_RATES = {**settings.SM_RATES, "decide": "30/day"}
    staff = make_user(f"race_rate_{uuid.uuid4().hex[:8]}", role="staff")
    proposal, _ = proposal_create(user=staff, kind=Proposal.Kind.RESTOCK, store="GZ-TH", source=Proposal.Source.API,
                                  payload={"lines": [{"sku": "B001", "quantity": 5, "unit": "瓶", "reason": "补货"}]})
    key = api_token_issue(user=staff, name="t")[1]
    try:
        results = _concurrently(50, lambda i: _bearer(key).post(f"/api/v1/proposals/{proposal.pk}/confirm"))
        codes = [r.status_code if hasattr(r, "status_code") else repr(r) for r in results]
        assert codes.count(429) == 20 and codes.count(403) == 30, codes  # staff may not confirm: 403, unless throttled
    finally:
        proposal.delete()


def test_concurrent_identical_adjustments_are_one_write_and_replays(committed_db):
    from ops.models import Inventory, InventoryAdjustment

    key = pos_token("GZ-TH", username=f"race_pos_{uuid.uuid4().hex[:8]}")
    ext = f"RACE-{uuid.uuid4().hex[:12]}"
    body = {"sku": "B001", "delta": 3, "reason": "receive", "external_id": ext}
    before = Inventory.objects.get(store__code="GZ-TH", product__sku="B001").on_hand
    results = _concurrently(20, lambda i: _bearer(key).post("/api/v1/inventory/adjustments", body, format="json"))
    codes = sorted(r.status_code if hasattr(r, "status_code") else repr(r) for r in results)
    assert codes == [200] * 19 + [201], codes
    assert InventoryAdjustment.objects.filter(external_id=ext).count() == 1
    assert Inventory.objects.get(store__code="GZ-TH", product__sku="B001").on_hand == before + 3
    assert len({r.json()["id"] for r in results}) == 1


def test_concurrent_first_questions_in_one_new_thread_share_it(committed_db):
    from agent.models import Conversation

    user = make_user(f"race_chat_{uuid.uuid4().hex[:8]}", role="staff")
    key = api_token_issue(user=user, name="t")[1]
    thread = f"race-{uuid.uuid4().hex[:12]}"
    results = _concurrently(10, lambda i: _bearer(key).post("/api/v1/chat", {"query": "会员卡能跨店用吗", "thread_id": thread},
                                                              format="json"))
    codes = [r.status_code if hasattr(r, "status_code") else repr(r) for r in results]
    assert codes == [200] * 10, codes
    conv = Conversation.objects.get(thread_id=thread)
    assert conv.user == user and conv.messages.count() == 20
