"""Whitelisted query tools: the only way the agent, the API and MCP read ops facts.

Each tool validates its parameters (store against the whitelist, period through the
period parser, bounded integers) and runs parameterised ORM queries only. This module
never builds SQL from user text. Every call returns a ToolResult with the exact
parameters used, the rows and a one-line summary.

Every call is made on behalf of a caller (`run_tool(..., user=...)`): the tool's permission is
checked (403 and an audit row otherwise), a store outside the caller's scope is answered
exactly like an unknown store, "all stores" means the caller's stores, and each member
balance lookup is audited.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Count, F, FilteredRelation, Q, Sum
from django.db.models.functions import ExtractHour

from core.audit import audit_collapsed
from core.roles import require
from core.scoping import ALL, store_ids_for

from .models import Inventory, Member, Order, OrderLine, Product, Store, StoreDaySales, mask_name, mask_phone
from .periods import Period, PeriodError, bound_to_data, parse_period
from .selectors import UnknownProduct, UnknownStore, first_sale_date, resolve_product, resolve_store_for, stores_in_city_for
from .trading_day import DAY_STARTS_AT, TZ, local_today  # noqa: F401 (local_today: imported from here by callers)

MAX_TOP_N = 50
MAX_COMPARED = 10  # stores named in one comparison
VELOCITY_DAYS = 7


@dataclass
class ToolResult:
    tool: str
    params: dict
    rows: list[dict]
    summary: str
    columns: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {**asdict(self), "column_labels": {k: column(k).label for k in self.columns}}


@dataclass(frozen=True)
class Column:
    """How a result column reads to a person: its Chinese label, its kind (money, count,
    qty, percent, days, text) and, for quantities, the row key holding the unit."""

    label: str
    kind: str = "text"
    unit: str = ""  # a fixed unit (「单」) or, with unit_key, none
    unit_key: str = ""  # the row key whose value is this row's unit (「箱」「瓶」)

    def as_dict(self) -> dict:
        return asdict(self)


# The one home of column meaning: the chat tables, the API schema and MCP read it from here.
COLUMNS: dict[str, Column] = {
    "rank": Column("排名", "rank"),
    "channel": Column("渠道"),
    "period": Column("时间段"),
    "start": Column("开始日期", "date"),
    "end": Column("结束日期", "date"),
    "days": Column("天数", "count", unit="天"),
    "refunded_orders": Column("退款单数", "count", unit="单"),
    "refunded_amount": Column("退款金额", "money"),
    "store": Column("门店"),
    "revenue": Column("营业额", "money"),
    "orders": Column("订单数", "count", unit="单"),
    "avg_ticket": Column("客单价", "money"),
    "revenue_share": Column("营业额占比", "percent"),
    "product": Column("商品"),
    "category": Column("品类"),
    "qty": Column("销量", "qty", unit_key="unit"),
    "unit": Column("单位"),
    "hour": Column("时段"),
    "date": Column("日期", "date"),
    "weekday": Column("星期"),
    "sku": Column("商品编码"),
    "on_hand": Column("在库", "qty", unit_key="unit"),
    "safety_stock": Column("安全库存", "qty", unit_key="unit"),
    "sold_7d": Column("近7天销量", "qty", unit_key="unit"),
    "velocity_per_day": Column("日均销量", "qty", unit_key="unit"),
    "days_of_cover": Column("可售天数", "days", unit="天"),
    "suggested_qty": Column("建议补货", "qty", unit_key="unit"),
    "member": Column("会员号"),
    "name": Column("姓名"),
    "phone": Column("手机号"),
    "home_store": Column("开卡门店"),
    "principal_balance": Column("储值本金", "money"),
    "bonus_balance": Column("赠送余额", "money"),
    "total_balance": Column("合计余额", "money"),
    "usable_here": Column("本店可用", "money"),
}


def column(key: str) -> Column:
    return COLUMNS.get(key) or Column(key)


def format_cell(key: str, row: dict) -> str:
    """A value as staff read it: ¥33,752.00, 12箱, 35.2%, 3.5天; empty for no value."""
    value, col = row.get(key), column(key)
    if value is None or value == "":
        return "—" if col.kind in ("days", "qty") else ""
    if col.kind == "money":
        return _yuan(float(value))
    if col.kind == "percent":
        return f"{value}%"
    if col.kind in ("qty", "count", "days"):
        number = f"{value:,}" if isinstance(value, int) else f"{value:g}" if isinstance(value, float) else str(value)
        return f"{number}{row.get(col.unit_key, '') if col.unit_key else col.unit}"
    return str(value)


@dataclass(frozen=True)
class Chart:
    """A data answer worth looking at: one bar per row, labelled by `label`, sized by `value`."""

    label: str
    value: str
    orientation: str = "vertical"  # horizontal for long labels (product names)
    series: str = ""  # rows carrying this key are drawn as one line per value (one store each)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    schema: dict  # JSON schema of the parameters
    func: Callable[..., ToolResult]
    columns: tuple[str, ...] = ()  # what a person sees, in order (unit folds into its quantity)
    chart: Chart | None = None
    perm: str = "ops.view_sales"  # what the caller needs; stores are scoped by the same permission

    def column_meta(self) -> list[dict]:
        return [{"key": k, **column(k).as_dict()} for k in self.columns]


def _bounds(period: Period) -> tuple[datetime, datetime]:
    """The period's trading days as instants: from 06:00 of its first day to 06:00 after its last."""
    opens = time(DAY_STARTS_AT)
    start = datetime.combine(period.start, opens, tzinfo=TZ)
    end = datetime.combine(period.end + timedelta(days=1), opens, tzinfo=TZ)
    return start, end


