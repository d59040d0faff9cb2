"""Paid revenue, orders and average ticket of a store or of the caller's stores."""
from __future__ import annotations

from ..models import Store
from ..periods import Period
from .base import PERIOD_PARAM, STORE_PARAM, Tool, ToolResult, money, paid_sales, params_schema, store_label, yuan


def store_sales(*, store: Store | None, period: Period, scope: list[Store] | None = None) -> ToolResult:
    rows = []
    for s, revenue, orders in paid_sales(period, store, scope):
        revenue, orders = money(revenue), orders or 0
        rows.append(
            {
                "store": s.name,
                "revenue": revenue,
                "orders": orders,
                "avg_ticket": round(revenue / orders, 2) if orders else 0.0,
            }
        )
    total_revenue = round(sum(r["revenue"] for r in rows), 2)
    total_orders = sum(r["orders"] for r in rows)
    avg = round(total_revenue / total_orders, 2) if total_orders else 0.0
    summary = (
        f"{store_label(store, scope)} {period.describe()}：营业额 {yuan(total_revenue)}，"
        f"订单 {total_orders} 单，客单价 {yuan(avg)}（只计已支付订单）。"
    )
    if total_orders == 0:
        summary = f"{store_label(store, scope)} {period.describe()} 没有已支付订单（营业额 ¥0.00）。"
    return ToolResult("store_sales", {}, rows, summary, ["store", "revenue", "orders", "avg_ticket"])


TOOL = Tool(
    "store_sales", "门店营业额", "某门店或全部门店在一段时间内的营业额、订单数和客单价（只计已支付订单）。",
    params_schema({"store": STORE_PARAM, "period": PERIOD_PARAM}, ("period",)),
    store_sales, ("store", "revenue", "orders", "avg_ticket"),
    row_sentence=lambda r: f"{r['store']}：营业额 ¥{r['revenue']:,.2f}，订单 {r['orders']} 单，客单价 ¥{r['avg_ticket']:,.2f}",
)
