"""The best sellers of a period, by quantity or by sales (`by`: 「按销售额」)."""
from __future__ import annotations

from django.db.models import Sum

from ..models import Order, OrderLine, Product, Store
from ..periods import Period
from .base import PERIOD_PARAM, STORE_PARAM, Chart, Tool, ToolResult, money, params_schema, placed_in, store_label
from .compare_stores import MAX_COMPARED

MAX_TOP_N = 50


BY = {"qty": ("销量", ("-qty", "-revenue", "product_id")), "revenue": ("销售额", ("-revenue", "-qty", "product_id"))}


def top_products(*, store: Store | None, period: Period, n: int = 5, category: str | None = None, by: str = "qty",
                 scope: list[Store] | None = None, by_store: bool = False, stores: list[Store] | None = None) -> ToolResult:
    """`stores` (already within the caller's scope): only those stores. `by_store` and no one store
    asked for: a ranking per store (「各店上周卖得最好的是什么」 got the chain's one ranking, labelled
    全部门店, as if 各店 had not been said)."""
    if stores and not store:
        scope = stores
    qs = OrderLine.objects.filter(placed_in(period, "order__"), order__status=Order.Status.PAID)
    if store:
        qs = qs.filter(order__store=store)
    elif scope is not None:
        qs = qs.filter(order__store__in=scope)
    if category:
        qs = qs.filter(product__category__in=Product.CATEGORY_GROUPS.get(category, (category,)))
    if by_store and not store:  # the stores as named, else in their usual order
        ordered = list(stores) if stores else sorted(scope if scope is not None else Store.objects.all(), key=lambda s: s.code)
        return _top_products_by_store(qs, period, n, category, by, ordered)
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


def _top_products_by_store(qs, period: Period, n: int, category: str | None, by: str, stores: list[Store]) -> ToolResult:
    """Each store's own best sellers, store after store; a store with no sales says so."""
    agg = list(qs.values("order__store_id", "product_id").annotate(qty=Sum("qty"), revenue=Sum("amount")).order_by(*BY[by][1]))
    products = Product.objects.in_bulk({a["product_id"] for a in agg})
    what = Product.category_label(category) if category else ""
    rows, lines = [], []
    for s in stores:
        mine = [a for a in agg if a["order__store_id"] == s.pk][:n]
        for i, a in enumerate(mine, start=1):
            p = products[a["product_id"]]
            rows.append({"store": s.name, "rank": i, "product": p.name, "category": p.category, "qty": a["qty"], "unit": p.unit,
                         "revenue": money(a["revenue"])})
        listing = "；".join(f"{i}. {products[a['product_id']].name} {a['qty']}{products[a['product_id']].unit}"
                           for i, a in enumerate(mine, start=1))
        lines.append(f"{s.name}：{listing}" if mine else f"{s.name}：没有{what}销售记录")
    summary = f"{period.describe()} 各店{what}{BY[by][0]}前 {n}（每家店各自排名）：" + "。".join(lines) + "。"
    return ToolResult("top_products", {}, rows, summary, ["store", "rank", "product", "category", "qty", "unit", "revenue"])


TOOL = Tool(
    "top_products", "热销商品", "一段时间内销量最高的前 N 个商品（N ≤ 50），可按门店和品类筛选。",
    params_schema({"store": STORE_PARAM, "period": PERIOD_PARAM,
                   "n": {"type": "integer", "minimum": 1, "maximum": MAX_TOP_N, "default": 5},
                   "category": {"type": ["string", "null"], "enum": [*Product.Category.values, *Product.CATEGORY_GROUPS, None],
                                "description": "品类；「酒类」是除软饮和小吃以外的所有酒"},
                   "by": {"type": "string", "enum": list(BY), "default": "qty", "description": "排序：qty 按销量，revenue 按销售额"},
                   "by_store": {"type": "boolean", "default": False, "description": "每家门店各自排名（每家店各 N 个）；指定了门店时不起作用"},
                   "stores": {"type": ["array", "null"], "items": {"type": "string"}, "minItems": 1, "maxItems": MAX_COMPARED,
                              "description": "只看这几家门店（名称、编码、别名，或城市）；留空表示全部门店"}},
                  ("period",)),
    top_products, ("rank", "product", "category", "qty", "revenue"), Chart("product", "qty", "horizontal"),
    row_sentence=lambda r: (f"{r['store']} " if r.get("store") else "") + f"第 {r['rank']} 名 {r['product']}：{r['qty']}{r['unit']}，销售额 ¥{r['revenue']:,.2f}",
)
