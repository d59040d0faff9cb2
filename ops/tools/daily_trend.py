"""Revenue and orders per day, zeros included; a series per store on request."""
from __future__ import annotations

from datetime import timedelta

from django.db.models import Sum

from ..models import Store, StoreDaySales
from ..periods import Period
from .base import PERIOD_PARAM, STORE_PARAM, Chart, Tool, ToolResult, money, params_schema, store_label, yuan

WEEKDAY_NAMES = "一二三四五六日"
MAX_TREND_DAYS = 92


def daily_trend(*, store: Store | None, period: Period, scope: list[Store] | None = None, by_store: bool = False) -> ToolResult:
    """Revenue and orders per day; days without sales are rows with zeros, not gaps. With
    `by_store` and no one store asked for, one series per store (「11月各店每天营业额趋势」 was
    the chain's total): a row per day and store."""
    days = StoreDaySales.objects.filter(day__gte=period.start, day__lte=period.end)  # the daily rollup
    if store:
        days = days.filter(store=store)
    elif scope is not None:
        days = days.filter(store__in=scope)
    stores = list(scope if scope is not None else Store.objects.order_by("code")) if by_store and store is None else []
    if len(stores) > 1:
        return _daily_trend_by_store(days, period, stores, scope)
    agg = {a["day"]: a for a in days.values("day").annotate(orders=Sum("orders"), revenue=Sum("revenue")).order_by()}
    rows = []
    for i in range(period.days):
        day = period.start + timedelta(days=i)
        a = agg.get(day, {})
        rows.append({"date": day.isoformat(), "weekday": f"周{WEEKDAY_NAMES[day.weekday()]}",
                     "revenue": money(a.get("revenue")), "orders": a.get("orders", 0)})
    total = round(sum(r["revenue"] for r in rows), 2)
    if any(r["orders"] for r in rows):
        best = max(rows, key=lambda r: r["revenue"])
        summary = (f"{store_label(store, scope)} {period.describe()} 每天的营业额：合计 {yuan(total)}，"
                   f"订单 {sum(r['orders'] for r in rows)} 单；最高 {best['date']}（{best['weekday']}）{yuan(best['revenue'])}。")
    else:
        summary = f"{store_label(store, scope)} {period.describe()} 没有已支付订单（营业额 ¥0.00）。"
    return ToolResult("daily_trend", {}, rows, summary, ["date", "weekday", "revenue", "orders"])


def _daily_trend_by_store(days, period: Period, stores: list[Store], scope) -> ToolResult:
    agg = {(a["day"], a["store_id"]): a for a in days.values("day", "store_id").annotate(orders=Sum("orders"), revenue=Sum("revenue")).order_by()}
    rows = []
    for i in range(period.days):
        day = period.start + timedelta(days=i)
        for s in stores:
            a = agg.get((day, s.pk), {})
            rows.append({"date": day.isoformat(), "weekday": f"周{WEEKDAY_NAMES[day.weekday()]}", "store": s.name,
                         "revenue": money(a.get("revenue")), "orders": a.get("orders", 0)})
    parts = []
    for s in stores:
        mine = [r for r in rows if r["store"] == s.name]
        if any(r["orders"] for r in mine):
            best = max(mine, key=lambda r: r["revenue"])
            parts.append(f"{s.name}合计 {yuan(round(sum(r['revenue'] for r in mine), 2))}（最高 {best['date']} {yuan(best['revenue'])}）")
        else:
            parts.append(f"{s.name}没有已支付订单")
    summary = f"{store_label(None, scope)} {period.describe()} 各门店每天的营业额：{'；'.join(parts)}。"
    return ToolResult("daily_trend", {}, rows, summary, ["date", "weekday", "store", "revenue", "orders"])


TOOL = Tool(
    "daily_trend", "每日趋势", "一段时间内（最多 92 天）每天的营业额和订单数，没有销售的日子记为 0；by_store 为真且不指定门店时，每家门店一条曲线。",
    params_schema({"store": STORE_PARAM, "period": PERIOD_PARAM,
                   "by_store": {"type": "boolean", "default": False, "description": "按门店分开（每家门店一组数据）；指定了门店时不起作用"}},
                  ("period",)),
    daily_trend, ("date", "weekday", "revenue", "orders"), Chart("date", "revenue", series="store"),
    row_sentence=lambda r: (f"{r['store']} " if r.get("store") else "") + f"{r['date']}（{r['weekday']}）：¥{r['revenue']:,.2f}，{r['orders']} 单",
    max_days=MAX_TREND_DAYS,
)
