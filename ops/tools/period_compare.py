"""Two periods side by side and the change between them."""
from __future__ import annotations

from ..models import Store
from ..periods import Period
from .base import PERIOD_PARAM, STORE_PARAM, Chart, Tool, ToolResult, money, paid_sales, params_schema, store_label, yuan


def period_compare(*, store: Store | None, period: Period, baseline: Period, scope: list[Store] | None = None) -> ToolResult:
    """Paid revenue, orders and average ticket of two periods side by side, and the change
    (「上周跟上上周比涨了还是跌了」 got one of the two figures, 「一次只能查一段」 the other time)."""
    rows = []
    for p in (period, baseline):
        sales = paid_sales(p, store, scope)
        revenue = round(sum(money(r) for _, r, _ in sales), 2)
        orders = sum(n or 0 for _, _, n in sales)
        rows.append({"period": p.label, "start": p.start.isoformat(), "end": p.end.isoformat(), "days": p.days,
                     "revenue": revenue, "orders": orders, "avg_ticket": round(revenue / orders, 2) if orders else 0.0})
    now, before = rows
    delta = round(now["revenue"] - before["revenue"], 2)
    change = "持平" if not delta else f"{'增加' if delta > 0 else '减少'} {yuan(abs(delta))}" + (
        f"（{delta / before['revenue'] * 100:+.1f}%）" if before["revenue"] else "")
    orders_delta = now["orders"] - before["orders"]
    orders_change = "订单数持平" if not orders_delta else f"订单{'增加' if orders_delta > 0 else '减少'} {abs(orders_delta)} 单"
    summary = (f"{store_label(store, scope)} {period.label}对比{baseline.label}：{period.describe()} 营业额 {yuan(now['revenue'])}"
               f"（{now['orders']} 单），{baseline.describe()} {yuan(before['revenue'])}（{before['orders']} 单）；"
               f"营业额{change}，{orders_change}（只计已支付订单）。")
    if now["days"] != before["days"]:  # unequal lengths: the daily averages are what compare
        per_day = [round(r["revenue"] / r["days"], 2) for r in rows]
        # 「营业额增加 19.7%」 over 30 days against 24 read as growth while each day sold less: the daily figure says which.
        daily = "日均持平" if per_day[0] == per_day[1] else f"{baseline.label}没有销售" if not per_day[1] else \
            f"按日均算{'增加' if per_day[0] > per_day[1] else '减少'} {abs(per_day[0] / per_day[1] - 1) * 100:.1f}%"
        summary += f"两段天数不同（{now['days']} 天 / {before['days']} 天），日均营业额 {yuan(per_day[0])} / {yuan(per_day[1])}，{daily}。"
    return ToolResult("period_compare", {"baseline": baseline.as_params()}, rows, summary, list(PERIOD_COMPARE_COLUMNS))


PERIOD_COMPARE_COLUMNS = ("period", "start", "end", "days", "revenue", "orders", "avg_ticket")


TOOL = Tool(
    "period_compare", "两段时间对比", "某门店或全部门店两段时间（如上周和上上周）的营业额、订单数和客单价，以及营业额和订单的变化。",
    params_schema({"store": STORE_PARAM, "period": PERIOD_PARAM,
                   "baseline": {"type": "string", "description": "对比的时间段，中文表达，如 上上周、上月、11月1日到7日"}},
                  ("period", "baseline")),
    period_compare, PERIOD_COMPARE_COLUMNS, Chart("period", "revenue"),
    row_sentence=lambda r: (
        (r["period"] if r["start"] in r["period"] else f"{r['period']}（{r['start']} 至 {r['end']}）")
        + f"：营业额 ¥{r['revenue']:,.2f}，{r['orders']} 单，客单价 ¥{r['avg_ticket']:,.2f}"
    ),
)
