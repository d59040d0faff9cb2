"""How much of one product sold, a row per store."""
from __future__ import annotations

from django.db.models import Count, Sum

from ..models import Order, OrderLine, Product, Store
from ..periods import Period
from .base import PERIOD_PARAM, STORE_PARAM, Chart, Tool, ToolResult, money, params_schema, placed_in, store_label, yuan


def product_sales(*, product: Product, store: Store | None, period: Period, scope: list[Store] | None = None) -> ToolResult:
    """How much of one product sold (paid orders only): one row per store, zeros included,
    so 「科罗娜卖了几瓶」 is answered with bottles, not with the store's whole revenue."""
    qs = OrderLine.objects.filter(placed_in(period, "order__"), product=product, order__status=Order.Status.PAID)
    if store:
        stores = [store]
        qs = qs.filter(order__store=store)
    elif scope is not None:
        stores = sorted(scope, key=lambda s: s.code)
        qs = qs.filter(order__store__in=scope)
    else:
        stores = list(Store.objects.all())
    agg = {a["order__store_id"]: a for a in qs.values("order__store_id").annotate(
        qty=Sum("qty"), revenue=Sum("amount"), orders=Count("order_id", distinct=True))}
    rows = [
        {
            "store": s.name,
            "product": product.name,
            "qty": (agg.get(s.pk) or {}).get("qty") or 0,
            "unit": product.unit,
            "revenue": money((agg.get(s.pk) or {}).get("revenue")),
            "orders": (agg.get(s.pk) or {}).get("orders") or 0,
        }
        for s in stores
    ]
    qty, revenue, orders = sum(r["qty"] for r in rows), round(sum(r["revenue"] for r in rows), 2), sum(r["orders"] for r in rows)
    label = store_label(store, scope)
    if qty:
        summary = (f"{label} {period.describe()} {product.name}销量：卖出 {qty:,}{product.unit}，销售额 {yuan(revenue)}，"
                   f"{orders} 单（只计已支付订单）。")
    else:
        summary = f"{label} {period.describe()} 没有卖出{product.name}（只计已支付订单）。"
    return ToolResult("product_sales", {}, rows, summary, ["store", "product", "qty", "unit", "revenue", "orders"])


TOOL = Tool(
    "product_sales", "单品销量", "某个商品（名称、别名或商品编码）在一段时间内的销量、销售额和订单数（只计已支付订单），按门店列出。",
    params_schema({"product": {"type": "string", "description": "商品名称、别名或商品编码，如 科罗娜、青岛啤酒、B003"},
                   "store": STORE_PARAM, "period": PERIOD_PARAM}, ("product", "period")),
    product_sales, ("store", "product", "qty", "revenue", "orders"), Chart("store", "qty", "horizontal"),
    row_sentence=lambda r: f"{r['store']}：卖出 {r['qty']:,}{r['unit']}，销售额 ¥{r['revenue']:,.2f}，{r['orders']} 单",
    row_key="store",  # one product, a row per store
)
