"""Products below their safety stock, with what to order."""
from __future__ import annotations

from datetime import date

from django.db.models import F

from ..models import Store
from ..trading_day import local_today
from .base import STORE_PARAM, Tool, ToolResult, params_schema, store_label
from .stock import STOCK_COLUMNS, inventory, stock_rows


def low_stock(*, store: Store | None, today: date | None = None, scope: list[Store] | None = None) -> ToolResult:
    items = list(inventory(store, scope).filter(on_hand__lt=F("safety_stock")).order_by("store__code", "product__sku"))
    rows, window = stock_rows(items, today or local_today())
    if rows:
        listing = "；".join(f"{r['store']} {r['product']} 在库 {r['on_hand']}{r['unit']}（安全库存 {r['safety_stock']}）" for r in rows)
        summary = f"{store_label(store, scope)} 低于安全库存的商品共 {len(rows)} 项：{listing}。"
    else:
        summary = f"{store_label(store, scope)} 目前没有低于安全库存的商品。"
    return ToolResult("low_stock", {"velocity_window": window.as_params()}, rows, summary, list(STOCK_COLUMNS))


TOOL = Tool(
    "low_stock", "低库存", "在库低于安全库存的商品，附近 7 天日均销量、可售天数和建议补货量。",
    params_schema({"store": STORE_PARAM}),
    low_stock, STOCK_COLUMNS, perm="ops.view_inventory",
    row_sentence=lambda r: (
        f"{r['store']} {r['product']}：在库 {r['on_hand']}{r['unit']}，安全库存 {r['safety_stock']}，"
        f"近7天日均 {r['velocity_per_day']}，建议补 {r['suggested_qty']}{r['unit']}"
    ),
    needs_today=True,
)