def _money(value: Decimal | None) -> float:
    return float((value or Decimal("0")).quantize(Decimal("0.01")))


def _yuan(value: float) -> str:
    return f"¥{value:,.2f}"


def _store_label(store: Store | None, scope: list[Store] | None = None) -> str:
    if store:
        return store.name
    if scope is None:
        return "全部门店"
    return "、".join(s.name for s in scope) if len(scope) <= 3 else f"你的 {len(scope)} 家门店"


def _paid_orders(period: Period, store: Store | None, scope: list[Store] | None = None):
    start, end = _bounds(period)
    qs = Order.objects.filter(status=Order.Status.PAID, created_at__gte=start, created_at__lt=end)
    if store:
        return qs.filter(store=store)
    return qs if scope is None else qs.filter(store__in=scope)


# --- tools ---------------------------------------------------------------------------------


def paid_sales(period: Period, store: Store | None, scope: list[Store] | None = None) -> list[tuple[Store, Decimal | None, int | None]]:
    """(store, revenue, paid orders) over the period's local days, in one query on the
    trigger-maintained daily rollup (~30 rows a store for a month, not every order).
    Without a store: every store in `scope` (None: every store)."""
    if store:
        agg = StoreDaySales.objects.filter(store=store, day__gte=period.start, day__lte=period.end).aggregate(
            revenue=Sum("revenue"), orders=Sum("orders"))
        return [(store, agg["revenue"], agg["orders"])]
    in_period = FilteredRelation("day_sales", condition=Q(day_sales__day__gte=period.start, day_sales__day__lte=period.end))
    stores = Store.objects.annotate(in_period=in_period).annotate(
        paid_revenue=Sum("in_period__revenue"), paid_orders=Sum("in_period__orders")).order_by(*Store._meta.ordering)
    if scope is not None:
        stores = stores.filter(pk__in=[s.pk for s in scope])
    return [(s, s.paid_revenue, s.paid_orders) for s in stores]


def store_sales(*, store: Store | None, period: Period, scope: list[Store] | None = None) -> ToolResult:
    rows = []
    for s, revenue, orders in paid_sales(period, store, scope):
        revenue, orders = _money(revenue), orders or 0
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
        f"{_store_label(store, scope)} {period.describe()}：营业额 {_yuan(total_revenue)}，"
        f"订单 {total_orders} 单，客单价 {_yuan(avg)}（只计已支付订单）。"
    )
    if total_orders == 0:
        summary = f"{_store_label(store, scope)} {period.describe()} 没有已支付订单（营业额 ¥0.00）。"
    return ToolResult("store_sales", {}, rows, summary, ["store", "revenue", "orders", "avg_ticket"])


def period_compare(*, store: Store | None, period: Period, baseline: Period, scope: list[Store] | None = None) -> ToolResult:
    """Paid revenue, orders and average ticket of two periods side by side, and the change
    (「上周跟上上周比涨了还是跌了」 got one of the two figures, 「一次只能查一段」 the other time)."""
    rows = []
    for p in (period, baseline):
        sales = paid_sales(p, store, scope)
        revenue = round(sum(_money(r) for _, r, _ in sales), 2)
        orders = sum(n or 0 for _, _, n in sales)
        rows.append({"period": p.label, "start": p.start.isoformat(), "end": p.end.isoformat(), "days": p.days,
                     "revenue": revenue, "orders": orders, "avg_ticket": round(revenue / orders, 2) if orders else 0.0})
    now, before = rows
    delta = round(now["revenue"] - before["revenue"], 2)
    change = "持平" if not delta else f"{'增加' if delta > 0 else '减少'} {_yuan(abs(delta))}" + (
        f"（{delta / before['revenue'] * 100:+.1f}%）" if before["revenue"] else "")
    orders_delta = now["orders"] - before["orders"]
    orders_change = "订单数持平" if not orders_delta else f"订单{'增加' if orders_delta > 0 else '减少'} {abs(orders_delta)} 单"
    summary = (f"{_store_label(store, scope)} {period.label}对比{baseline.label}：{period.describe()} 营业额 {_yuan(now['revenue'])}"
               f"（{now['orders']} 单），{baseline.describe()} {_yuan(before['revenue'])}（{before['orders']} 单）；"
               f"营业额{change}，{orders_change}（只计已支付订单）。")
    if now["days"] != before["days"]:  # unequal lengths: the daily averages are what compare
        per_day = [round(r["revenue"] / r["days"], 2) for r in rows]
        summary += f"两段天数不同（{now['days']} 天 / {before['days']} 天），日均营业额 {_yuan(per_day[0])} / {_yuan(per_day[1])}。"
    return ToolResult("period_compare", {"baseline": baseline.as_params()}, rows, summary, list(PERIOD_COMPARE_COLUMNS))


