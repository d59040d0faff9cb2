"""Orders and revenue per hour of the trading day."""
from __future__ import annotations

from zoneinfo import ZoneInfo

from django.db.models import Count, Func, IntegerField, Sum
from django.db.models.functions import ExtractHour

from ..models import Store
from ..periods import Period
from ..selectors import store_zones
from ..trading_day import DAY_STARTS_AT, TZ
from .base import PERIOD_PARAM, STORE_PARAM, Chart, Tool, ToolResult, money, paid_orders, params_schema, store_label


class LocalHour(Func):
    """The hour on the order's store's own clock (「晚上九点最忙」 is nine in that store)."""

    template = "EXTRACT(HOUR FROM %(expressions)s)::integer"
    arg_joiner = " AT TIME ZONE "
    output_field = IntegerField()


def _hour():
    zones = store_zones()
    if len(zones) <= 1:  # one clock for the chain: the hour in that zone, as before any store had its own
        return ExtractHour("created_at", tzinfo=ZoneInfo(next(iter(zones), str(TZ))))
    return LocalHour("created_at", "store__timezone")


def hourly_peak(*, store: Store | None, period: Period, scope: list[Store] | None = None) -> ToolResult:
    agg = list(
        paid_orders(period, store, scope)
        .annotate(hour=_hour())
        .values("hour")
        .annotate(orders=Count("*"), revenue=Sum("total"))
        .order_by("hour")
    )
    # In the order of a night's trade: 06:00 … 23:00, then 00:00 … 05:00 (a bar's small hours
    # come after its evening, not before it).
    agg.sort(key=lambda a: (a["hour"] - DAY_STARTS_AT) % 24)
    rows = [{"hour": f"{a['hour']:02d}:00", "orders": a["orders"], "revenue": money(a["revenue"])} for a in agg]
    if rows:
        top = sorted(rows, key=lambda r: r["orders"], reverse=True)[:3]
        listing = "、".join(f"{r['hour']}（{r['orders']} 单）" for r in top)
        summary = f"{store_label(store, scope)} {period.describe()} 订单最多的时段是 {listing}。"  # a sentence, not a heading
    else:
        summary = f"{store_label(store, scope)} {period.describe()} 没有已支付订单。"
    return ToolResult("hourly_peak", {}, rows, summary, ["hour", "orders", "revenue"])


TOOL = Tool(
    "hourly_peak", "高峰时段", "一段时间内按小时统计的订单数和营业额，找出最忙的时段。",
    params_schema({"store": STORE_PARAM, "period": PERIOD_PARAM}, ("period",)),
    hourly_peak, ("hour", "orders", "revenue"), Chart("hour", "orders"),
    row_sentence=lambda r: f"{r['hour']}：{r['orders']} 单，¥{r['revenue']:,.2f}",
)
