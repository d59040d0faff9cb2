"""The routing rules (agent.router.ROUTING_RULES): one case each, named by the rule that routes it
(its name is in the trace). A rule added without a case fails the last test."""
from datetime import date

import pytest

from agent.router import ROUTING_RULES, route_by_rules

pytestmark = pytest.mark.django_db

CASES = {  # rule: (question, intent)
    "action_words": ("帮我补一箱", "action"),
    "restock_a_product": ("补科罗娜", "action"),
    "stock_left_of_a_product": ("科罗娜还有吗", "data"),
    "out_of_the_stores_world": ("帮我写一首诗", "out_of_scope"),
    "two_periods_compared": ("上周跟上上周比怎么样", "data"),
    "data_words_about_a_rule": ("红牌单杯卖多少钱", "policy"),
    "question_words_ask_for_data": ("全公司现在哪些店哪些货库存不够", "data"),
    "rules_and_data": ("储值余额能退吗", "policy"),
    "a_rise_of_something_else": ("今天上证指数涨了还是跌了", "out_of_scope"),
    "data": ("营业额", "data"),
    "policy": ("补货流程", "policy"),
    "a_bare_product_name": ("科罗娜", "data"),
}


@pytest.mark.parametrize("rule", list(CASES))
def test_rule(rule):
    question, intent = CASES[rule]
    route = route_by_rules(question, date(2026, 12, 4))
    assert (route.rule, route.intent) == (rule, intent) and route.as_dict()["rule"] == rule


def test_a_question_no_rule_reads_is_searched_as_rules_undecided():
    route = route_by_rules("改数量", date(2026, 12, 4))
    assert (route.rule, route.intent, route.decided) == ("undecided", "policy", False)


def test_every_rule_has_a_case_and_every_case_a_rule():
    assert [name for name, _ in ROUTING_RULES] == list(CASES)