PERIOD_COMPARE_COLUMNS = ("period", "start", "end", "days", "revenue", "orders", "avg_ticket")


def channel_sales(*, store: Store | None, period: Period, scope: list[Store] | None = None) -> ToolResult:
    """Paid revenue and orders per channel (堂食、外卖、团购) and the refunded orders beside them:
    「上周外卖卖了多少」 and 「昨天退款了几单」 were answered with every channel's paid total.
    Refunds are counted by the order's date (the order carries no refund time), and say so."""
    start, end = _bounds(period)
    orders = Order.objects.filter(created_at__gte=start, created_at__lt=end)
    orders = orders.filter(store=store) if store else orders if scope is None else orders.filter(store__in=scope)
    sums = {(a["channel"], a["status"]): (a["amount"], a["n"])
            for a in orders.values("channel", "status").annotate(amount=Sum("total"), n=Count("id")).order_by()}
    rows = []
    for channel in Order.Channel.values:
        paid, paid_n = sums.get((channel, Order.Status.PAID), (None, 0))
        refunded, refunded_n = sums.get((channel, Order.Status.REFUNDED), (None, 0))
        rows.append({"channel": channel, "revenue": _money(paid), "orders": paid_n,
                     "refunded_orders": refunded_n, "refunded_amount": _money(refunded)})
    paid_total = sum(r["revenue"] for r in rows)
    for r in rows:  # 「上周外卖占比多少」
        r["revenue_share"] = round(r["revenue"] / paid_total * 100, 1) if paid_total else 0.0
    where = f"{_store_label(store, scope)} {period.describe()}"
    if not any(r["orders"] or r["refunded_orders"] for r in rows):
        return ToolResult("channel_sales", {}, [], f"{where} 没有订单。", list(CHANNEL_COLUMNS))
    parts = "、".join(f"{r['channel']} {_yuan(r['revenue'])}（{r['orders']} 单，占 {r['revenue_share']}%）" for r in rows)
    refunds = sum(r["refunded_orders"] for r in rows)
    refunded = round(sum(r["refunded_amount"] for r in rows), 2)
    placed = refunds + sum(r["orders"] for r in rows)  # 「退款率」: refunded orders among all orders placed
    rate = f"（占下单的 {refunds / placed * 100:.1f}%）" if placed else ""
    summary = f"{where} 按渠道：{parts}；退款 {refunds} 单{rate}，{_yuan(refunded)}（退款按下单日期统计，营业额只计已支付订单）。"
    return ToolResult("channel_sales", {}, rows, summary, list(CHANNEL_COLUMNS))


CHANNEL_COLUMNS = ("channel", "revenue", "revenue_share", "orders", "refunded_orders", "refunded_amount")


def top_products(*, store: Store | None, period: Period, n: int = 5, category: str | None = None,
                 scope: list[Store] | None = None) -> ToolResult:
    start, end = _bounds(period)
    qs = OrderLine.objects.filter(
        order__status=Order.Status.PAID, order__created_at__gte=start, order__created_at__lt=end
    )
    if store:
        qs = qs.filter(order__store=store)
    elif scope is not None:
        qs = qs.filter(order__store__in=scope)
    if category:
        qs = qs.filter(product__category=category)
    agg = list(qs.values("product_id").annotate(qty=Sum("qty"), revenue=Sum("amount")).order_by("-qty", "-revenue", "product_id")[:n])
    products = Product.objects.in_bulk([a["product_id"] for a in agg])
    rows = [
        {
            "rank": i,
            "product": products[a["product_id"]].name,
            "category": products[a["product_id"]].category,
            "qty": a["qty"],
            "unit": products[a["product_id"]].unit,
            "revenue": _money(a["revenue"]),
        }
        for i, a in enumerate(agg, start=1)
    ]
    what = f"{category}类" if category else ""
    if rows:
        listing = "；".join(f"{r['rank']}. {r['product']} {r['qty']}{r['unit']}" for r in rows)
        summary = f"{_store_label(store, scope)} {period.describe()} {what}销量前 {n}：{listing}。"
    else:
        summary = f"{_store_label(store, scope)} {period.describe()} 没有{what}销售记录。"
    return ToolResult("top_products", {}, rows, summary, ["rank", "product", "category", "qty", "unit", "revenue"])


