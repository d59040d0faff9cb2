"""One product's stock in each of the caller's stores."""
from __future__ import annotations

from datetime import date

from ..models import Product, Store
from ..trading_day import local_today
from .base import STORE_PARAM, Tool, ToolResult, params_schema, store_label
from .stock import STOCK_COLUMNS, inventory, stock_rows


def product_stock(*, product: Product, store: Store | None, today: date | None = None, scope: list[Store] | None = None) -> ToolResult:
    """One product's stock in each of the caller's stores, whatever its level (「黑牌还剩几瓶」)."""
    items = list(inventory(store, scope).filter(product=product).order_by("store__code"))
    rows, window = stock_rows(items, today or local_today())
    where = store_label(store, scope)
    if rows:
        listing = "；".join(
            f"{r['store']} 在库 {r['on_hand']}{r['unit']}（安全库存 {r['safety_stock']}，"
            + ("低于安全库存" if r["on_hand"] < r["safety_stock"] else "不低于安全库存") + "）" for r in rows)
        summary = f"{product.name}的库存：{listing}。"
    else:
        summary = f"{where}没有{product.name}的库存记录。"
    return ToolResult("product_stock", {"velocity_window": window.as_params()}, rows, summary, list(STOCK_COLUMNS))


TOOL = Tool(
    "product_stock", "商品库存", "某个商品（名称、别名或商品编码）在各门店的在库数量和安全库存，附近 7 天日均销量、可售天数和建议补货量。",
    params_schema({"product": {"type": "string", "description": "商品名称、别名或商品编码，如 黑牌、扎啤、W001"}, "store": STORE_PARAM},
                  ("product",)),
    product_stock, STOCK_COLUMNS, perm="ops.view_inventory",
    row_sentence=lambda r: (
        f"{r['store']} {r['product']}：在库 {r['on_hand']}{r['unit']}（安全库存 {r['safety_stock']}）"
        + ("，账面库存为负，多半是入库漏记或销售录错，请盘点核对" if r["on_hand"] < 0 else "")
        + f"，近7天日均 {r['velocity_per_day']}"
        + (f"，约够卖 {r['days_of_cover']} 天" if r["days_of_cover"] is not None else "")
        + (f"，建议补 {r['suggested_qty']}{r['unit']}" if r["on_hand"] < r["safety_stock"] else "")
    ),
    row_key="store",  # one product, a row per store
    needs_today=True,
)
