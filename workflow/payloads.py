"""What a proposal's payload may hold: a restock's lines (a product by SKU or name, a quantity in
its unit or 箱, a reason) and a ticket's category, severity, description, order and member,
checked field by field with every error under its path (「payload.lines[0].quantity」). REST,
MCP, the chat's slots and the admin read the limits from here."""
from __future__ import annotations

import hashlib
import json

from django.core.exceptions import ValidationError

from core.errors import NotFound
from core.validation import reject_unknown
from ops.models import Member, Order, Store
from ops.selectors import UnknownProduct, resolve_product

from .models import Ticket

MAX_RESTOCK_LINES = 50
MAX_RESTOCK_QTY = 10000
TICKET_SEVERITIES = [s for s, _ in Ticket.Severity.choices]
TICKET_CATEGORIES = Ticket.Category.values  # the order REST, MCP and the chat offer them in
RESTOCK_FIELDS = frozenset({"lines"})
MAX_REASON = 200
# A ticket's description, counted once the spaces around it are removed: REST, MCP and chat read these.
DESCRIPTION_MIN, DESCRIPTION_MAX = 5, 2000
RESTOCK_LINE_FIELDS = frozenset({"sku", "product", "quantity", "unit", "reason"})
TICKET_FIELDS = frozenset({"category", "severity", "description", "order", "member"})


def _line_product(line: dict, p: str, errors: dict):
    """A SKU, a name or an alias, exactly, like chat (「科罗娜」 was 「没有商品」 over MCP and REST);
    with both given (a client sending back the lines it was shown) they must name one product."""
    by_sku, by_name = line.get("sku", "").strip(), line.get("product", "").strip()
    try:
        product = resolve_product((by_sku or by_name)[:64])
    except UnknownProduct as exc:
        errors[p + ("sku" if by_sku else "product")] = exc.messages
        return None
    if by_sku and by_name:
        try:
            same = resolve_product(by_name[:64]) == product
        except UnknownProduct as exc:
            same, errors[p + "product"] = True, exc.messages
        if not same:
            errors[p + "product"] = [f"「{by_name}」和 sku {by_sku}（{product.name}）不是同一个商品。"]
    return product


def _line_reason(line: dict, p: str, errors: dict) -> str:
    reason = line.get("reason")
    reason = "" if reason is None else reason  # 「"reason": {}」 was read as no reason (make fuzz)
    if not isinstance(reason, str) or len(reason) > MAX_REASON:
        # Was cut to 200 characters without a word (a 100,000-character reason was a 201).
        errors[p + "reason"] = [f"原因是不超过 {MAX_REASON} 个字的文字。"]
    return reason.strip() if isinstance(reason, str) else ""


def _clean_restock_line(line, p: str, errors: dict) -> tuple | None:
    """One line of a restock: (product, the clean line) when every field holds, else None with
    each problem under its path."""
    if not isinstance(line, dict):
        errors[p.rstrip(".")] = ["每行必须是对象。"]
        return None
    if extra := sorted(set(map(str, line)) - RESTOCK_LINE_FIELDS):
        errors[p.rstrip(".")] = [f"不认识的字段：{'、'.join(extra)}。"]
        return None
    bad = [f for f in ("sku", "product") if f in line and (not isinstance(line[f], str) or not line[f].strip())]
    if bad:
        # 「"sku": 0」 or 「"product": ""」 was read as not given and the line taken by the other field (make fuzz)
        errors[p + bad[0]] = ["商品要写成文字：SKU、商品名或别名，不能为空。"]
        return None
    product = _line_product(line, p, errors)
    qty = line.get("quantity")
    if isinstance(qty, bool) or not isinstance(qty, int) or not 1 <= qty <= MAX_RESTOCK_QTY:
        errors[p + "quantity"] = [f"数量必须是 1 到 {MAX_RESTOCK_QTY} 的整数。"]
    unit = line.get("unit", product.unit if product else "")  # 「"unit": ""」 is no unit, not the default
    if product is not None and unit not in (product.unit, "箱"):
        errors[p + "unit"] = [f"单位只能是 {product.unit} 或 箱。"]
    reason = _line_reason(line, p, errors)
    if product is None or any(p + f in errors for f in ("sku", "product", "quantity", "unit", "reason")):
        return None
    return product, {"sku": product.sku, "product": product.name, "quantity": qty, "unit": unit, "reason": reason}