def product_sales(*, product: Product, store: Store | None, period: Period, scope: list[Store] | None = None) -> ToolResult:
    """How much of one product sold (paid orders only): one row per store, zeros included,
    so 「科罗娜卖了几瓶」 is answered with bottles, not with the store's whole revenue."""
    start, end = _bounds(period)
    qs = OrderLine.objects.filter(product=product, order__status=Order.Status.PAID,
                                  order__created_at__gte=start, order__created_at__lt=end)
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
            "revenue": _money((agg.get(s.pk) or {}).get("revenue")),
            "orders": (agg.get(s.pk) or {}).get("orders") or 0,
        }
        for s in stores
    ]
    qty, revenue, orders = sum(r["qty"] for r in rows), round(sum(r["revenue"] for r in rows), 2), sum(r["orders"] for r in rows)
    label = _store_label(store, scope)
    if qty:
        summary = (f"{label} {period.describe()} {product.name}销量：卖出 {qty:,}{product.unit}，销售额 {_yuan(revenue)}，"
                   f"{orders} 单（只计已支付订单）。")
    else:
        summary = f"{label} {period.describe()} 没有卖出{product.name}（只计已支付订单）。"
    return ToolResult("product_sales", {}, rows, summary, ["store", "product", "qty", "unit", "revenue", "orders"])


def compare_stores(*, period: Period, metric: str = "revenue", scope: list[Store] | None = None,
                   stores: list[Store] | None = None) -> ToolResult:
    """Stores ranked by one metric; `stores` (two or more, already within the caller's scope)
    ranks only those — 「天河跟福田比」 is a comparison of two, not a league table of four."""
    named = stores is not None
    if named:
        scope = stores
    base = store_sales(store=None, period=period, scope=scope)
    rows = sorted(base.rows, key=lambda r: r[metric], reverse=True)
    total_revenue = sum(r["revenue"] for r in rows) or 0.0
    for rank, r in enumerate(rows, start=1):
        r["rank"] = rank
        r["revenue_share"] = round(r["revenue"] / total_revenue * 100, 1) if total_revenue else 0.0
    names = {"revenue": "营业额", "orders": "订单数", "avg_ticket": "客单价"}
    listing = "；".join(
        f"{r['rank']}. {r['store']} {_yuan(r['revenue']) if metric != 'orders' else str(r['orders']) + ' 单'}"
        + (f"（客单价 {_yuan(r['avg_ticket'])}）" if metric == "avg_ticket" else "")
        for r in rows
    )
    summary = f"{period.describe()} 各门店按{names[metric]}排名：{listing}。"
    if named:
        summary = f"{period.describe()} {'、'.join(s.name for s in stores)}按{names[metric]}比较：{listing}。"
    elif scope is not None and len(scope) == 1:  # a ranking of one would read as "first place"
        only = rows[0] if rows else {"revenue": 0.0, "orders": 0}
        summary = (f"{period.describe()} 你能查看的门店只有{scope[0].name}一家，没有可以对比的门店；"
                   f"{scope[0].name}营业额 {_yuan(only['revenue'])}，{only['orders']} 单。")
    return ToolResult("compare_stores", {}, rows, summary, ["rank", "store", "revenue", "orders", "avg_ticket", "revenue_share"])


def hourly_peak(*, store: Store | None, period: Period, scope: list[Store] | None = None) -> ToolResult:
    agg = list(
        _paid_orders(period, store, scope)
        .annotate(hour=ExtractHour("created_at", tzinfo=TZ))
        .values("hour")
        .annotate(orders=Count("*"), revenue=Sum("total"))
        .order_by("hour")
    )
    # In the order of a night's trade: 06:00 … 23:00, then 00:00 … 05:00 (a bar's small hours
    # come after its evening, not before it).
    agg.sort(key=lambda a: (a["hour"] - DAY_STARTS_AT) % 24)
    rows = [{"hour": f"{a['hour']:02d}:00", "orders": a["orders"], "revenue": _money(a["revenue"])} for a in agg]
    if rows:
        top = sorted(rows, key=lambda r: r["orders"], reverse=True)[:3]
        listing = "、".join(f"{r['hour']}（{r['orders']} 单）" for r in top)
        summary = f"{_store_label(store, scope)} {period.describe()} 订单最多的时段是 {listing}。"  # a sentence, not a heading
    else:
        summary = f"{_store_label(store, scope)} {period.describe()} 没有已支付订单。"
    return ToolResult("hourly_peak", {}, rows, summary, ["hour", "orders", "revenue"])


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
                     "revenue": _money(a.get("revenue")), "orders": a.get("orders", 0)})
    total = round(sum(r["revenue"] for r in rows), 2)
    if any(r["orders"] for r in rows):
        best = max(rows, key=lambda r: r["revenue"])
        summary = (f"{_store_label(store, scope)} {period.describe()} 每天的营业额：合计 {_yuan(total)}，"
                   f"订单 {sum(r['orders'] for r in rows)} 单；最高 {best['date']}（{best['weekday']}）{_yuan(best['revenue'])}。")
    else:
        summary = f"{_store_label(store, scope)} {period.describe()} 没有已支付订单（营业额 ¥0.00）。"
    return ToolResult("daily_trend", {}, rows, summary, ["date", "weekday", "revenue", "orders"])


