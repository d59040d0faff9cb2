"""What the two stock tools share: last week's sales beside each inventory row, and the
restock the SOP suggests."""
from __future__ import annotations

from datetime import date, timedelta

from django.db.models import Sum

from ..models import Inventory, Order, OrderLine, Store
from ..periods import Period
from .base import placed_in

VELOCITY_DAYS = 7
STOCK_COLUMNS = ("store", "product", "on_hand", "safety_stock", "sold_7d", "velocity_per_day", "days_of_cover", "suggested_qty")


def restock_suggestion(on_hand: int, safety_stock: int, sold: int, cover_days: int = 7) -> int:
    """Units to order (the SOP): safety stock + `cover_days` of sales at the last VELOCITY_DAYS'
    daily average − on hand. Integer arithmetic: 62 sold became 62.02 (rounded average) and
    29 became 29.000000000000004 (float), and ceil made either one more."""
    return max(0, safety_stock + -(-sold * cover_days // VELOCITY_DAYS) - on_hand)


def stock_rows(items: list[Inventory], today: date) -> tuple[list[dict], Period]:
    """Inventory rows with the last week's sales: velocity, days of cover, what to order."""
    window = Period(today - timedelta(days=VELOCITY_DAYS), today - timedelta(days=1), f"近{VELOCITY_DAYS}天")
    sold = {
        (a["order__store_id"], a["product_id"]): a["qty"]
        for a in OrderLine.objects.filter(
            placed_in(window, "order__"),
            order__status=Order.Status.PAID,
            product_id__in={i.product_id for i in items},
            order__store_id__in={i.store_id for i in items},
        )
        .values("order__store_id", "product_id")
        .annotate(qty=Sum("qty"))
        .order_by()
    }
    rows = []
    for inv in items:
        qty = sold.get((inv.store_id, inv.product_id), 0) or 0
        velocity = round(qty / VELOCITY_DAYS, 2)
        rows.append(
            {
                "store": inv.store.name,
                "product": inv.product.name,
                "sku": inv.product.sku,
                "unit": inv.product.unit,
                "on_hand": inv.on_hand,
                "safety_stock": inv.safety_stock,
                "sold_7d": qty,
                "velocity_per_day": velocity,
                # Stock below zero on the books lasts no days, not -16.6 (a sale recorded without its delivery).
                "days_of_cover": max(0.0, round(inv.on_hand / velocity, 1)) if velocity else None,
                "suggested_qty": restock_suggestion(inv.on_hand, inv.safety_stock, qty),
            }
        )
    return rows, window


def inventory(store: Store | None, scope: list[Store] | None):
    items = Inventory.objects.select_related("store", "product")
    if store:
        return items.filter(store=store)
    return items.filter(store__in=scope) if scope is not None else items

