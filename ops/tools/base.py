"""What every tool is made of: its result, the columns a person reads, its chart, and the
`Tool` object that carries one tool's schema, query, columns, row sentence and permission."""
from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from functools import reduce
from zoneinfo import ZoneInfo

from django.db.models import FilteredRelation, Q, Sum

from ..models import Order, Store, StoreDaySales
from ..periods import Period
from ..selectors import store_zones
from ..trading_day import TZ, day_window


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
        return yuan(float(value))
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
class Tool:
    """One whitelisted query tool, whole: the planner, the composer, REST and MCP ask it.

    `schema` is the JSON schema of the parameters (ops.tools.params resolves each by name);
    `row_sentence` reads one row as staff would say it (None: the column labels);
    `row_key` is the column that names a row in prose (None: the first of product, store …);
    `scope` is "stores" (the caller's stores) or "here" (the one store a balance is spent at);
    `max_days` bounds the period; `needs_today` passes the trading day to the query."""

    name: str
    title: str
    description: str
    schema: dict
    func: Callable[..., ToolResult]
    columns: tuple[str, ...] = ()  # what a person sees, in order (unit folds into its quantity)
    chart: Chart | None = None
    perm: str = "ops.view_sales"  # what the caller needs; stores are scoped by the same permission
    row_sentence: Callable[[dict], str] | None = None
    row_key: str | None = None
    scope: str = "stores"
    max_days: int | None = None
    needs_today: bool = False

    def column_meta(self) -> list[dict]:
        return [{"key": k, **column(k).as_dict()} for k in self.columns]


def placed_in(period: Period, path: str = "") -> Q:
    """Orders (at `path`, e.g. "order__") placed during the period's trading days, each store's
    from 06:00 of the first day to 06:00 after the last on its own clock. Stores that share a
    zone share one range: with one zone for the whole chain, the condition is the time range alone."""
    zones = store_zones()

    def window(zone: str) -> Q:
        start, end = day_window(period.start, period.end, ZoneInfo(zone))
        return Q(**{f"{path}created_at__gte": start, f"{path}created_at__lt": end})

    if len(zones) <= 1:
        return window(next(iter(zones), str(TZ)))
    return reduce(operator.or_, (window(zone) & Q(**{f"{path}store_id__in": ids}) for zone, ids in zones.items()))


def money(value: Decimal | None) -> float:
    return float((value or Decimal("0")).quantize(Decimal("0.01")))


def yuan(value: float) -> str:
    return f"¥{value:,.2f}"


def store_label(store: Store | None, scope: list[Store] | None = None) -> str:
    if store:
        return store.name
    if scope is None:
        return "全部门店"
    return "、".join(s.name for s in scope) if len(scope) <= 3 else f"你的 {len(scope)} 家门店"


def paid_orders(period: Period, store: Store | None, scope: list[Store] | None = None):
    qs = Order.objects.filter(placed_in(period), status=Order.Status.PAID)
    if store:
        return qs.filter(store=store)
    return qs if scope is None else qs.filter(store__in=scope)


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


STORE_PARAM = {"type": ["string", "null"], "description": "门店名称、编码或别名（如 天河店、GZ-TH）；留空表示你能查看的全部门店"}
PERIOD_PARAM = {"type": "string", "description": "时间范围，中文表达，如 昨天、上周、本月、最近7天、11月1日到7日"}


def params_schema(properties: dict, required: tuple[str, ...] = ()) -> dict:
    """A tool's parameter schema: these properties, nothing else."""
    return {"type": "object", "properties": properties, **({"required": list(required)} if required else {}),
            "additionalProperties": False}
