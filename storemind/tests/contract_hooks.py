"""Schemathesis hooks for the contract test (loaded through SCHEMATHESIS_HOOKS).

An order obeys rules that relate its fields to each other or to the clock and the catalog —
a line's amount is qty × unit_price, the order's total is the sum of its lines, a unit price
is at most MAX_PRICE_FACTOR times the product's list price (and a line at most MAX_MONEY), created_at lies in 2000–2100
with an offset within ±14:00 and not in the future, and a batch names each external_id once. JSON Schema cannot state them, so the
schema states them in words (ops.api.serializers) and this hook makes every generated order
obey them just before it is sent. Only values that already have the right type are rewritten; the
fuzzer revalidates a modified case, so a body that is still schema-invalid stays a negative
case, and the server's refusal of a broken order is tested in ops/tests, not here.
"""
from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from decimal import ROUND_DOWN, Decimal, InvalidOperation

import schemathesis

ORDER_PATHS = {"/api/v1/orders"}
CENT = Decimal("0.01")
PRICE_FACTOR = int(os.environ.get("SM_CONTRACT_PRICE_FACTOR", "10"))
MAX_MONEY = Decimal(os.environ.get("SM_CONTRACT_MAX_MONEY", "100000000"))
PRICES = {sku: Decimal(price) for sku, price in json.loads(os.environ.get("SM_CONTRACT_PRICES") or "{}").items()}


def _money(value) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    try:
        d = Decimal(str(value))
    except InvalidOperation:
        return None
    return d if d.is_finite() else None


def _text(d: Decimal) -> str:
    return str(d.quantize(CENT, rounding=ROUND_DOWN))


def _timestamp(value):
    """A created_at the server reads: the generated instant moved into 2000–2100, into the
    past and onto an offset within ±14:00, keeping its date-time shape."""
    if not isinstance(value, str):
        return value
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return value
    if parsed.tzinfo is None:
        return value
    offset = parsed.utcoffset()
    if abs(offset) > timedelta(hours=14):
        parsed = parsed.replace(tzinfo=timezone(timedelta(hours=8)))
    now = datetime.now(timezone.utc)
    if not 2000 <= parsed.year <= 2100 or parsed > now:
        try:
            parsed = parsed.replace(year=2024)
        except ValueError:  # 29 February
            parsed = parsed.replace(year=2024, day=28)
    return parsed.isoformat()


def _coherent(order):
    if not isinstance(order, dict):
        return order
    order = dict(order)
    if "created_at" in order:
        order["created_at"] = _timestamp(order["created_at"])
    lines = order.get("lines")
    if not isinstance(lines, list) or not all(isinstance(line, dict) for line in lines):
        return order
    fixed, total = [], Decimal(0)
    for line in lines:
        line = dict(line)
        qty, price = line.get("qty"), _money(line.get("unit_price"))
        if isinstance(qty, bool) or not isinstance(qty, int) or price is None:
            fixed.append(line)
            total = None
            continue
        sku = line.get("sku")
        ceiling = PRICES.get(sku, Decimal(0)) * PRICE_FACTOR if isinstance(sku, str) else Decimal(0)
        if ceiling > 0 and price > ceiling:
            price = ceiling
            line["unit_price"] = _text(price)
        if qty > 0 and price * qty > MAX_MONEY:  # a line's amount is at most MAX_MONEY too
            price = (MAX_MONEY / qty).quantize(CENT, rounding=ROUND_DOWN)
            line["unit_price"] = _text(price)
        if "amount" in line and _money(line["amount"]) is not None:
            line["amount"] = _text(price * qty)
        fixed.append(line)
        if total is not None:
            total += price.quantize(CENT, rounding=ROUND_DOWN) * qty
    order["lines"] = fixed
    if total is not None and _money(order.get("total")) is not None:
        order["total"] = _text(total)
    return order


def _distinct_ids(orders: list) -> list:
    """A batch names each POS order once (a second 「0」 in one batch is refused): repeated
    external_ids get a suffix."""
    seen: set[str] = set()
    for i, order in enumerate(orders):
        key = order.get("external_id") if isinstance(order, dict) else None
        if isinstance(key, str):
            if key in seen:
                key = order["external_id"] = f"{key[:56]}-{i}"
            seen.add(key)
    return orders


@schemathesis.hook
def before_call(context, case, kwargs):
    """Every phase's orders (examples, coverage, fuzzing, stateful), just before they are sent;
    schemathesis revalidates the case after this edit."""
    operation = case.operation
    if operation.method.upper() != "POST" or operation.path not in ORDER_PATHS:
        return
    body = case.body
    if isinstance(body, dict) and isinstance(body.get("orders"), list):
        case.body = {**body, "orders": _distinct_ids([_coherent(order) for order in body["orders"]])}
    elif isinstance(body, dict):
        case.body = _coherent(body)
