"""The best sellers of a period, by quantity or by sales (`by`: 「按销售额」)."""
from __future__ import annotations

from django.db.models import Sum

from ..models import Order, OrderLine, Product, Store
from ..periods import Period
from .base import PERIOD_PARAM, STORE_PARAM, Chart, Tool, ToolResult, money, params_schema, placed_in, store_label

MAX_TOP_N = 50


BY = {"qty": ("销量", ("-qty", "-revenue", "product_id")), "revenue": ("销售额", ("-revenue", "-qty", "product_id"))}


def top_products(*, store: Store | None, period: Period, n: int = 5, category: str | None = None, by: str = "qty",
                 scope: list[Store] | None = None) -> ToolResult:
    qs = OrderLine.objects.filter(placed_in(period, "order__"), order__status=Order.Status.PAID)
    if store:
        qs = qs.filter(order__store=store)
    elif scope is not None:
        qs = qs.filter(order__store__in=scope)
    if category:
        qs = qs.filter(product__category__in=Product.CATEGORY_GROUPS.get(category, (category,)))
    agg = list(qs.values("product_id").annotate(qty=Sum("qty"), revenue=Sum("amount")).order_by(*BY[by][1])[:n])
    products = Product.objects.in_bulk([a["product_id"] for a in agg])
    rows = [
        {
            "rank": i,
            "product": products[a["product_id"]].name,
            "category": products[a["product_id"]].category,
            "qty": a["qty"],
            "unit": products[a["product_id"]].unit,
            "revenue": money(a["revenue"]),
        }
        for i, a in enumerate(agg, start=1)
    ]
    what = Product.category_label(category) if category else ""
    if rows:
        listing = "；".join(f"{r['rank']}. {r['product']} {r['qty']}{r['unit']}" for r in rows)
        # Fewer sold than asked for (「小吃类销量前 5」 over four rows): every one that sold, said so.
        ranked = f"前 {n}" if len(rows) == n else f"排行（共 {len(rows)} 款）"
        summary = f"{store_label(store, scope)} {period.describe()} {what}{BY[by][0]}{ranked}：{listing}。"
    else:
        summary = f"{store_label(store, scope)} {period.describe()} 没有{what}销售记录。"
    return ToolResult("top_products", {}, rows, summary, ["rank", "product", "category", "qty", "unit", "revenue"])


TOOL = Tool(
    "top_products", "热销商品", "一段时间内销量最高的前 N 个商品（N ≤ 50），可按门店和品类筛选。",
    params_schema({"store": STORE_PARAM, "period": PERIOD_PARAM,
                   "n": {"type": "integer", "minimum": 1, "maximum": MAX_TOP_N, "default": 5},
                   "category": {"type": ["string", "null"], "enum": [*Product.Category.values, *Product.CATEGORY_GROUPS, None],
                                "description": "品类；「酒类」是除软饮和小吃以外的所有酒"},
                   "by": {"type": "string", "enum": list(BY), "default": "qty", "description": "排序：qty 按销量，revenue 按销售额"}},
                  ("period",)),
    top_products, ("rank", "product", "category", "qty", "revenue"), Chart("product", "qty", "horizontal"),
    row_sentence=lambda r: f"第 {r['rank']} 名 {r['product']}：{r['qty']}{r['unit']}，销售额 ¥{r['revenue']:,.2f}",
)
