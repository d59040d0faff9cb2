"""Stores ranked by one metric."""
from __future__ import annotations

from ..models import Store
from ..periods import Period
from .base import PERIOD_PARAM, Chart, Tool, ToolResult, params_schema, yuan
from .store_sales import store_sales

MAX_COMPARED = 10  # stores named in one comparison


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
        f"{r['rank']}. {r['store']} {yuan(r['revenue']) if metric != 'orders' else str(r['orders']) + ' 单'}"
        + (f"（客单价 {yuan(r['avg_ticket'])}）" if metric == "avg_ticket" else "")
        for r in rows
    )
    summary = f"{period.describe()} 各门店按{names[metric]}排名：{listing}。"
    if named:
        summary = f"{period.describe()} {'、'.join(s.name for s in stores)}按{names[metric]}比较：{listing}。"
    elif scope is not None and len(scope) == 1:  # a ranking of one would read as "first place"
        only = rows[0] if rows else {"revenue": 0.0, "orders": 0}
        summary = (f"{period.describe()} 你能查看的门店只有{scope[0].name}一家，没有可以对比的门店；"
                   f"{scope[0].name}营业额 {yuan(only['revenue'])}，{only['orders']} 单。")
    return ToolResult("compare_stores", {}, rows, summary, ["rank", "store", "revenue", "orders", "avg_ticket", "revenue_share"])


TOOL = Tool(
    "compare_stores", "门店对比", "一段时间内各门店（或指定的几家门店）的营业额、订单数、客单价排名和营业额占比。",
    params_schema({"period": PERIOD_PARAM,
                   "metric": {"type": "string", "enum": ["revenue", "orders", "avg_ticket"], "default": "revenue"},
                   "stores": {"type": ["array", "null"], "items": {"type": "string"}, "minItems": 1, "maxItems": MAX_COMPARED,
                              "description": "只比较这几家门店（名称、编码、别名，或城市：该城市你能查看的门店）；留空表示全部门店"}},
                  ("period",)),
    compare_stores, ("rank", "store", "revenue", "orders", "avg_ticket", "revenue_share"), Chart("store", "revenue", "horizontal"),
    row_sentence=lambda r: (f"第 {r['rank']} 名 {r['store']}：营业额 ¥{r['revenue']:,.2f}（占 {r['revenue_share']}%），"
                            f"订单 {r['orders']} 单，客单价 ¥{r['avg_ticket']:,.2f}"),
)