def clean_restock(payload: dict) -> dict:
    """A restock's lines, each checked; the same product twice is one line (_merge_line)."""
    errors: dict[str, list[str]] = {}
    reject_unknown(payload, RESTOCK_FIELDS, "payload")
    lines = payload.get("lines")
    if not isinstance(lines, list) or not lines:
        raise ValidationError({"payload.lines": ["补货至少要有一行：商品（sku）和数量（quantity），原因（reason）可选。"]})
    if len(lines) > MAX_RESTOCK_LINES:
        raise ValidationError({"payload.lines": [f"一次最多 {MAX_RESTOCK_LINES} 行。"]})
    clean: list[dict] = []
    by_product: dict[int, dict] = {}
    for i, line in enumerate(lines):
        checked = _clean_restock_line(line, f"payload.lines[{i}].", errors)
        if checked is None:
            continue
        product, line = checked
        if (first := by_product.get(product.id)) is None:
            by_product[product.id] = line
            clean.append(line)
        else:
            _merge_line(first, line, product)
    if errors:
        raise ValidationError(errors)
    return {"lines": clean}


def _merge_line(first: dict, again: dict, product) -> None:
    """The same product on two lines (a POS sending 2 箱 and 6 瓶) is one line: in 箱 when both
    are, otherwise in the product's unit (a 箱 is case_size of it); the reasons are kept."""
    if first["unit"] != again["unit"]:
        for line in (first, again):
            if line["unit"] != product.unit:
                line["quantity"], line["unit"] = line["quantity"] * (product.case_size or 1), product.unit
    first["quantity"] += again["quantity"]
    first["reason"] = "；".join(r for r in dict.fromkeys((first["reason"], again["reason"])) if r)[:MAX_REASON]


def clean_ticket(payload: dict, store: Store) -> dict:
    errors: dict[str, list[str]] = {}
    reject_unknown(payload, TICKET_FIELDS, "payload")
    category = payload.get("category")
    if category not in TICKET_CATEGORIES:
        errors["payload.category"] = [f"类别只能是：{'、'.join(TICKET_CATEGORIES)}。"]
    severity = payload.get("severity")
    if severity not in TICKET_SEVERITIES:
        errors["payload.severity"] = [f"严重程度只能是：{'、'.join(TICKET_SEVERITIES)}。"]
    description = payload.get("description")
    if not isinstance(description, str) or not DESCRIPTION_MIN <= len(description.strip()) <= DESCRIPTION_MAX:
        errors["payload.description"] = [f"描述需要 {DESCRIPTION_MIN} 到 {DESCRIPTION_MAX} 个字。"]
    # 「"description": [null, null]」 reached .strip() on a list: a 500.
    clean = {"category": category, "severity": severity, "description": description.strip() if isinstance(description, str) else ""}
    for name in ("order", "member"):
        if payload.get(name) is not None and not isinstance(payload[name], str):
            errors[f"payload.{name}"] = ["必须是字符串。"]
            payload = {**payload, name: None}
    missing = []  # a well-formed ticket naming an order or member that is not there: 404, as an unknown id is
    if payload.get("order"):
        order = Order.objects.filter(store=store, external_id=str(payload["order"])).first()
        if order is None:
            missing.append(f"{store.name}没有单号「{payload['order']}」的订单（payload.order）。")
        else:
            clean["order"] = order.external_id
    if payload.get("member"):
        member = Member.objects.filter(number=str(payload["member"]).upper()).first() or Member.objects.filter(phone=str(payload["member"])).first()
        if member is None:
            missing.append("没有这个会员（payload.member）。")
        else:
            clean["member"] = member.number
    if errors:
        raise ValidationError(errors)
    if missing:
        raise NotFound("".join(missing))
    return clean


def payload_fingerprint(kind: str, store: Store, payload: dict) -> str:
    return hashlib.sha256(json.dumps([kind, store.code, payload], sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:32]


def payload_from_form(proposal, data) -> dict | None:
    """What a pending proposal asks for, changed by a form's fields over its own payload: a
    restock's quantities (qty_0, qty_1 …, each line otherwise as proposed), a ticket's category
    and severity (「鸡翅是生的」 was filed 一般, and only REST could change it). The chat card and
    the admin read their forms here; None when the form changes nothing it could."""
    if proposal.kind == "restock":
        lines = proposal.payload.get("lines", [])
        if not any(f"qty_{i}" in data for i in range(len(lines))):
            return None
        amended = []
        for i, line in enumerate(lines):
            raw = (data.get(f"qty_{i}") or "").strip()
            if not raw.isdigit():
                raise ValidationError({f"qty_{i}": [f"{line.get('product', line.get('sku'))}的数量要写正整数。"]})
            amended.append({k: v for k, v in line.items() if k in ("sku", "unit", "reason")} | {"quantity": int(raw)})
        return {"lines": amended}
    if not ({"category", "severity"} & set(data)):
        return None
    kept = {k: v for k, v in proposal.payload.items() if k in TICKET_FIELDS and v not in (None, "")}
    return kept | {name: data[name] for name in ("category", "severity") if name in data}


def ticket_choices(payload: dict) -> dict:
    """A ticket's category and severity as a form offers them: every choice, the current one marked."""
    return {"category": [(c, c == payload.get("category")) for c in TICKET_CATEGORIES],
            "severity": [(c, c == payload.get("severity")) for c in TICKET_SEVERITIES]}