def _daily_trend_by_store(days, period: Period, stores: list[Store], scope) -> ToolResult:
    agg = {(a["day"], a["store_id"]): a for a in days.values("day", "store_id").annotate(orders=Sum("orders"), revenue=Sum("revenue")).order_by()}
    rows = []
    for i in range(period.days):
        day = period.start + timedelta(days=i)
        for s in stores:
            a = agg.get((day, s.pk), {})
            rows.append({"date": day.isoformat(), "weekday": f"周{WEEKDAY_NAMES[day.weekday()]}", "store": s.name,
                         "revenue": _money(a.get("revenue")), "orders": a.get("orders", 0)})
    parts = []
    for s in stores:
        mine = [r for r in rows if r["store"] == s.name]
        if any(r["orders"] for r in mine):
            best = max(mine, key=lambda r: r["revenue"])
            parts.append(f"{s.name}合计 {_yuan(round(sum(r['revenue'] for r in mine), 2))}（最高 {best['date']} {_yuan(best['revenue'])}）")
        else:
            parts.append(f"{s.name}没有已支付订单")
    summary = f"{_store_label(None, scope)} {period.describe()} 各门店每天的营业额：{'；'.join(parts)}。"
    return ToolResult("daily_trend", {}, rows, summary, ["date", "weekday", "store", "revenue", "orders"])


