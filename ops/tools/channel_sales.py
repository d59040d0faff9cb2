"""Paid revenue per channel and the refunds beside it."""
from __future__ import annotations

from django.db.models import Count, Sum

from ..models import Order, Store
from ..periods import Period
from .base import PERIOD_PARAM, STORE_PARAM, Chart, Tool, ToolResult, money, params_schema, placed_in, store_label, yuan


def channel_sales(*, store: Store | None, period: Period, scope: list[Store] | None = None) -> ToolResult:
    """Paid revenue and orders per channel (堂食、外卖、团购) and the refunded orders beside them:
    「上周外卖卖了多少」 and 「昨天退款了几单」 were answered with every channel's paid total.
    Refunds are counted by the order's date (the order carries no refund time), and say so."""
    orders = Order.objects.filter(placed_in(period))
    orders = orders.filter(store=store) if store else orders if scope is None else orders.filter(store__in=scope)
    sums = {(a["channel"], a["status"]): (a["amount"], a["n"])
            for a in orders.values("channel", "status").annotate(amount=Sum("total"), n=Count("id")).order_by()}
    rows = []
    for channel in Order.Channel.values:
        paid, paid_n = sums.get((channel, Order.Status.PAID), (None, 0))
        refunded, refunded_n = sums.get((channel, Order.Status.REFUNDED), (None, 0))
        rows.append({"channel": channel, "revenue": money(paid), "orders": paid_n,
                     "refunded_orders": refunded_n, "refunded_amount": money(refunded)})
    paid_total = sum(r["revenue"] for r in rows)
    for r in rows:  # 「上周外卖占比多少」
        r["revenue_share"] = round(r["revenue"] / paid_total * 100, 1) if paid_total else 0.0
    where = f"{store_label(store, scope)} {period.describe()}"
    if not any(r["orders"] or r["refunded_orders"] for r in rows):
        return ToolResult("channel_sales", {}, [], f"{where} 没有订单。", list(CHANNEL_COLUMNS))
    parts = "、".join(f"{r['channel']} {yuan(r['revenue'])}（{r['orders']} 单，占 {r['revenue_share']}%）" for r in rows)
    refunds = sum(r["refunded_orders"] for r in rows)
    refunded = round(sum(r["refunded_amount"] for r in rows), 2)
    placed = refunds + sum(r["orders"] for r in rows)  # 「退款率」: refunded orders among all orders placed
    rate = f"（占下单的 {refunds / placed * 100:.1f}%）" if placed else ""
    summary = f"{where} 按渠道：{parts}；退款 {refunds} 单{rate}，{yuan(refunded)}（退款按下单日期统计，营业额只计已支付订单）。"
    return ToolResult("channel_sales", {}, rows, summary, list(CHANNEL_COLUMNS))


CHANNEL_COLUMNS = ("channel", "revenue", "revenue_share", "orders", "refunded_orders", "refunded_amount")


TOOL = Tool(
    "channel_sales", "渠道营业额", "一段时间内按渠道（堂食、外卖、团购）的营业额和订单数（已支付），以及各渠道的退款单数和退款金额。",
    params_schema({"store": STORE_PARAM, "period": PERIOD_PARAM}, ("period",)),
    channel_sales, CHANNEL_COLUMNS, Chart("channel", "revenue"),
    row_sentence=lambda r: (
        f"{r['channel']}：营业额 ¥{r['revenue']:,.2f}（占 {r['revenue_share']}%），{r['orders']} 单"
        + (f"；退款 {r['refunded_orders']} 单，¥{r['refunded_amount']:,.2f}" if r["refunded_orders"] else "")
    ),
)
