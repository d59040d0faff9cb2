"""The bad-input corpus (bad_inputs.CASES) against the real API and database: each case is
a 4xx JSON answer naming the field, writes nothing, and leaves no empty conversation."""
from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from agent.models import Conversation, Message
from core.models import AuditLog
from ops.models import InventoryAdjustment, Order, OrderLine
from ops.services import api_token_issue
from ops.tests.factories import make_user, pos_token
from workflow.models import Proposal

from .bad_inputs import CASES, RAW

pytestmark = pytest.mark.django_db


def _client(key: str) -> APIClient:
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return c


@pytest.fixture
def clients():
    staff = make_user("bad_staff", role="staff")
    manager = make_user("bad_manager", role="manager")
    return {
        "pos": _client(pos_token("GZ-TH")),
        "staff": _client(api_token_issue(user=staff, name="t")[1]),
        "manager": _client(api_token_issue(user=manager, name="t")[1]),
    }


def _counts():
    return (Order.objects.count(), OrderLine.objects.count(), InventoryAdjustment.objects.count(), Proposal.objects.count(),
            Conversation.objects.count(), Message.objects.count(),
            AuditLog.objects.exclude(action=AuditLog.Action.PERMISSION_DENIED).count())


def send(client: APIClient, method: str, url: str, body):
    if body is None:
        return getattr(client, method)(url)
    if isinstance(body, RAW):
        return getattr(client, method)(url, data=body.data, content_type=body.content_type)
    return getattr(client, method)(url, data=json.dumps(body, ensure_ascii=False), content_type="application/json")


def field_named(body, field: str) -> bool:
    return isinstance(body, dict) and (field in body or any(k.startswith(field) for k in body))