def restock_suggestion(on_hand: int, safety_stock: int, sold: int, cover_days: int = 7) -> int:
    """Units to order (the SOP): safety stock + `cover_days` of sales at the last VELOCITY_DAYS'
    daily average − on hand. Integer arithmetic: 62 sold became 62.02 (rounded average) and
    29 became 29.000000000000004 (float), and ceil made either one more."""
    return max(0, safety_stock + -(-sold * cover_days // VELOCITY_DAYS) - on_hand)


def _stock_rows(items: list[Inventory], today: date) -> tuple[list[dict], Period]:
    """Inventory rows with the last week's sales: velocity, days of cover, what to order."""
    window = Period(today - timedelta(days=VELOCITY_DAYS), today - timedelta(days=1), f"近{VELOCITY_DAYS}天")
    start, end = _bounds(window)
    sold = {
        (a["order__store_id"], a["product_id"]): a["qty"]
        for a in OrderLine.objects.filter(
            order__status=Order.Status.PAID,
            order__created_at__gte=start,
            order__created_at__lt=end,
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


def _inventory(store: Store | None, scope: list[Store] | None):
    items = Inventory.objects.select_related("store", "product")
    if store:
        return items.filter(store=store)
    return items.filter(store__in=scope) if scope is not None else items


STOCK_COLUMNS = ("store", "product", "on_hand", "safety_stock", "sold_7d", "velocity_per_day", "days_of_cover", "suggested_qty")


def low_stock(*, store: Store | None, today: date | None = None, scope: list[Store] | None = None) -> ToolResult:
    items = list(_inventory(store, scope).filter(on_hand__lt=F("safety_stock")).order_by("store__code", "product__sku"))
    rows, window = _stock_rows(items, today or local_today())
    if rows:
        listing = "；".join(f"{r['store']} {r['product']} 在库 {r['on_hand']}{r['unit']}（安全库存 {r['safety_stock']}）" for r in rows)
        summary = f"{_store_label(store, scope)} 低于安全库存的商品共 {len(rows)} 项：{listing}。"
    else:
        summary = f"{_store_label(store, scope)} 目前没有低于安全库存的商品。"
    return ToolResult("low_stock", {"velocity_window": window.as_params()}, rows, summary, list(STOCK_COLUMNS))


def product_stock(*, product: Product, store: Store | None, today: date | None = None, scope: list[Store] | None = None) -> ToolResult:
    """One product's stock in each of the caller's stores, whatever its level (「黑牌还剩几瓶」)."""
    items = list(_inventory(store, scope).filter(product=product).order_by("store__code"))
    rows, window = _stock_rows(items, today or local_today())
    where = _store_label(store, scope)
    if rows:
        listing = "；".join(
            f"{r['store']} 在库 {r['on_hand']}{r['unit']}（安全库存 {r['safety_stock']}，"
            + ("低于安全库存" if r["on_hand"] < r["safety_stock"] else "不低于安全库存") + "）" for r in rows)
        summary = f"{product.name}的库存：{listing}。"
    else:
        summary = f"{where}没有{product.name}的库存记录。"
    return ToolResult("product_stock", {"velocity_window": window.as_params()}, rows, summary, list(STOCK_COLUMNS))


def member_balance(*, member: Member, here: Store | None = None) -> ToolResult:
    """`here`: the one store the caller works at. The bonus balance is spent only at the home
    store (corpus: 跨店使用储值), so elsewhere the usable amount is the principal alone."""
    account = getattr(member, "account", None)
    principal = _money(account.principal_balance if account else None)
    bonus = _money(account.bonus_balance if account else None)
    row = {
        "member": member.number,
        "name": mask_name(member.name),
        "phone": mask_phone(member.phone),
        "home_store": member.home_store.name,
        "principal_balance": principal,
        "bonus_balance": bonus,
        "total_balance": round(principal + bonus, 2),
    }
    summary = (
        f"会员 {row['member']}（{row['name']}，{row['phone']}，开卡门店 {row['home_store']}）"
        f"储值本金 {_yuan(principal)}，赠送余额 {_yuan(bonus)}，合计 {_yuan(row['total_balance'])}。"
    )
    if here is not None and here.pk != member.home_store_id:
        row["usable_here"] = principal
        summary += f"在{here.name}消费只能用本金 {_yuan(principal)}（赠送余额只能在开卡门店{row['home_store']}使用）。"
    return ToolResult("member_balance", {}, [row], summary, list(row))


# --- registry and validation ------------------------------------------------------------------

_STORE = {"type": ["string", "null"], "description": "门店名称、编码或别名（如 天河店）；留空表示全部门店"}
_PERIOD = {"type": "string", "description": "时间范围，中文表达，如 昨天、上周、本月、最近7天、11月1日到7日"}

TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in [
        ToolSpec("store_sales", "门店营业额", "某门店或全部门店在一段时间内的营业额、订单数和客单价（只计已支付订单）。",
                 {"type": "object", "properties": {"store": _STORE, "period": _PERIOD}, "required": ["period"], "additionalProperties": False},
                 store_sales, ("store", "revenue", "orders", "avg_ticket")),
        ToolSpec("period_compare", "两段时间对比", "某门店或全部门店两段时间（如上周和上上周）的营业额、订单数和客单价，以及营业额和订单的变化。",
                 {"type": "object", "properties": {
                     "store": _STORE, "period": _PERIOD,
                     "baseline": {"type": "string", "description": "对比的时间段，中文表达，如 上上周、上月、11月1日到7日"}},
                  "required": ["period", "baseline"], "additionalProperties": False},
                 period_compare, PERIOD_COMPARE_COLUMNS, Chart("period", "revenue")),
        ToolSpec("channel_sales", "渠道营业额", "一段时间内按渠道（堂食、外卖、团购）的营业额和订单数（已支付），以及各渠道的退款单数和退款金额。",
                 {"type": "object", "properties": {"store": _STORE, "period": _PERIOD}, "required": ["period"], "additionalProperties": False},
                 channel_sales, CHANNEL_COLUMNS, Chart("channel", "revenue")),
        ToolSpec("top_products", "热销商品", "一段时间内销量最高的前 N 个商品（N ≤ 50），可按门店和品类筛选。",
                 {"type": "object", "properties": {
                     "store": _STORE, "period": _PERIOD,
                     "n": {"type": "integer", "minimum": 1, "maximum": MAX_TOP_N, "default": 5},
                     "category": {"type": ["string", "null"], "enum": [*Product.Category.values, None]}},
                  "required": ["period"], "additionalProperties": False},
                 top_products, ("rank", "product", "category", "qty", "revenue"), Chart("product", "qty", "horizontal")),
        ToolSpec("product_sales", "单品销量", "某个商品（名称、别名或商品编码）在一段时间内的销量、销售额和订单数（只计已支付订单），按门店列出。",
                 {"type": "object", "properties": {
                     "product": {"type": "string", "description": "商品名称、别名或商品编码，如 科罗娜、青岛啤酒、B003"},
                     "store": _STORE, "period": _PERIOD},
                  "required": ["product", "period"], "additionalProperties": False},
                 product_sales, ("store", "product", "qty", "revenue", "orders"), Chart("store", "qty", "horizontal")),
        ToolSpec("compare_stores", "门店对比", "一段时间内各门店（或指定的几家门店）的营业额、订单数、客单价排名和营业额占比。",
                 {"type": "object", "properties": {
                     "period": _PERIOD,
                     "metric": {"type": "string", "enum": ["revenue", "orders", "avg_ticket"], "default": "revenue"},
                     "stores": {"type": ["array", "null"], "items": {"type": "string"}, "minItems": 1, "maxItems": MAX_COMPARED,
                                "description": "只比较这几家门店（名称、编码、别名，或城市：该城市你能查看的门店）；留空表示全部门店"}},
                  "required": ["period"], "additionalProperties": False},
                 compare_stores, ("rank", "store", "revenue", "orders", "avg_ticket", "revenue_share"), Chart("store", "revenue", "horizontal")),
        ToolSpec("hourly_peak", "高峰时段", "一段时间内按小时统计的订单数和营业额，找出最忙的时段。",
                 {"type": "object", "properties": {"store": _STORE, "period": _PERIOD}, "required": ["period"], "additionalProperties": False},
                 hourly_peak, ("hour", "orders", "revenue"), Chart("hour", "orders")),
        ToolSpec("daily_trend", "每日趋势", "一段时间内（最多 92 天）每天的营业额和订单数，没有销售的日子记为 0；by_store 为真且不指定门店时，每家门店一条曲线。",
                 {"type": "object", "properties": {
                     "store": _STORE, "period": _PERIOD,
                     "by_store": {"type": "boolean", "default": False, "description": "按门店分开（每家门店一组数据）；指定了门店时不起作用"}},
                  "required": ["period"], "additionalProperties": False},
                 daily_trend, ("date", "weekday", "revenue", "orders"), Chart("date", "revenue", series="store")),
        ToolSpec("low_stock", "低库存", "在库低于安全库存的商品，附近 7 天日均销量、可售天数和建议补货量。",
                 {"type": "object", "properties": {"store": _STORE}, "additionalProperties": False},
                 low_stock, STOCK_COLUMNS, perm="ops.view_inventory"),
        ToolSpec("product_stock", "商品库存", "某个商品（名称、别名或商品编码）在各门店的在库数量和安全库存，附近 7 天日均销量、可售天数和建议补货量。",
                 {"type": "object", "properties": {
                     "product": {"type": "string", "description": "商品名称、别名或商品编码，如 黑牌、扎啤、W001"}, "store": _STORE},
                  "required": ["product"], "additionalProperties": False},
                 product_stock, STOCK_COLUMNS, perm="ops.view_inventory"),
        ToolSpec("member_balance", "会员储值余额", "按手机号或会员号查会员储值本金和赠送余额；姓名和手机号脱敏显示。",
                 {"type": "object", "properties": {"member": {"type": "string", "description": "11 位手机号或会员号（如 M00012）"}},
                  "required": ["member"], "additionalProperties": False},
                 member_balance, ("member", "name", "phone", "home_store", "principal_balance", "bonus_balance", "total_balance"),
                 perm="ops.view_member_balance"),
    ]
}


def _member_lookups_over(user) -> str | None:
    """A person at the bar looks members up one at a time: past the member_lookup rates (per
    person, every channel) the lookup is refused with when to try again, and the first refusal
    of a burst is audited. Head office (every store) is not limited: it may list members."""
    from core.audit import audit_denial
    from core.ratelimit import limited

    if user is None or store_ids_for(user, "ops.view_member_balance") is ALL:
        return None
    for scope in ("member_lookup", "member_lookup_day"):
        count = limited(scope, f"user:{user.pk}")
        if not count.allowed:
            if count.first_over:
                audit_denial(actor=user, attempt="member lookups", reason=f"member lookups over {scope} ({count.limit})")
            minutes = max(1, round(count.retry_after / 60))
            return f"查询会员太频繁（{count.limit} 次以内），请 {minutes} 分钟后再试；需要批量查看会员请联系总部。"
    return None


def _validate(spec: ToolSpec, params: dict[str, Any], today: date, user) -> tuple[dict, dict]:
    """Return (kwargs for the tool, the exact parameters as recorded)."""
    if not isinstance(params, dict):
        raise ValidationError({"params": ["参数必须是对象。"]})
    props = spec.schema["properties"]
    errors: dict[str, list[str]] = {}
    unknown = set(params) - set(props)
    for name in sorted(unknown):
        errors[name] = [f"工具 {spec.name} 没有参数 {name}。"]
    for name in spec.schema.get("required", []):
        if params.get(name) in (None, ""):
            errors.setdefault(name, []).append("这个参数是必填的。")
    kwargs: dict[str, Any] = {}
    used: dict[str, Any] = {}
    city_stores: list[Store] = []
    if "store" in props and not errors.get("store"):
        raw = params.get("store")
        if raw in (None, "", "全部门店", "all"):
            kwargs["store"], used["store"] = None, "全部门店"
        elif len(city_stores := stores_in_city_for(user, str(raw).strip(), spec.perm)) > 1:
            # A city where the caller has several stores (「广州上周卖了多少」 from HQ): those stores.
            kwargs["store"], used["store"] = None, _store_label(None, city_stores)
        else:
            city_stores = []
            try:
                store = resolve_store_for(user, str(raw), spec.perm, attempt=f"tool {spec.name}")
                kwargs["store"], used["store"] = store, store.name
            except UnknownStore as exc:
                errors["store"] = exc.messages
    if spec.name == "member_balance":
        ids = store_ids_for(user, spec.perm)
        if ids is not ALL and len(ids) == 1:  # the store the balance would be spent at
            kwargs["here"] = Store.objects.get(pk=ids[0])
    else:
        # "All stores" means the caller's stores; None (every store) only for those who may read every one.
        ids = store_ids_for(user, spec.perm)
        kwargs["scope"] = city_stores or (None if ids is ALL else list(Store.objects.filter(pk__in=ids)))
        if used.get("store") == "全部门店" and kwargs["scope"] is not None:
            used["store"] = _store_label(None, kwargs["scope"])  # a store's staff see their store, not 「全部门店」
    for name in ("period", "baseline"):
        if name not in props or params.get(name) in (None, ""):
            continue
        raw = params[name]
        try:
            if isinstance(raw, dict):
                start, end = date.fromisoformat(raw["start"]), date.fromisoformat(raw["end"])
                if start > end:
                    raise PeriodError("开始日期晚于结束日期。")
                period = Period(start, end, raw.get("label") or f"{start} 至 {end}")
            else:
                period = parse_period(str(raw), today)
            kwargs[name], used[name] = period, period.as_params()
        except (PeriodError, KeyError, ValueError, TypeError) as exc:
            errors[name] = [str(exc) if isinstance(exc, PeriodError) else "时间范围格式不对，应为中文表达或 {start, end}。"]
    if "n" in props and "n" not in errors:
        raw = params.get("n", props["n"]["default"])
        if isinstance(raw, bool) or not isinstance(raw, (int, str)) or not str(raw).isdigit() or not 1 <= int(raw) <= MAX_TOP_N:
            errors["n"] = [f"n 必须是 1 到 {MAX_TOP_N} 之间的整数。"]
        else:
            kwargs["n"] = used["n"] = int(raw)
    for name in ("category", "metric"):
        if name in props and name not in errors:
            raw = params.get(name, props[name].get("default"))
            if raw not in props[name]["enum"]:
                allowed = "、".join(str(v) for v in props[name]["enum"] if v is not None)
                errors[name] = [f"{name} 只能是：{allowed}。"]
            else:
                kwargs[name] = used[name] = raw
    if "product" in props and params.get("product") not in (None, "") and "product" not in errors:
        raw = params["product"]
        if not isinstance(raw, str) or len(raw) > 64:
            errors["product"] = ["商品要写名称、别名或商品编码（不超过 64 个字）。"]
        else:
            try:
                product = resolve_product(raw)
                kwargs["product"], used["product"] = product, product.name
            except UnknownProduct as exc:
                errors["product"] = exc.messages
    if "stores" in props and params.get("stores") is not None:
        raw = params["stores"]
        if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_COMPARED or not all(isinstance(x, str) and x.strip() for x in raw):
            errors["stores"] = [f"stores 是 1 到 {MAX_COMPARED} 个门店名称（或城市）的列表。"]
        else:
            chosen: list[Store] = []
            for name in raw:
                # A city stands for the caller's stores in it (「广州各店对比」).
                in_city = stores_in_city_for(user, name.strip(), spec.perm)
                if in_city:
                    chosen += [s for s in in_city if s not in chosen]
                    continue
                try:
                    store = resolve_store_for(user, name, spec.perm, attempt=f"tool {spec.name}")
                except UnknownStore as exc:
                    errors.setdefault("stores", []).extend(exc.messages)
                    continue
                if store not in chosen:
                    chosen.append(store)
            if "stores" not in errors and len(chosen) < 2:
                errors["stores"] = [f"你可以查询的门店里，这里只有{chosen[0].name}一家，没有可以对比的门店。" if chosen
                                    else "至少要两家门店才能比较。"]
            elif "stores" not in errors:
                kwargs["stores"], used["stores"] = chosen, [s.name for s in chosen]
    if "member" in props and params.get("member") and "member" not in errors and (over := _member_lookups_over(user)):
        errors["member"] = [over]
    if "member" in props and params.get("member") and "member" not in errors:
        key = str(params["member"]).strip()
        # Exact member number or the full phone number only: nothing to enumerate with.
        member = Member.objects.select_related("account", "home_store").filter(Q(phone=key) | Q(number__iexact=key)).first()
        # Filed under the store the asker works at (one store: theirs), so that store's manager sees
        # their staff's lookups (store-less rows were visible to head office only); else the
        # member's home store.
        own = store_ids_for(user, spec.perm) if user is not None else None
        where = Store.objects.filter(pk=own[0]).first() if own and len(own) == 1 else (member.home_store if member else None)
        # The same member again within a minute (a bartender re-asking) counts up on one row;
        # another member is its own row: this log is who looked at whose balance.
        audit_collapsed(actor=user, action="member_lookup", target=member, store=where, same_target=True,
                        key={"by": "phone" if key.isdigit() else "number", "found": member is not None})
        if member is None:
            errors["member"] = ["没有找到这个会员（请核对手机号或会员号）。"]
        else:
            kwargs["member"], used["member"] = member, member.number
    if "by_store" in props and params.get("by_store") is not None:
        if not isinstance(params["by_store"], bool):
            errors["by_store"] = ["by_store 只能是 true 或 false。"]
        else:
            kwargs["by_store"] = used["by_store"] = params["by_store"]
    if spec.name == "daily_trend" and "period" in kwargs and kwargs["period"].days > MAX_TREND_DAYS:
        errors["period"] = [f"按天趋势最多查 {MAX_TREND_DAYS} 天，请缩短时间范围。"]
    for name in ("period", "baseline"):
        if name in kwargs and name not in errors:
            # Before the first recorded sale there is no data, not zero sales: chat and API alike.
            try:
                kwargs[name] = bound_to_data(kwargs[name], first_sale_date())
                used[name] = kwargs[name].as_params()
            except PeriodError as exc:
                errors[name] = [str(exc)]
    if spec.name in ("low_stock", "product_stock"):
        kwargs["today"] = today
    if errors:
        raise ValidationError(errors)
    return kwargs, used


def run_tool(name: str, params: dict[str, Any] | None = None, *, user, today: date | None = None) -> ToolResult:
    """Validate parameters and run one whitelisted tool for `user`. Raises ValidationError, or
    PermissionDenied when the user may not use the tool. `user=None` is an operator at the
    command line (eval, bench): every store."""
    spec = TOOLS.get(name)
    if spec is None:
        raise ValidationError({"tool": [f"没有工具 {name}。可用工具：{'、'.join(TOOLS)}。"]})
    if user is not None:
        require(user, spec.perm, attempt=f"tool {name}", message=f"你的账号没有查询这类数据的权限（{spec.title}）。")
    kwargs, used = _validate(spec, params or {}, today or local_today(), user)
    result = spec.func(**kwargs)
    result.params = {**used, **result.params}
    return result
