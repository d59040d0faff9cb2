"""Chat API: auth, validation, response shape, async through Celery."""
import pytest
from rest_framework.test import APIClient

from ops.services import api_token_issue
from ops.tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def client():
    user = make_user("chat_api", role="staff")
    _, key = api_token_issue(user=user, name="tablet")
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return c


def test_chat_requires_auth():
    assert APIClient().post("/api/v1/chat", {"query": "会员卡能跨店用吗"}, format="json").status_code == 401


@pytest.mark.parametrize("body,field", [({"query": ""}, "query"), ({"query": "   "}, "query"), ({"query": "酒" * 2001}, "query"),
                                        ({}, "query"), ({"query": 5}, "query"), ({"query": "会员", "async": "yes"}, "async"),
                                        ({"query": "会员", "thread_id": 12}, "thread_id")])
def test_chat_validation(client, body, field):
    r = client.post("/api/v1/chat", body, format="json")
    assert r.status_code == 400 and field in r.json()


def test_chat_response_shape_and_thread(client):
    r = client.post("/api/v1/chat", {"query": "会员卡能跨店用吗"}, format="json")
    assert r.status_code == 200
    body = r.json()
    assert set(body) >= {"answer", "intent", "route_reason", "refused", "citations", "data", "proposal", "trace", "thread_id"}
    assert body["citations"][0]["ref"] == "1" and {"document", "section_path", "score", "text"} <= set(body["citations"][0])
    assert all({"step", "ms", "detail"} <= set(s) for s in body["trace"])
    r2 = client.post("/api/v1/chat", {"query": "那退卡呢", "thread_id": body["thread_id"]}, format="json").json()
    assert r2["thread_id"] == body["thread_id"]
    data = client.post("/api/v1/chat", {"query": "上周天河店卖了多少"}, format="json").json()
    assert data["data"][0]["ref"] == "D1" and data["data"][0]["tool"] == "store_sales"


def test_chat_async_returns_a_task_and_the_status_endpoint_the_result(client):
    r = client.post("/api/v1/chat", {"query": "会员卡能跨店用吗", "async": True}, format="json")
    assert r.status_code == 202
    status = client.get(r.json()["status_url"]).json()
    assert status["status"] == "done" and status["result"]["intent"] == "policy"
    other = make_user("someone_else", role="staff")
    c2 = APIClient()
    c2.force_authenticate(other)
    assert c2.get(r.json()["status_url"]).status_code == 404
    # Any well-formed id answered 「pending」 for ever: a client polled a typo until it gave up.
    assert client.get("/api/v1/chat/tasks/00000000-0000-0000-0000-000000000000").status_code == 404