@pytest.mark.parametrize("cid,who,method,url,body,status,field", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_a_4xx_naming_the_field_and_writes_nothing(clients, cid, who, method, url, body, status, field):
    before = _counts()
    r = send(clients[who], method, url, body)
    assert r["Content-Type"].startswith("application/json"), (cid, r.status_code, r.content[:200])
    payload = r.json()
    assert r.status_code == status, (cid, r.status_code, payload)
    assert field_named(payload, field), (cid, payload)
    assert _counts() == before, cid


def test_the_corpus_has_at_least_120_cases():
    assert len(CASES) >= 120
    assert len({c[0] for c in CASES}) == len(CASES), "case ids must be unique"


def test_a_body_over_the_upload_limit_is_a_413_that_names_it(clients, settings):
    # 2.7 MB of orders was 「请求不合法。」, a 400 like a malformed order.
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    before = _counts()
    r = clients["pos"].post("/api/v1/orders", data=b'{"orders": [' + b" " * 2000 + b"]}", content_type="application/json")
    assert r.status_code == 413 and "上限" in r.json()["detail"] and _counts() == before


def test_a_chunked_body_is_read_behind_gunicorn_and_a_411_elsewhere(clients, settings):
    # A valid order sent with Transfer-Encoding: chunked was read as an empty body (400: every
    # field missing), and a 4 MB one dropped the connection.
    import io

    from ops.tests.factories import order_payload

    def chunked(body: bytes, decoded: bool):
        extra = {"CONTENT_LENGTH": "", "HTTP_TRANSFER_ENCODING": "chunked", "wsgi.input": io.BytesIO(body)}
        if decoded:  # gunicorn hands the application the decoded body and says so
            extra["wsgi.input_terminated"] = True
        return clients["pos"].post("/api/v1/orders", data=body, content_type="application/json", **extra)

    body = json.dumps(order_payload("CHUNKED-1")).encode()
    before = _counts()
    raw = chunked(body, decoded=False)
    assert raw.status_code == 411 and "Content-Length" in raw.json()["detail"] and _counts() == before
    ok = chunked(body, decoded=True)
    assert ok.status_code == 201, ok.json()
    assert Order.objects.filter(external_id="CHUNKED-1").count() == 1
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    before = _counts()
    big = chunked(b'{"orders": [' + b" " * 2000 + b"]}", decoded=True)
    assert big.status_code == 413 and "上限" in big.json()["detail"] and _counts() == before


def test_parse_errors_and_a_missing_csrf_token_are_explained_in_chinese(clients):
    from django.test import Client

    deep = clients["staff"].post("/api/v1/chat", data=b'{"query": ' + b"[" * 5000 + b"]" * 5000 + b"}", content_type="application/json")
    assert deep.status_code == 400 and "嵌套太深" in deep.json()["detail"]
    broken = clients["staff"].post("/api/v1/chat", data=b'{"query": ', content_type="application/json")
    assert broken.status_code == 400 and broken.json()["detail"].startswith("请求体不是合法的 JSON")
    assert "第 1 行第 11 列" in broken.json()["detail"] and "Expecting" not in broken.json()["detail"]
    # Was 「…Exceeds the limit (4300 digits) …; use sys.set_int_max_str_digits() to increase the limit」.
    digits = clients["staff"].post("/api/v1/chat", data=b'{"query": ' + b"9" * 5000 + b"}", content_type="application/json")
    assert digits.status_code == 400 and "位数太多" in digits.json()["detail"] and "sys." not in digits.json()["detail"]
    # Bytes that are not UTF-8 echoed Python's 「'utf-8' codec can't decode byte 0xff…」.
    latin = clients["staff"].post("/api/v1/chat", data=b'{"query": "\xff\xfe"}', content_type="application/json")
    assert latin.status_code == 400 and "UTF-8 编码" in latin.json()["detail"] and "codec" not in latin.json()["detail"]
    # A UTF-8 BOM at the start (Windows tools write one) was a 400.
    bom = clients["staff"].post("/api/v1/chat", data="\ufeff{}".encode(), content_type="application/json")
    assert bom.status_code == 400 and bom.json()["query"] == ["缺少 query：要问的问题。"]
    missing = clients["staff"].post("/api/v1/chat", data=b"{}", content_type="application/json")
    assert missing.status_code == 400 and missing.json()["query"] == ["缺少 query：要问的问题。"]
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(make_user("bad_csrf", role="staff"))
    r = browser.post("/api/v1/chat", data='{"query": "会员卡能跨店用吗"}'.encode(), content_type="application/json")
    assert r.status_code == 403 and "CSRF 令牌" in r.json()["detail"]


def test_an_endpoint_that_takes_no_fields_says_so(clients):
    # 「不认识的字段：note（允许：）。」: an empty list of allowed fields read like a bug.
    r = clients["manager"].post("/api/v1/proposals/1/confirm", data=json.dumps({"note": "ok"}), content_type="application/json")
    assert r.status_code == 400
    message = r.json()["non_field_errors"][0]
    assert "note" in message and "（允许：）" not in message and "不接受任何字段" in message


def test_a_key_given_twice_is_named(clients):
    r = clients["pos"].post("/api/v1/orders", data=b'{"external_id": "DUP-A", "external_id": "DUP-B"}', content_type="application/json")
    assert r.status_code == 400 and "「external_id」出现了两次" in r.json()["detail"]


def test_a_charset_that_is_no_text_encoding_is_refused_in_chinese(clients):
    # The parser's own decoding let charset=zlib_codec through: 48 KB inflated to 50 MB.
    import zlib

    body = zlib.compress(b'{"orders": [' + b" " * 5_000_000 + b"]}")
    r = clients["pos"].post("/api/v1/orders", data=body, content_type="application/json; charset=zlib_codec")
    assert r.status_code == 400 and "字符集" in r.json()["detail"] and "UTF-8" in r.json()["detail"]


# --- issue #28: NUL and lone surrogates outside the JSON API, and the admin's stock edit -----


def _pending_restock(manager):
    from workflow.services import proposal_create

    proposal, _ = proposal_create(user=manager, kind=Proposal.Kind.RESTOCK, store="GZ-TH", source=Proposal.Source.API,
                                  payload={"lines": [{"sku": "B001", "quantity": 5, "unit": "瓶", "reason": "补货"}]})
    return proposal


@pytest.mark.parametrize("bad", ["不要\x00了", "不要\ud800了"])
def test_a_nul_or_lone_surrogate_in_a_form_field_is_a_400_everywhere_and_nothing_changes(bad):
    from django.test import Client

    from agent.services import chat_ask
    from mcpserver.server import MCPError, dispatch

    manager = make_user(f"nul_mgr_{len(bad)}_{ord(bad[2])}", role="manager", is_staff=True)
    page = Client()
    page.force_login(manager)
    proposal = _pending_restock(manager)
    # A form body is UTF-8 bytes: a lone surrogate cannot be sent in one (Django decodes what
    # does not decode as U+FFFD), a NUL can. JSON can carry both ("\\ud800"), MCP's included.
    if "\x00" in bad:
        # The HTMX reject form (a DataError, a 500, before).
        r = page.post(f"/proposals/{proposal.pk}/reject", {"reason": bad}, HTTP_HX_REQUEST="true")
        assert r.status_code == 400 and "reason" in r.content.decode() and 'class="error"' in r.content.decode()
        # The admin's bulk reject, with its reason.
        r = page.post("/admin/workflow/proposal/", {"action": "reject_selected", "_selected_action": [proposal.pk],
                                                    "apply": "1", "reason": bad})
        assert r.status_code == 400
        # Renaming a thread.
        _, conv, _ = chat_ask(user=manager, query="会员卡能跨店用吗")
        r = page.post(f"/threads/{conv.thread_id}/rename", {"title": bad}, HTTP_HX_REQUEST="true")
        assert r.status_code == 400
        conv.refresh_from_db()
        assert "\x00" not in conv.title
    # MCP: a JSON-RPC invalid-params error, not an unhandled DataError.
    with pytest.raises(MCPError) as err:
        dispatch(manager, "reject_proposal", {"proposal_id": proposal.pk, "reason": bad})
    assert "reason" in str(err.value)
    proposal.refresh_from_db()
    assert proposal.status == Proposal.Status.PENDING


def test_the_admin_stock_edit_below_zero_is_a_message_on_the_field_not_a_500():
    from django.test import Client

    from ops.models import Inventory

    manager = make_user("stock_edit_mgr", role="manager", is_staff=True)
    page = Client()
    page.force_login(manager)
    inv = Inventory.objects.select_related("product").get(store__code="GZ-TH", product__sku="B001")
    before = (inv.on_hand, InventoryAdjustment.objects.count())
    r = page.post(f"/admin/ops/inventory/{inv.pk}/change/", {"on_hand": -5, "safety_stock": inv.safety_stock, "_save": "1"})
    assert r.status_code == 200 and "库存数量不能小于 0" in r.content.decode()
    inv.refresh_from_db()
    assert (inv.on_hand, InventoryAdjustment.objects.count()) == before
