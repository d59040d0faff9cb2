"""The phrasing table (eval/phrasings.jsonl): everyday data questions (stores × periods ×
tools, colloquial, with typos), rule questions that contain data-ish words, and requests out
of scope — each with its exact intent, tool and parameters. Real stores from the database."""
from collections import Counter

import pytest

from agent.evaluation import check_phrasing, eval_data_phrasings, load_phrasings

pytestmark = pytest.mark.django_db
ITEMS = load_phrasings()


@pytest.mark.parametrize("item", ITEMS, ids=[i["id"] for i in ITEMS])
def test_phrasing(item):
    assert check_phrasing(item) is None, item["q"]


def test_the_table_is_big_and_covers_every_tool():
    counts = Counter(i["intent"] for i in ITEMS)
    assert counts["data"] >= 150 and counts["policy"] >= 40 and counts["out_of_scope"] >= 5
    tools = Counter(i["tool"] for i in ITEMS if i["intent"] == "data")
    assert set(tools) == {"store_sales", "top_products", "product_sales", "compare_stores", "hourly_peak", "low_stock", "product_stock",
                          "daily_trend", "channel_sales", "period_compare", "member_balance"}
    assert len({i["q"] for i in ITEMS}) == len(ITEMS)


def test_eval_reports_the_accuracy():
    report = eval_data_phrasings()
    assert report["n"] == len(ITEMS) and report["accuracy"] >= 0.98, report["misses"][:5]


@pytest.mark.django_db
@pytest.mark.parametrize("question,hint", [
    ("会员 M1001 余额", True), ("M0001的余额多少", True), ("尾号1234的会员卡里还有多少钱", True), ("余额还有多少", False),
])
def test_a_balance_question_without_a_usable_member_key_asks_for_one(question, hint):
    # Was the generic 「想查哪项经营数据？」 menu: the balance tool was dropped for want of a key.
    from datetime import date

    from agent.data_guard import plan_data

    plan = plan_data(question, today=date(2026, 11, 18))
    assert plan.tool == "member_balance" and "请提供会员的手机号或会员号" in plan.clarify
    assert ("会员号是 M 加 5 位数字" in plan.clarify) is hint
