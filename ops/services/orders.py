"""POS order ingestion: validated field by field, written all or nothing; idempotent by (store,
external_id): the same payload again returns the original, a different one under the same id is a Conflict."""
from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from core.audit import audit_denial
from core.errors import Conflict, NotFound
from core.roles import require
from core.validation import MAX_MONEY, find_bad_text, key_problem, money_problem, parse_timestamp, qty_problem, unknown_fields

from ..models import ApiToken, Inventory, Member, Order, OrderLine, Product, Store
from ..trading_day import TZ
from .stores import writable_stores

CENT = Decimal("0.01")


MAX_LINES_PER_ORDER = 200


@dataclass
class IngestResult:
    created: list[Order] = field(default_factory=list)
    replayed: list[Order] = field(default_factory=list)
    lines_written: int = 0


@dataclass
class _CleanOrder:
    store: Store
    external_id: str
    created_at: datetime
    channel: str
    status: str
    total: Decimal
    member: Member | None
    lines: list[tuple[Product, int, Decimal, Decimal]]
    payload_hash: str


STORE_EMPTY = "门店不能是空字符串：省略这个字段即为 POS 令牌绑定的门店。"


ORDER_FIELDS = frozenset({"store", "external_id", "created_at", "channel", "status", "member", "lines", "total"})


LINE_FIELDS = frozenset({"sku", "qty", "unit_price", "amount"})


MAX_PRICE_FACTOR = 10  # a line's unit price at most this many times the product's list price


def _decimal(value, path: str, errors: dict) -> Decimal | None:
    d, problem = money_problem(value)
    if problem:
        errors.setdefault(path, []).append(problem)
    return d


