"""The audit list's one-line details (what was proposed, why it was rejected) and a proposal card's choices."""
from django import template

from core.audit import reason_for_people
from core.models import AuditLog

register = template.Library()


@register.filter
def ticket_choices(payload: dict) -> dict:
    """A pending ticket's category and severity as its card's form offers them."""
    from ..payloads import ticket_choices as choices

    return choices(payload or {})


@register.filter
def audit_detail(entry) -> str:
    """「青岛啤酒 480瓶、科罗娜啤酒 86瓶」 for a proposed restock, 「原因：…」 for a rejection
    (the line used to name the proposal and its store twice, and neither)."""
    after = entry.after or {}
    if entry.action == AuditLog.Action.INVENTORY_ADJUSTED and after.get("reason"):
        from ops.models import InventoryAdjustment

        # The reason is a code (「原因：damage」 showed on /audit/): its label, as the admin shows it.
        return f"原因：{InventoryAdjustment.Reason(after['reason']).label if after['reason'] in InventoryAdjustment.Reason.values else after['reason']}"
    if after.get("reason"):
        return f"原因：{reason_for_people(after['reason'])}"
    lines = ((after.get("payload") or {}).get("lines")) or []
    if lines:
        return "、".join(f"{line.get('product') or line.get('sku')} {line.get('quantity')}{line.get('unit', '')}" for line in lines)
    description = (after.get("payload") or {}).get("description")
    return description[:60] if description else ""


@register.filter
def store_unless_named(entry) -> str:
    """The entry's store, unless its target's name already says it."""
    store = str(entry.store or "")
    return "" if not store or store in (entry.target_repr or "") else store
