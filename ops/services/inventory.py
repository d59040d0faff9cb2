"""Inventory adjustments from a POS or a manager: validated, idempotent by (store, external_id), audited."""
from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F

from core.audit import audit_denial, audit_record
from core.errors import Conflict
from core.models import AuditLog
from core.roles import require
from core.validation import find_bad_text, key_problem, qty_problem, unknown_fields

from ..models import ApiToken, Inventory, InventoryAdjustment, Product, Store
from ..selectors import store_by_exact_name
from .orders import STORE_EMPTY
from .stores import writable_stores

ADJUSTMENT_FIELDS = frozenset({"store", "sku", "delta", "reason", "external_id", "note"})


@dataclass
class AdjustmentResult:
    adjustment: InventoryAdjustment
    inventory: Inventory
    replayed: bool


def _adjustment_store(key, *, user, token: ApiToken | None, errors: dict) -> Store | None:
    """The store named (code, name or alias), or the POS token's own; another store is answered
    exactly like one that does not exist (and the attempt audited)."""
    writable = writable_stores(user=user, perm="ops.add_inventoryadjustment", token=token)
    if key == "":
        errors["store"] = [STORE_EMPTY]
        return None
    if key is None and token is not None and token.store_id and writable:
        return writable[0]
    if not isinstance(key, (str, type(None))):
        errors["store"] = ["门店必须是字符串。"]
        return None
    store = store_by_exact_name(key) if key else None  # an alias too: 「福田店」 was 「没有门店」
    if store is not None and store not in writable:
        audit_denial(actor=user, attempt="adjust inventory", reason="store outside the user's scope", store=store)
        store = None
    if store is None:
        errors["store"] = [f"没有门店「{key}」。可以调整的门店：{'、'.join(s.code for s in writable) or '（无）'}。"
                           if key else "必须指明门店。"]
    return store


def inventory_adjust(*, data: dict, user, token: ApiToken | None = None) -> AdjustmentResult:
    """Apply one inventory adjustment, idempotent by (store, external_id), audited.

    Concurrent identical requests: one creates, the others return it as a replay (or a
    Conflict when the payload differs); the unique constraint decides, never a 500.
    """
    require(user, "ops.add_inventoryadjustment", attempt="adjust inventory", message="你的账号没有调整库存的权限。")
    if not isinstance(data, dict):
        raise ValidationError({"non_field_errors": ["请求体必须是 JSON 对象。"]})
    bad = find_bad_text(data)
    if bad:
        raise ValidationError({bad[0]: [bad[1]]})
    errors: dict[str, list[str]] = {}
    if extra := unknown_fields(data, ADJUSTMENT_FIELDS):
        errors["non_field_errors"] = [f"不认识的字段：{'、'.join(extra)}。"]
    store = _adjustment_store(data.get("store"), user=user, token=token, errors=errors)
    sku = data.get("sku")
    product = Product.objects.filter(sku=sku).first() if isinstance(sku, str) and sku else None
    if product is None:
        errors["sku"] = [f"没有 SKU「{sku}」的商品。" if sku else "必须给出 SKU。"]
    delta = data.get("delta")
    if qty_problem(delta, allow_negative=True):
        errors["delta"] = ["必须是非零整数（正数入库，负数出库），绝对值不超过 100000。"]
    reason = data.get("reason")
    # The Chinese label is accepted as well as the code (「报损」 as 「damage」): a POS vendor's staff write
    # Chinese, and an order's channel is written in Chinese already (堂食/外卖/团购).
    reason = {label: value for value, label in InventoryAdjustment.Reason.choices}.get(reason, reason) if isinstance(reason, str) else reason
    if not isinstance(reason, str) or reason not in InventoryAdjustment.Reason.values:
        choices = "、".join(f"{value}（{label}）" for value, label in InventoryAdjustment.Reason.choices)
        errors["reason"] = [f"{'必须给出原因，' if reason in (None, '') else ''}只能是：{choices}。"]
    external_id = data.get("external_id")
    if problem := key_problem(external_id):
        errors["external_id"] = [problem]
    note = data.get("note", "") or ""
    if not isinstance(note, str) or len(note) > 200:
        errors["note"] = ["备注最多 200 字。"]
    if errors:
        raise ValidationError(errors)
    try:
        return _adjust(store, product, external_id, delta, reason, note, user)
    except IntegrityError:
        # A concurrent request inserted this external_id first and has committed (the unique
        # index waited for it): now it is a replay or a conflict.
        return _adjust(store, product, external_id, delta, reason, note, user)


def _replay_or_conflict(existing: InventoryAdjustment, product, delta, reason, note) -> AdjustmentResult:
    same = (existing.product_id, existing.delta, existing.reason, existing.note) == (product.id, delta, reason, note)
    if not same:
        raise Conflict(f"调整单号 {existing.external_id} 已存在且内容不同。")
    inv = Inventory.objects.get(store_id=existing.store_id, product_id=existing.product_id)
    return AdjustmentResult(existing, inv, True)


@transaction.atomic
def _adjust(store, product, external_id, delta, reason, note, user) -> AdjustmentResult:
    existing = InventoryAdjustment.objects.filter(store=store, external_id=external_id).first()
    if existing:
        return _replay_or_conflict(existing, product, delta, reason, note)
    inv, _ = Inventory.objects.select_for_update().get_or_create(store=store, product=product, defaults={"on_hand": 0, "safety_stock": 0})
    # Holding the row lock, look again: a request that held it before us has committed by now.
    existing = InventoryAdjustment.objects.filter(store=store, external_id=external_id).first()
    if existing:
        return _replay_or_conflict(existing, product, delta, reason, note)
    if inv.on_hand + delta < 0:
        # Well-formed, but it contradicts the stock as recorded now: a conflict (409), as a
        # replayed external_id with other content is; the body still names the field.
        message = f"调整后库存为负（当前 {inv.on_hand}，调整 {delta}）。"
        raise Conflict(message, delta=[message], on_hand=inv.on_hand)
    adj = InventoryAdjustment.objects.create(
        store=store, product=product, external_id=external_id, delta=delta, reason=reason, note=note, created_by=user
    )
    before = inv.on_hand
    inv.on_hand = F("on_hand") + delta
    inv.save(update_fields=["on_hand", "updated_at"])
    inv.refresh_from_db()
    audit_record(actor=user, action=AuditLog.Action.INVENTORY_ADJUSTED, target=adj, store=store, before={"on_hand": before},
                 after={"on_hand": inv.on_hand, "sku": product.sku, "delta": delta, "reason": reason, "external_id": external_id})
    return AdjustmentResult(adj, inv, False)
