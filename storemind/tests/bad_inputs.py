"""The bad-input corpus: every case is a request that must be refused with a 4xx naming the
field, write nothing, and never be a 500 or an HTML page.

Each case: (id, client, method, url, body, expected status, field named in the error body).
`client` is one of pos (a POS token bound to 广州天河店), staff, manager. A body of RAW(...) is
sent as raw bytes (JSON with escapes Python's encoder would not produce, or not JSON at all).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass


@dataclass(frozen=True)
class RAW:
    data: bytes
    content_type: str = "application/json"


NUL = "bad\x00value"
SURROGATE_JSON = b'"bad\\ud800value"'  # a lone surrogate, legal JSON text

LINE = {"sku": "B001", "qty": 2, "unit_price": "15.00", "amount": "30.00"}
ORDER = {
    "store": "GZ-TH", "external_id": "BAD-1", "created_at": "2026-11-20T21:15:00+08:00", "channel": "堂食",
    "total": "30.00", "lines": [LINE],
}
ADJ = {"sku": "B001", "delta": 5, "reason": "receive", "external_id": "BAD-ADJ-1"}
RESTOCK = {"kind": "restock", "store": "GZ-TH", "payload": {"lines": [{"sku": "B001", "quantity": 5, "unit": "瓶", "reason": "补货"}]}}
TICKET = {"kind": "ticket", "store": "GZ-TH", "payload": {"category": "酒水品质", "severity": "一般", "description": "客人说酒有异味"}}
CHAT = {"query": "会员卡能跨店用吗"}


def with_(base: dict, path: str, value, *, delete: bool = False) -> dict:
    """A deep copy of `base` with `path` (dots, [n] indexes) set to value (or removed)."""
    doc = copy.deepcopy(base)
    parts = path.replace("]", "").replace("[", ".").split(".")
    node = doc
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    last = parts[-1]
    if delete:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return doc


def raw_with(base: dict, path: str, raw_json: bytes) -> RAW:
    """Like with_(), but the value is spliced in as raw JSON text (for \\ud800)."""
    import json

    marker = "__RAW_MARKER__"
    text = json.dumps(with_(base, path, marker), ensure_ascii=False).encode()
    return RAW(text.replace(json.dumps(marker).encode(), raw_json))


def line(**over) -> dict:
    return {**LINE, **over}


def order_with_line(**over) -> dict:
    ln = line(**over)
    return {**ORDER, "lines": [ln]}


CASES: list[tuple] = []


def case(cid, client, method, url, body, status, field):
    CASES.append((cid, client, method, url, body, status, field))


# --- orders: text fields ------------------------------------------------------------------
ORD = "/api/v1/orders"
for f in ("external_id", "store", "channel", "status", "member", "created_at", "total"):
    case(f"order-nul-{f}", "pos", "post", ORD, with_(ORDER, f, NUL), 400, f)
    case(f"order-surrogate-{f}", "pos", "post", ORD, raw_with(ORDER, f, SURROGATE_JSON), 400, f)
for f in ("sku", "unit_price", "amount"):
    case(f"order-line-nul-{f}", "pos", "post", ORD, with_(ORDER, f"lines[0].{f}", NUL), 400, f"lines[0].{f}")
    case(f"order-line-surrogate-{f}", "pos", "post", ORD, raw_with(ORDER, f"lines[0].{f}", SURROGATE_JSON), 400, f"lines[0].{f}")
case("order-batch-nul-sku", "pos", "post", ORD, {"orders": [with_(ORDER, "lines[0].sku", NUL)]}, 400, "orders[0].lines[0].sku")
case("order-batch-nul-member", "pos", "post", ORD, {"orders": [ORDER, with_(ORDER, "member", NUL)]}, 400, "orders[1].member")
# the batch wrapper is {"orders": [...]} and nothing else (an extra key and a bare array were 201s)
case("order-batch-unknown-key", "pos", "post", ORD, {"orders": [ORDER], "x": 1}, 400, "non_field_errors")
case("order-bare-array", "pos", "post", ORD, [ORDER], 400, "non_field_errors")
case("order-nul-in-key", "pos", "post", ORD, {**ORDER, "ext\x00ra": 1}, 400, "non_field_errors")
# --- orders: numbers -----------------------------------------------------------------------
for cid, price in (("1e20", "1E+20"), ("1e20-number", 1e20), ("over-1e8", "100000000.01"), ("3-decimals", "15.004"),
                   ("nan", "NaN"), ("inf", "Infinity"), ("neg-inf", "-Infinity"), ("text", "abc"), ("bool", True),
                   ("list", [1]), ("obj", {"v": 1}), ("null", None), ("empty", ""), ("huge-exp", "1E+999999")):
    amount = price if cid in ("3-decimals",) else "30.00"
    case(f"order-unit_price-{cid}", "pos", "post", ORD, order_with_line(unit_price=price, amount=amount), 400, "lines[0].unit_price")
case("order-amount-3-decimals", "pos", "post", ORD, order_with_line(qty=1, unit_price="15.00", amount="15.004"), 400, "lines[0].amount")
# one 青岛啤酒 (list price 15) at ¥99,999,999.99 was a 201 and made the store's month ¥100 million
case("order-unit-price-far-over-list", "pos", "post", ORD, order_with_line(qty=1, unit_price="99999999.99", amount="99999999.99"), 400,
     "lines[0].unit_price")
case("order-total-3-decimals", "pos", "post", ORD, with_(ORDER, "total", "30.001"), 400, "total")
case("order-total-1e20", "pos", "post", ORD, with_(ORDER, "total", "1E+20"), 400, "total")
case("order-total-negative-huge", "pos", "post", ORD, with_(ORDER, "total", "-1E+20"), 400, "total")
for cid, qty in (("2^31", 2**31), ("2^63", 2**63), ("over-1e5", 100_001), ("zero", 0), ("negative", -1), ("float", 1.5),
                 ("string", "2"), ("bool", True), ("null", None), ("huge", 10**40)):
    case(f"order-qty-{cid}", "pos", "post", ORD, order_with_line(qty=qty), 400, "lines[0].qty")
# --- orders: dates -------------------------------------------------------------------------
for cid, value in (("feb-30", "2026-02-30T10:00:00+08:00"), ("month-13", "2026-13-01T10:00:00+08:00"),
                   ("hour-25", "2026-11-20T25:00:00+08:00"), ("offset-25h", "2026-11-20T21:15:00+25:00"),
                   ("offset-minus-25h", "2026-11-20T21:15:00-25:00"), ("offset-15h", "2026-11-20T21:15:00+15:00"),
                   ("offset-99-minutes", "2026-11-20T21:15:00+08:99"), ("year-1-plus-14", "0001-01-01T00:00:00+14:00"),
                   ("year-9999-minus-14", "9999-12-31T23:59:59-14:00"), ("year-1", "0001-01-01T00:00:00Z"),
                   ("year-1999", "1999-12-31T23:00:00+08:00"), ("future", "2099-01-01T00:00:00+08:00"),
                   ("not-a-date", "yesterday"), ("number", 1732108500), ("empty", ""), ("date-only", "2026-11-20"),
                   ("feb-29-non-leap", "2026-02-29T10:00:00+08:00"), ("very-long", "2026-11-20T21:15:00" + "0" * 100)):
    case(f"order-created_at-{cid}", "pos", "post", ORD, with_(ORDER, "created_at", value), 400, "created_at")
# --- orders: shape and unknown fields ------------------------------------------------------
case("order-unknown-field", "pos", "post", ORD, {**ORDER, "discount": "5.00"}, 400, "non_field_errors")
case("order-line-unknown-field", "pos", "post", ORD, order_with_line(discount="1.00"), 400, "lines[0].non_field_errors")
case("order-batch-unknown-field", "pos", "post", ORD, {"orders": [{**ORDER, "note": "x"}]}, 400, "orders[0].non_field_errors")
case("order-lines-not-list", "pos", "post", ORD, with_(ORDER, "lines", {"sku": "B001"}), 400, "lines")
case("order-lines-empty", "pos", "post", ORD, with_(ORDER, "lines", []), 400, "lines")
case("order-line-not-object", "pos", "post", ORD, with_(ORDER, "lines", ["B001"]), 400, "lines[0]")
case("order-external-id-65", "pos", "post", ORD, with_(ORDER, "external_id", "X" * 65), 400, "external_id")
case("order-external-id-number", "pos", "post", ORD, with_(ORDER, "external_id", 12345), 400, "external_id")
case("order-channel-unknown", "pos", "post", ORD, with_(ORDER, "channel", "外星"), 400, "channel")
case("order-body-string", "pos", "post", ORD, "hello", 400, "non_field_errors")
case("order-body-number", "pos", "post", ORD, 42, 400, "non_field_errors")
case("order-batch-empty", "pos", "post", ORD, {"orders": []}, 400, "orders")
case("order-not-json", "pos", "post", ORD, RAW(b"{not json"), 400, "detail")
# The same key twice: the last one silently won (which did the POS mean?).
case("order-duplicate-key", "pos", "post", ORD, RAW(b'{"external_id": "DUP-A", "external_id": "DUP-B", "store": "GZ-TH"}'), 400, "detail")
# A compressing "charset" would inflate a small body past the size limit (48 KB → 50 MB).
case("order-zlib-charset", "pos", "post", ORD, RAW(b"x\x9c" + b"\x00" * 8, "application/json; charset=zlib_codec"), 400, "detail")
case("order-duplicate-surrogate-key", "pos", "post", ORD, RAW(b'{"\\ud800": 1, "\\ud800": 2}'), 400, "detail")
case("line-duplicate-key", "pos", "post", ORD,
     raw_with(ORDER, "lines[0]", b'{"sku": "B001", "qty": 2, "qty": 20, "unit_price": "15.00"}'), 400, "detail")
case("order-form-encoded", "pos", "post", ORD, RAW(b"store=GZ-TH", "application/x-www-form-urlencoded"), 415, "detail")
case("order-nul-json-escape", "pos", "post", ORD, raw_with(ORDER, "external_id", b'"A\\u0000B"'), 400, "external_id")
# --- inventory adjustments -----------------------------------------------------------------
A = "/api/v1/inventory/adjustments"
for f in ("sku", "reason", "external_id", "note", "store"):
    case(f"adj-nul-{f}", "pos", "post", A, with_(ADJ, f, NUL), 400, f)
    case(f"adj-surrogate-{f}", "pos", "post", A, raw_with(ADJ, f, SURROGATE_JSON), 400, f)
for cid, delta in (("2^31", 2**31), ("over-1e5", 100_001), ("zero", 0), ("float", 2.5), ("string", "5"), ("bool", True),
                   ("null", None), ("neg-2^31", -(2**31))):
    case(f"adj-delta-{cid}", "pos", "post", A, with_(ADJ, "delta", delta), 400, "delta")
case("adj-unknown-field", "pos", "post", A, {**ADJ, "on_hand": 999}, 400, "non_field_errors")
case("adj-reason-unknown", "pos", "post", A, with_(ADJ, "reason", "theft"), 400, "reason")
case("adj-reason-list", "pos", "post", A, with_(ADJ, "reason", ["receive"]), 400, "reason")
case("adj-sku-list", "pos", "post", A, with_(ADJ, "sku", ["B001"]), 400, "sku")
case("adj-store-object", "pos", "post", A, {**ADJ, "store": {"code": "GZ-TH"}}, 400, "store")
case("adj-note-too-long", "pos", "post", A, with_(ADJ, "note", "x" * 201), 400, "note")
case("adj-body-list", "pos", "post", A, [ADJ], 400, "non_field_errors")
case("adj-negative-stock", "pos", "post", A, with_(ADJ, "delta", -100_000), 409, "delta")
# --- proposals ---------------------------------------------------------------------------
P = "/api/v1/proposals"
case("proposal-nul-store", "staff", "post", P, with_(TICKET, "store", NUL), 400, "store")
case("proposal-nul-kind", "staff", "post", P, with_(TICKET, "kind", NUL), 400, "kind")
for f in ("category", "severity", "description", "order", "member"):
    case(f"proposal-ticket-nul-{f}", "staff", "post", P, with_(TICKET, f"payload.{f}", NUL), 400, f"payload.{f}")
case("proposal-ticket-surrogate-description", "staff", "post", P, raw_with(TICKET, "payload.description", SURROGATE_JSON), 400,
     "payload.description")
for f in ("sku", "unit", "reason"):
    case(f"proposal-restock-nul-{f}", "staff", "post", P, with_(RESTOCK, f"payload.lines[0].{f}", NUL), 400, f"payload.lines[0].{f}")
case("proposal-unknown-body-field", "staff", "post", P, {**TICKET, "status": "confirmed"}, 400, "non_field_errors")
# a reason was cut to 200 characters without a word (100,000 characters: 201)
case("proposal-restock-reason-too-long", "staff", "post", P, with_(RESTOCK, "payload.lines[0].reason", "多" * 201), 400,
     "payload.lines[0].reason")
case("proposal-restock-reason-not-text", "staff", "post", P, with_(RESTOCK, "payload.lines[0].reason", 42), 400,
     "payload.lines[0].reason")
case("proposal-unknown-payload-field", "staff", "post", P, with_(TICKET, "payload.status", "confirmed"), 400, "payload")
case("proposal-unknown-restock-field", "staff", "post", P, with_(RESTOCK, "payload.approved", True), 400, "payload")
case("proposal-unknown-line-field", "staff", "post", P, with_(RESTOCK, "payload.lines[0].price", "1.00"), 400, "payload.lines[0]")
case("proposal-restock-qty-2^31", "staff", "post", P, with_(RESTOCK, "payload.lines[0].quantity", 2**31), 400, "payload.lines[0].quantity")
case("proposal-restock-qty-float", "staff", "post", P, with_(RESTOCK, "payload.lines[0].quantity", 1.5), 400, "payload.lines[0].quantity")
case("proposal-store-number", "staff", "post", P, with_(TICKET, "store", 7), 400, "store")
case("proposal-store-list", "staff", "post", P, with_(TICKET, "store", ["GZ-TH"]), 400, "store")
case("proposal-kind-unknown", "staff", "post", P, with_(TICKET, "kind", "refund"), 400, "kind")
case("proposal-payload-list", "staff", "post", P, with_(TICKET, "payload", []), 400, "payload")
case("proposal-description-short", "staff", "post", P, with_(TICKET, "payload.description", "短"), 400, "payload.description")
case("proposal-body-list", "staff", "post", P, [TICKET], 400, "non_field_errors")
case("proposal-list-bad-status", "staff", "get", P + "?status=%00", None, 400, "status")
case("proposal-list-unknown-status", "staff", "get", P + "?status=done", None, 400, "status")
case("proposal-reject-unknown-field", "manager", "post", "/api/v1/proposals/1/reject", {"reason": "不需要", "force": True}, 400,
     "non_field_errors")
case("proposal-reject-reason-number", "manager", "post", "/api/v1/proposals/1/reject", {"reason": 5}, 400, "reason")
case("proposal-reject-reason-nul", "manager", "post", "/api/v1/proposals/1/reject", {"reason": NUL}, 400, "reason")
case("proposal-confirm-unknown-field", "manager", "post", "/api/v1/proposals/1/confirm", {"as": "admin"}, 400, "non_field_errors")
# --- chat ----------------------------------------------------------------------------------
C = "/api/v1/chat"
case("chat-nul-query", "staff", "post", C, with_(CHAT, "query", "会员\x00卡"), 400, "query")
case("chat-surrogate-query", "staff", "post", C, raw_with(CHAT, "query", b'"\\ud800"'), 400, "query")
case("chat-surrogate-low-query", "staff", "post", C, raw_with(CHAT, "query", b'"abc\\udfff"'), 400, "query")
case("chat-nul-thread", "staff", "post", C, {**CHAT, "thread_id": NUL}, 400, "thread_id")
case("chat-surrogate-thread", "staff", "post", C, raw_with({**CHAT, "thread_id": "x"}, "thread_id", SURROGATE_JSON), 400, "thread_id")
case("chat-thread-too-long", "staff", "post", C, {**CHAT, "thread_id": "t" * 65}, 400, "thread_id")
case("chat-thread-number", "staff", "post", C, {**CHAT, "thread_id": 12}, 400, "thread_id")
# thread ids are part of the page's URLs: 「a/b」 made the user's chat page a 500 for good
case("chat-thread-slash", "staff", "post", C, {**CHAT, "thread_id": "../../etc"}, 400, "thread_id")
case("chat-thread-dots", "staff", "post", C, {**CHAT, "thread_id": ".."}, 400, "thread_id")
case("chat-unknown-field", "staff", "post", C, {**CHAT, "model": "gpt"}, 400, "non_field_errors")
case("chat-async-string", "staff", "post", C, {**CHAT, "async": "yes"}, 400, "async")
case("chat-query-list", "staff", "post", C, {"query": ["会员"]}, 400, "query")
case("chat-query-empty", "staff", "post", C, {"query": "  "}, 400, "query")
case("chat-query-too-long", "staff", "post", C, {"query": "酒" * 2001}, 400, "query")
case("chat-body-list", "staff", "post", C, [CHAT], 400, "non_field_errors")
case("chat-body-string", "staff", "post", C, "会员卡", 400, "non_field_errors")
case("chat-query-missing", "staff", "post", C, {}, 400, "query")
# Python's JSON parser recurses: ~1,000 levels of nesting was a 500 before the depth limit.
case("chat-nested-deep", "staff", "post", C, RAW(b'{"query": ' + b"[" * 5000 + b"]" * 5000 + b"}"), 400, "detail")
case("chat-nested-40", "staff", "post", C, RAW(b'{"query": ' + b"[" * 40 + b"]" * 40 + b"}"), 400, "detail")
case("chat-not-json", "staff", "post", C, RAW(b'{"query": '), 400, "detail")
case("proposal-nested-deep", "manager", "post", "/api/v1/proposals", RAW(b'{"kind": ' + b"[" * 5000 + b"]" * 5000 + b"}"), 400, "detail")
case("chat-task-nul", "staff", "get", "/api/v1/chat/tasks/%00", None, 404, "detail")
case("chat-task-not-uuid", "staff", "get", "/api/v1/chat/tasks/..%2F..", None, 404, "detail")
# --- query parameters ----------------------------------------------------------------------
case("search-k-superscript", "staff", "get", "/api/v1/knowledge/search?q=会员&k=²", None, 400, "k")
case("search-k-arabic-indic", "staff", "get", "/api/v1/knowledge/search?q=会员&k=٣", None, 400, "k")
case("search-k-huge", "staff", "get", "/api/v1/knowledge/search?q=会员&k=99999999999999999999", None, 400, "k")
case("search-k-negative", "staff", "get", "/api/v1/knowledge/search?q=会员&k=-1", None, 400, "k")
case("search-q-nul", "staff", "get", "/api/v1/knowledge/search?q=%00", None, 400, "q")
case("sales-two-stores-in-one-param", "staff", "get", "/api/v1/sales/summary?store=天河店,福田店&period=上周", None, 400, "store")  # was 天河店 alone
case("search-q-zero-width-only", "staff", "get", "/api/v1/knowledge/search?q=%E2%80%8B%E2%80%8B", None, 400, "q")  # searched as if it said something
case("chat-zero-width-only", "staff", "post", "/api/v1/chat", {"query": "\u200b\u200b\ufeff"}, 400, "query")
case("search-q-missing", "staff", "get", "/api/v1/knowledge/search", None, 400, "q")
case("audit-action-nul", "manager", "get", "/api/v1/audit?action=%00", None, 400, "action")
case("audit-store-nul", "manager", "get", "/api/v1/audit?store=a%00b", None, 400, "store")
case("audit-action-unknown", "manager", "get", "/api/v1/audit?action=bogus", None, 400, "action")  # was 200 []
case("search-limit-unknown", "staff", "get", "/api/v1/knowledge/search?q=会员&limit=3", None, 400, "limit")  # was ignored
case("proposals-status-twice", "manager", "get", "/api/v1/proposals?status=pending&status=confirmed", None, 400, "status")  # the last won
case("audit-store-twice", "manager", "get", "/api/v1/audit?store=GZ-TH&store=SZ-FT", None, 400, "store")
case("audit-actor-nul", "manager", "get", "/api/v1/audit?actor=%00", None, 400, "actor")
case("sales-period-nul", "staff", "get", "/api/v1/sales/summary?period=%00", None, 400, "period")
case("sales-store-nul", "staff", "get", "/api/v1/sales/summary?period=上周&store=%00", None, 400, "store")
case("sales-period-missing", "staff", "get", "/api/v1/sales/summary", None, 400, "period")
case("stores-param-nul", "staff", "get", "/api/v1/stores?x=%00", None, 400, "x")
# --- unknown API paths and methods: JSON, not HTML -----------------------------------------
case("api-unknown-path", "staff", "get", "/api/v1/nope", None, 404, "detail")
case("api-method-not-allowed", "staff", "delete", "/api/v1/stores", None, 405, "detail")
case("api-proposal-not-found", "manager", "post", "/api/v1/proposals/999999999/confirm", None, 404, "detail")
case("api-proposal-id-overflow", "manager", "post", "/api/v1/proposals/99999999999999999999/confirm", None, 404, "detail")
