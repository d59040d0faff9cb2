"""One product's sales per day, zeros included (「最近7天科罗娜每天卖几瓶」)."""
from __future__ import annotations

from datetime import timedelta
from zoneinfo import ZoneInfo

from django.db.models import Count, F, Sum
from django.db.models.functions import TruncDate

from ..models import Order, OrderLine, Product, Store
from ..periods import Period
from ..selectors import store_zones
from ..trading_day import DAY_STARTS_AT, day_window
from .base import PERIOD_PARAM, STORE_PARAM, Chart, Tool, ToolResult, money, params_schema, store_label, yuan
from .daily_trend import MAX_TREND_DAYS, WEEKDAY_NAMES

_SHIFT = timedelta(hours=DAY_STARTS_AT)


def product_daily(*, product: Product, store: Store | None, period: Period, scope: list[Store] | None = None) -> ToolResult:
    """How much of one product sold each trading day (paid orders only); days without a sale
    are rows with zeros. 「最近7天科罗娜每天卖几瓶」 was answered with the store's daily revenue,
    the product dropped. Each store's day runs 06:00–06:00 on its own clock, as every tool's does."""
    lines = OrderLine.objects.filter(product=product, order__status=Order.Status.PAID)
    if store:
        lines = lines.filter(order__store=store)
    elif scope is not None:
        lines = lines.filter(order__store__in=scope)
    per_day: dict = {}
    zones = store_zones()
    for name, store_ids in zones.items():
        zone = ZoneInfo(name)
        start, end = day_window(period.start, period.end, zone)
        in_zone = lines.filter(order__created_at__gte=start, order__created_at__lt=end)
        if len(zones) > 1:
            in_zone = in_zone.filter(order__store_id__in=store_ids)
        # The trading day: the date on the store's clock six hours earlier (ops.trading_day).
        day = TruncDate(F("order__created_at") - _SHIFT, tzinfo=zone)
        for a in in_zone.annotate(day=day).values("day").annotate(qty=Sum("qty"), revenue=Sum("amount"),
                                                                 orders=Count("order_id", distinct=True)).order_by():
            got = per_day.setdefault(a["day"], {"qty": 0, "revenue": 0, "orders": 0})
            got["qty"] += a["qty"] or 0
            got["revenue"] += a["revenue"] or 0
            got["orders"] += a["orders"] or 0
    rows = []
    for i in range(period.days):
        day = period.start + timedelta(days=i)
        a = per_day.get(day, {})
        rows.append({"date": day.isoformat(), "weekday": f"周{WEEKDAY_NAMES[day.weekday()]}",
                     "qty": a.get("qty", 0), "unit": product.unit, "revenue": money(a.get("revenue")), "orders": a.get("orders", 0)})
    label, qty = store_label(store, scope), sum(r["qty"] for r in rows)
    if qty:
        best = max(rows, key=lambda r: r["qty"])
        summary = (f"{label} {period.describe()} {product.name}每天的销量：合计 {qty:,}{product.unit}，销售额 "
                   f"{yuan(round(sum(r['revenue'] for r in rows), 2))}；最多 {best['date']}（{best['weekday']}）{best['qty']:,}{product.unit}"
                   f"（只计已支付订单）。")
    else:
        summary = f"{label} {period.describe()} 没有卖出{product.name}（只计已支付订单）。"
    return ToolResult("product_daily", {}, rows, summary, ["date", "weekday", "qty", "unit", "revenue", "orders"])


TOOL = Tool(
    "product_daily", "单品每日销量",
    "某个商品（名称、别名或商品编码）在一段时间内（最多 92 天）每天的销量、销售额和订单数（只计已支付订单），没有卖出的日子记为 0。",
    params_schema({"product": {"type": "string", "description": "商品名称、别名或商品编码，如 科罗娜、青岛啤酒、B003"},
                   "store": STORE_PARAM, "period": PERIOD_PARAM}, ("product", "period")),
    product_daily, ("date", "weekday", "qty", "revenue", "orders"), Chart("date", "qty"),
    row_sentence=lambda r: f"{r['date']}（{r['weekday']}）：{r['qty']:,}{r['unit']}，¥{r['revenue']:,.2f}，{r['orders']} 单",
    max_days=MAX_TREND_DAYS,
)
