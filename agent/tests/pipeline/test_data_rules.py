"""The data planner's rules (agent.data_guard.RULES): one case each, named by the rule it shows.
A rule added to the table without a case here fails the last test."""
import pytest

from agent.data_guard import RULES, plan_data
from ops.tools import local_today

pytestmark = pytest.mark.django_db

LAST_WEEK = {"label": "上周", "start": "2026-11-23", "end": "2026-11-29"}
AFTER_SALES = {"tool": "store_sales", "params": {"store": "广州天河店", "period": LAST_WEEK}}
AFTER_PEAK = {"tool": "hourly_peak", "params": {"store": "广州天河店", "period": LAST_WEEK}}
AFTER_CHANGE = {"tool": "period_compare", "params": {"store": None, "period": LAST_WEEK,
                                                     "baseline": {"label": "上上周", "start": "2026-11-16", "end": "2026-11-22"}}}
AFTER_TOP = {"tool": "top_products", "params": {"store": None, "period": LAST_WEEK, "n": 5}}
AFTER_RANKING = {"tool": "compare_stores", "params": {"stores": ["天河", "福田"], "period": LAST_WEEK}}

# rule: (question, the previous turn's context, the tool planned, a clarifying question asked)
CASES = {
    "stock_left_of_a_product": ("科罗娜还有多少", None, "product_stock", False),
    "two_periods_of_revenue": ("上周跟上上周比怎么样", None, "period_compare", False),
    "against_another_store": ("跟福田比", AFTER_SALES, "compare_stores", False),
    "ranking_reordered": ("按销售额呢", AFTER_TOP, "top_products", False),
    "keeps_the_last_tool": ("那福田店呢", AFTER_SALES, "store_sales", False),
    "keeps_period_and_store": ("外卖占多少", AFTER_SALES, "channel_sales", False),
    "only_a_product_named": ("科罗娜", None, None, True),
    "no_tool": ("sql", None, None, True),
    "product_on_a_store_tool": ("那科罗娜呢", AFTER_PEAK, "hourly_peak", True),
    "the_product": ("青岛还剩多少", None, "product_stock", False),
    "daily_of_a_product": ("最近7天科罗娜每天卖几瓶", None, "product_daily", False),
    "store_ranking_of_a_product": ("上周哪家店科罗娜卖得最多", None, "product_sales", False),
    "several_products": ("青岛和科罗娜还剩多少", None, "low_stock", True),
    "two_periods": ("上周生意涨了还是跌了", None, "period_compare", False),
    "channels_not_products": ("天河店上个月哪个渠道卖得最好", None, "channel_sales", False),
    "store_ranking_by_channel": ("上周各店外卖销售额对比", None, "compare_stores", True),
    "sales_by_channel": ("上周退款多少", None, "channel_sales", False),
    "stock_of_a_product": ("百威还剩多少", None, "product_stock", False),
    "sales_of_a_product": ("上周科罗娜卖了多少", None, "product_sales", False),
    "sales_of_a_category": ("上周威士忌卖了多少", None, "top_products", False),
    "product_param": ("芝华士快没了", None, "product_stock", False),
    "member_key": ("M00012 储值余额还有多少", None, "member_balance", False),
    "best_sellers_of_each_store": ("天河和福田各自上周卖得最好的酒", None, "top_products", False),
    "store_param": ("库存还够", None, "low_stock", False),
    "stores_compared": ("上周天河跟福田比营业额", None, "compare_stores", False),
    "comparison_follow_up": ("那上个月呢", AFTER_CHANGE, "period_compare", False),
    "period_pair": ("今天跟上周同期比", None, "period_compare", False),
    "period": ("上周天河店卖了多少", None, "store_sales", False),
    "cannot_compare_periods": ("跟上上周比呢", AFTER_PEAK, "hourly_peak", False),
    "cannot_compare_stores": ("跟福田比", AFTER_PEAK, "hourly_peak", False),
    "trend_per_store": ("11月各店每天营业额趋势", None, "daily_trend", False),
    "how_many_and_which_category": ("上周热销前3", None, "top_products", False),
}


@pytest.mark.parametrize("rule", list(CASES))
def test_rule(rule):
    question, previous, tool, clarifies = CASES[rule]
    plan = plan_data(question, today=local_today(), previous=previous)
    assert rule in plan.rules and plan.tool == tool and bool(plan.clarify) == clarifies, plan.as_dict()


def test_the_trace_names_the_rules_that_fired_in_order():
    plan = plan_data("百威还剩多少", today=local_today())
    assert plan.as_dict()["rules"] == ["the_product", "stock_of_a_product", "product_param", "store_param"]


def test_the_follow_up_notes_say_what_was_shown_instead():
    assert "不能把两段时间放在一起比" in plan_data("跟上上周比呢", today=local_today(), previous=AFTER_PEAK).note
    assert "不能把两家店放在一起比" in plan_data("跟福田比", today=local_today(), previous=AFTER_PEAK).note


def test_every_rule_has_a_case_and_every_case_a_rule():
    assert [r.name for r in RULES] == list(CASES)


def test_best_tool_breaks_a_tie_for_any_tool_of_the_whitelist():
    from agent import vocabulary as vocab
    from ops.tools import TOOLS

    for tool in TOOLS:  # it raised ValueError for the four tools missing from TOOL_PRIORITY
        assert vocab.best_tool({tool: 2, "store_sales": 2}) in (tool, "store_sales")
    assert vocab.best_tool({"product_stock": 2, "low_stock": 2}) == "low_stock"
    assert vocab.best_tool({"product_stock": 3, "low_stock": 2}) == "product_stock"


def test_a_category_s_sales_list_every_product_of_it_and_a_ranking_by_sales_when_asked(manager):
    # 「上周威士忌卖了多少」 answered the whole store's revenue as if it were the whisky's, and 「鸡尾酒呢」
    # the same; 「哪个酒卖得最好 按销售额」 and 「按金额排呢」 kept the ranking by quantity.
    from agent.services import chat_ask
    from ops.models import OrderLine, Product

    whisky, conv, _ = chat_ask(user=manager, query="上周威士忌卖了多少")
    rows = whisky.data
    assert rows and {d["row"]["category"] for d in rows} == {"威士忌"}, whisky.answer
    sold = {p.name for p in Product.objects.filter(category="威士忌")
            if OrderLine.objects.filter(product=p, order__status="paid").exists()}
    assert {d["row"]["product"] for d in rows} <= sold
    assert f"合计：{len(rows)} 款，销售额 ¥{sum(d['row']['revenue'] for d in rows):,.2f}。" in whisky.answer
    cocktails, _, _ = chat_ask(user=manager, query="鸡尾酒呢", thread_id=conv.thread_id)
    assert cocktails.data and {d["row"]["category"] for d in cocktails.data} == {"鸡尾酒"}, cocktails.answer
    by_sales, conv, _ = chat_ask(user=manager, query="上周哪个酒卖得最好 按销售额")
    revenues = [d["row"]["revenue"] for d in by_sales.data]
    assert revenues == sorted(revenues, reverse=True) and "销售额前" in by_sales.answer, by_sales.answer
    by_qty, _, _ = chat_ask(user=manager, query="那按数量呢", thread_id=conv.thread_id)
    quantities = [d["row"]["qty"] for d in by_qty.data]
    assert quantities == sorted(quantities, reverse=True) and "销量前" in by_qty.answer, by_qty.answer