def order_fingerprint(o: dict) -> str:
    return hashlib.sha256(json.dumps(o, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _order_store(raw: dict, prefix: str, ctx: dict, errors: dict) -> Store | None:
    store_key = raw.get("store")
    if store_key == "":  # was read as omitted, while the schema says a store code is at least one character
        errors[prefix + "store"] = [STORE_EMPTY]
        return None
    if store_key is None:
        if len(ctx["writable"]) == 1 and ctx["token_store"]:
            return ctx["writable"][0]
        errors[prefix + "store"] = ["必须指明门店编码。"]
        return None
    store = ctx["stores"].get(str(store_key))
    if store is not None and store.id in ctx["writable_ids"]:
        return store
    # Another store is answered exactly like one that does not exist.
    if store is not None:
        ctx["denied"].append(store)
    errors[prefix + "store"] = [f"没有编码或名称为「{store_key}」的门店。"
                                f"可以写入的门店：{'、'.join(s.code for s in ctx['writable']) or '（无）'}。"]
    return None


def _order_created_at(raw: dict, prefix: str, store: Store | None, ctx: dict, errors: dict) -> datetime | None:
    parsed, problem = parse_timestamp(raw.get("created_at"))
    if parsed is None:
        errors[prefix + "created_at"] = [problem]
        return None
    if timezone.is_naive(parsed):
        parsed = parsed.replace(tzinfo=ZoneInfo(store.timezone) if store else TZ)
    if parsed > ctx["now"] + timedelta(minutes=5):
        errors[prefix + "created_at"] = ["下单时间不能在未来。"]
        return None
    max_age = settings.SM_ORDER_MAX_AGE_DAYS
    if max_age and parsed < ctx["now"] - timedelta(days=max_age):
        # A POS whose clock or date format was off sent a 2001 order, accepted (201): it moved
        # the chain's first recorded sale, and every period bound with it, back 25 years.
        oldest = timezone.localtime(ctx["now"] - timedelta(days=max_age), TZ)
        errors[prefix + "created_at"] = [f"下单时间早于 {oldest:%Y-%m-%d %H:%M}（{max_age} 天前）：只接收 {max_age} 天内的订单，"
                                         "请检查 POS 的时钟和时间格式。"]
        return None
    return parsed


def _order_member(raw: dict, prefix: str, ctx: dict, errors: dict) -> Member | None:
    if raw.get("member") is not None and not isinstance(raw["member"], str):
        errors[prefix + "member"] = ["会员号或手机号必须是字符串。"]
        return None
    if raw.get("member") in (None, ""):
        return None
    member = ctx["members"].get(str(raw["member"]))
    if member is None:
        # Well-formed, naming a member who is not there: 404 like an unknown id (as a ticket
        # naming one is), unless the order has other errors too (then all of them, 400).
        ctx["missing"][prefix + "member"] = [f"没有会员「{raw['member']}」。"]
    return member


def _order_line(line, lp: str, ctx: dict, errors: dict) -> tuple[tuple | None, Decimal | None]:
    """One line: (product, qty, unit price, amount) when it is whole, and its amount when that
    could be checked against quantity × price (it counts toward the order's total)."""
    if not isinstance(line, dict):
        errors[lp.rstrip(".")] = ["每行必须是 JSON 对象。"]
        return None, None
    if extra := unknown_fields(line, LINE_FIELDS):
        errors[lp + "non_field_errors"] = [f"不认识的字段：{'、'.join(extra)}。"]
    product = ctx["products"].get(str(line.get("sku")))
    if product is None:
        errors[lp + "sku"] = [f"没有 SKU「{line.get('sku')}」的商品。"]
    qty = line.get("qty")
    if problem := qty_problem(qty):
        errors[lp + "qty"] = [problem]
        qty = None
    unit_price = _decimal(line.get("unit_price"), lp + "unit_price", errors)
    if unit_price is not None and unit_price < 0:
        errors[lp + "unit_price"] = ["不能为负数。"]
    elif unit_price is not None and product is not None and product.price > 0 and unit_price > product.price * MAX_PRICE_FACTOR:
        # One 青岛啤酒 at ¥99,999,999.99 was accepted and made the store's month ¥100 million.
        errors[lp + "unit_price"] = [f"单价 {unit_price} 超过 {product.name} 标价 {product.price} 的 {MAX_PRICE_FACTOR} 倍，"
                                     "请核对（可能多输了位数）。"]
    amount = _line_amount(line, lp, qty, unit_price, errors)
    if qty is None or unit_price is None or amount is None:
        return None, None
    if unit_price * qty != amount:  # both exact to the cent: a cent off is off (3 lines, 3 cents, before)
        errors[lp + "amount"] = [f"金额 {amount} 不等于 数量 {qty} × 单价 {unit_price}。"]
    whole = (product, qty, unit_price.quantize(CENT), amount.quantize(CENT)) if product is not None else None
    return whole, amount


def _line_amount(line: dict, lp: str, qty, unit_price, errors: dict) -> Decimal | None:
    # An omitted amount is quantity × price; with either of those wrong there is nothing to
    # check it against, and no 「amount 必须是数字」 for a field the client never sent.
    if "amount" in line:
        return _decimal(line["amount"], lp + "amount", errors)
    amount = None if unit_price is None or qty is None else unit_price * qty
    if amount is not None and amount > MAX_MONEY:  # the bound a sent amount is held to
        errors[lp + "qty"] = [f"数量 {qty} × 单价 {unit_price} 超过单行金额上限 {MAX_MONEY:,.0f} 元。"]
        return None
    return amount


def _order_lines(raw: dict, prefix: str, ctx: dict, errors: dict) -> tuple[list, list, Decimal]:
    """(the raw lines, the whole ones, the sum of the checked amounts)."""
    raw_lines = raw.get("lines")
    if not isinstance(raw_lines, list) or not raw_lines:
        errors[prefix + "lines"] = ["至少要有一行商品。"]
        return [], [], Decimal("0")
    if len(raw_lines) > MAX_LINES_PER_ORDER:
        errors[prefix + "lines"] = [f"一单最多 {MAX_LINES_PER_ORDER} 行。"]
        return [], [], Decimal("0")
    lines, line_sum = [], Decimal("0")
    for j, line in enumerate(raw_lines):
        whole, amount = _order_line(line, f"{prefix}lines[{j}].", ctx, errors)
        if amount is not None:
            line_sum += amount
        if whole is not None:
            lines.append(whole)
    return raw_lines, lines, line_sum


def _order_choice(raw: dict, name: str, default: str, choices: list[str], prefix: str, errors: dict) -> str:
    value = raw.get(name, default)
    if value not in choices:
        errors[prefix + name] = [f"只能是：{'、'.join(choices)}。"]
    return value


def _order_external_id(raw: dict, prefix: str, errors: dict) -> str | None:
    if problem := key_problem(raw.get("external_id")):
        errors[prefix + "external_id"] = [problem]
        return None
    return raw.get("external_id")


def _clean_order(raw, prefix: str, ctx: dict, errors: dict) -> _CleanOrder | None:
    """One order of a batch, field by field; every error under its path (「orders[3].lines[0].qty」)."""
    if not isinstance(raw, dict):
        errors[prefix.rstrip(".") or "non_field_errors"] = ["每个订单必须是 JSON 对象。"]
        return None
    if bad := find_bad_text(raw, prefix.rstrip(".")):
        errors[bad[0]] = [bad[1]]
        return None
    before = len(errors)
    store = _order_store(raw, prefix, ctx, errors)
    external_id = _order_external_id(raw, prefix, errors)
    created_at = _order_created_at(raw, prefix, store, ctx, errors)
    channel = _order_choice(raw, "channel", Order.Channel.DINE_IN, Order.Channel.values, prefix, errors)
    status = _order_choice(raw, "status", Order.Status.PAID, Order.Status.values, prefix, errors)
    member = _order_member(raw, prefix, ctx, errors)
    raw_lines, lines, line_sum = _order_lines(raw, prefix, ctx, errors)
    total = _decimal(raw.get("total"), prefix + "total", errors)
    if total is not None and not errors.get(prefix + "lines") and total != line_sum and len(lines) == len(raw_lines):
        errors[prefix + "total"] = [f"订单金额 {total} 与明细合计 {line_sum.quantize(CENT)} 不一致。"]
    if unknown := unknown_fields(raw, ORDER_FIELDS):
        errors[prefix + "non_field_errors"] = [f"不认识的字段：{'、'.join(unknown)}。"]
    if len(errors) > before:
        return None
    total = total.quantize(CENT)
    return _CleanOrder(store, external_id, created_at, channel, status, total, member, lines,
                       _fingerprint(store, external_id, created_at, channel, status, total, member, lines))


def _fingerprint(store: Store, external_id: str, created_at: datetime, channel: str, status: str, total: Decimal,
                 member: Member | None, lines: list) -> str:
    """The order as the idempotency check compares it: the same order sent twice, the same hash."""
    return order_fingerprint({
        "store": store.code,
        "external_id": external_id,
        "created_at": created_at.astimezone(ZoneInfo("UTC")).isoformat(),
        "channel": channel,
        "status": status,
        "total": str(total),
        "member": member.number if member else "",
        "lines": [[p.sku, q, str(u), str(a)] for p, q, u, a in lines],
    })


def _lookups(orders: list, writable: list[Store], token: ApiToken | None) -> dict:
    """Everything a batch's orders refer to, read once: stores, products, members; and what the
    validation collects (stores refused, members missing)."""
    all_stores = list(Store.objects.all())
    skus = {str(line.get("sku")) for o in orders if isinstance(o, dict) for line in (o.get("lines") or []) if isinstance(line, dict)}
    member_keys = {str(o["member"]) for o in orders if isinstance(o, dict) and o.get("member")}
    members = {}
    if member_keys:
        for m in Member.objects.filter(Q(number__in=member_keys) | Q(phone__in=member_keys)):
            members[m.number] = members[m.phone] = m
    return {
        "writable": writable,
        "writable_ids": {s.id for s in writable},
        "denied": [],
        "token_store": bool(token and token.store_id),
        "stores": {s.code: s for s in all_stores} | {s.name: s for s in all_stores},
        "products": {p.sku: p for p in Product.objects.filter(sku__in=skus)},
        "members": members,
        "now": timezone.now(),
        "missing": {},
    }


def orders_ingest(*, orders: list[dict], user, token: ApiToken | None = None, batch: bool = True) -> IngestResult:
    """Validate and write POS orders, all or nothing.

    Raises ValidationError (field errors keyed like ``orders[3].lines[0].sku``), or
    Conflict when an external_id already holds a different payload.
    """
    _check_batch(orders, batch)
    require(user, "ops.add_order", attempt="write orders", message="只有 POS 设备令牌可以写入订单。")
    writable = writable_stores(user=user, perm="ops.add_order", token=token)
    if not writable:
        raise PermissionDenied("这个账号没有分配门店，不能写入订单。")
    ctx = _lookups(orders, writable, token)
    errors: dict[str, list[str]] = {}
    clean = _clean_batch(orders, batch, ctx, errors)
    for store in {s.id: s for s in ctx["denied"]}.values():
        audit_denial(actor=user, attempt="write orders", reason="store outside the token's scope", store=store)
    if errors:
        raise ValidationError({**errors, **ctx["missing"]})
    if ctx["missing"]:
        raise NotFound("".join(f"{field}：{messages[0]}" for field, messages in ctx["missing"].items()))
    try:
        return _write_orders(clean)
    except IntegrityError:
        # A concurrent request inserted one of these ids first; the retry sees it as a replay or a conflict.
        return _write_orders(clean)


def _check_batch(orders, batch: bool) -> None:
    """The batch as a whole: a non-empty list within the size limit, no NUL byte anywhere."""
    if not isinstance(orders, list):
        raise ValidationError({"orders": [f"必须是订单对象的列表（JSON 数组），收到的是 {type(orders).__name__}。"]})
    if not orders:
        raise ValidationError({"orders": ["至少要有一个订单。"]})
    if len(orders) > settings.SM_POS_MAX_BATCH:
        raise ValidationError({"orders": [f"一批最多 {settings.SM_POS_MAX_BATCH} 个订单，收到 {len(orders)} 个。"]})
    # Before any lookup: a NUL byte in a SKU or member number would reach PostgreSQL.
    bad = find_bad_text(orders, "orders") if batch else find_bad_text(orders[0])
    if bad:
        raise ValidationError({bad[0]: [bad[1]]})


def _clean_batch(orders: list, batch: bool, ctx: dict, errors: dict) -> list[_CleanOrder]:
    """Each order cleaned; one external id twice in a batch is an error on the second."""
    clean: list[_CleanOrder] = []
    seen: dict[tuple[int, str], int] = {}
    for i, raw in enumerate(orders):
        prefix = f"orders[{i}]." if batch else ""
        c = _clean_order(raw, prefix, ctx, errors)
        if c is None:
            continue
        key = (c.store.id, c.external_id)
        if key in seen:
            errors[prefix + "external_id"] = [f"与 orders[{seen[key]}] 的单号重复。"]
            continue
        seen[key] = i
        clean.append(c)
    return clean


@transaction.atomic
def _write_orders(clean: list[_CleanOrder]) -> IngestResult:
    result = IngestResult()
    by_store: dict[int, list[str]] = defaultdict(list)
    for c in clean:
        by_store[c.store.id].append(c.external_id)
    cond = Q()
    for store_id, ids in by_store.items():
        cond |= Q(store_id=store_id, external_id__in=ids)
    existing = {(o.store_id, o.external_id): o for o in Order.objects.filter(cond)}
    conflicts = []
    new: list[_CleanOrder] = []
    for c in clean:
        old = existing.get((c.store.id, c.external_id))
        if old is None:
            new.append(c)
        elif old.payload_hash == c.payload_hash:
            result.replayed.append(old)
        else:
            conflicts.append(c.external_id)
    if conflicts:
        raise Conflict(
            f"单号 {'、'.join(conflicts[:10])}{' 等' if len(conflicts) > 10 else ''} 已存在且内容不同；"
            "同一单号只能对应同一份订单，改单请用新的单号。",
            conflicting_external_ids=conflicts,
        )
    if not new:
        return result
    objs = Order.objects.bulk_create(
        [
            Order(store=c.store, external_id=c.external_id, created_at=c.created_at, channel=c.channel,
                  status=c.status, total=c.total, member=c.member, payload_hash=c.payload_hash)
            for c in new
        ]
    )
    line_objs = []
    sold: dict[tuple[int, int], int] = defaultdict(int)
    for order, c in zip(objs, new):
        for product, qty, unit_price, amount in c.lines:
            line_objs.append(OrderLine(order_id=order.id, product_id=product.id, qty=qty, unit_price=unit_price, amount=amount))
            if c.status == Order.Status.PAID:
                sold[(c.store.id, product.id)] += qty
    OrderLine.objects.bulk_create(line_objs, batch_size=2000)
    for (store_id, product_id), qty in sold.items():
        Inventory.objects.filter(store_id=store_id, product_id=product_id).update(on_hand=F("on_hand") - qty)
    result.created = objs
    result.lines_written = len(line_objs)
    return result
