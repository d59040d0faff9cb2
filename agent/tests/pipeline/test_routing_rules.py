"""The routing rules (agent.router.ROUTING_RULES): one case each, named by the rule that routes it
(its name is in the trace). A rule added without a case fails the last test."""
from datetime import date

import pytest

from agent.router import ROUTING_RULES, Turn, route_by_rules

pytestmark = pytest.mark.django_db

CASES = {  # rule: (question, intent)
    "decides_a_proposal": ("确认提案7", "action"),
    "withdraws_a_proposal": ("撤回刚才那个工单", "action", {"proposal_id": "3"}),
    "asks_for_a_page": ("查看审计记录", "action"),
    "asks_where_proposals_stand": ("我的补货申请批了吗", "action"),
    "a_reply_to_nothing_asked": ("五箱吧", "action"),
    "a_step_of_the_last_answer": ("刚才说的第二步是啥", "policy", {"steps": 5}),
    "small_talk": ("你好", "action"),
    "changes_the_ticket": ("严重程度改成严重", "action", {"proposal_id": "2", "ticket": True}),
    "details_for_the_ticket": ("桌号A5 他吃了一口", "action", {"proposal_id": "2", "ticket": True}),
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
    "only_a_period": ("上周", "data"),
}


@pytest.mark.parametrize("rule", list(CASES))
def test_rule(rule):
    question, intent, *turn = CASES[rule]  # a rule that reads the thread: what the thread holds
    route = route_by_rules(question, date(2026, 12, 4), Turn(question, **turn[0]) if turn else None)
    assert (route.rule, route.intent) == (rule, intent) and route.as_dict()["rule"] == rule


def test_a_question_no_rule_reads_is_searched_as_rules_undecided():
    route = route_by_rules("改数量", date(2026, 12, 4))
    assert (route.rule, route.intent, route.decided) == ("undecided", "policy", False)


def test_every_rule_has_a_case_and_every_case_a_rule():
    assert [name for name, _ in ROUTING_RULES] == list(CASES)


@pytest.mark.parametrize("question,turn,handler,target", [
    ("确认提案7", Turn("确认提案7"), "decide_in_chat", {"proposal": "7"}),
    ("批了吧", Turn("批了吧", proposal_id=12), "decide_in_chat", {"proposal": "12"}),
    ("查看审计记录", Turn("查看审计记录"), "point_to_page", {"name": "审计记录", "url": "/audit/",
                                                     "also": "「操作提案」页面下方也有最近的记录"}),
    ("提案6是什么", Turn("提案6是什么"), "proposal_status", {"proposal": 6}),
    ("有哪些待我确认的补货申请", Turn("有哪些待我确认的补货申请"), "proposal_status", {"awaiting_me": True, "kind": "restock"}),
    # A manager's own words for the list were answered with the rule on restock approval.
    ("有需要我确认的补货吗", Turn("有需要我确认的补货吗"), "proposal_status", {"awaiting_me": True, "kind": "restock"}),
    ("我有几个要审批的补货申请", Turn("我有几个要审批的补货申请"), "proposal_status", {"awaiting_me": True, "kind": "restock"}),
    ("今天有没有要我批的工单", Turn("今天有没有要我批的工单"), "proposal_status", {"awaiting_me": True, "kind": "ticket"}),
    # 「刚才说的第二步是啥」 was searched on its own and answered from the new-staff principles.
    ("刚才说的第二步是啥", Turn("刚才说的第二步是啥", steps=5), "repeat_step", {"n": 2}),
    ("那第5点呢", Turn("那第5点呢", steps=5), "repeat_step", {"n": 5}),
    ("第三条再说一遍", Turn("第三条再说一遍", steps=3), "repeat_step", {"n": 3}),
    ("刚刚说的第2条是什么意思？", Turn("刚刚说的第2条是什么意思？", steps=3), "repeat_step", {"n": 2}),
    ("第二个步骤是啥", Turn("第二个步骤是啥", steps=3), "repeat_step", {"n": 2}),
    ("第十二步呢", Turn("第十二步呢", steps=3), "repeat_step", {"n": 12}),
])
def test_a_request_names_its_handler_and_what_it_acts_on(question, turn, handler, target):
    route = route_by_rules(question, date(2026, 12, 4), turn)
    assert (route.handler, route.target, route.as_dict()["handler"]) == (handler, target, handler)


@pytest.mark.parametrize("question", ["补货需要店长审批吗", "超过5000元的补货要审批吗", "哪些补货要区域经理审批", "补货申请要谁审批",
                                      "我要确认一下补货到了没有", "我得确认下补货数量对不对"])
def test_a_question_about_who_approves_is_a_rule_not_the_asker_s_list(question):
    assert route_by_rules(question, date(2026, 12, 4), Turn(question)).handler != "proposal_status"


@pytest.mark.parametrize("said", ["发票规定", "退卡流程", "好的，我去处理了", "撤销这个工单", "别建了", "顺便补两箱科罗娜", "客人要是吐了怎么办"])
def test_only_what_reads_like_more_of_the_complaint_is_added_to_the_ticket(said):
    # A review found every statement after a ticket added to it: bare topics, cancels, a restock.
    route = route_by_rules(said, date(2026, 12, 4), Turn(said, proposal_id="5", ticket=True))
    assert route.handler != "ticket_details", route


def test_a_request_is_read_as_typed_and_needs_its_thread():
    # 「第二步是啥」 with no list before it is a question like any other
    assert route_by_rules("第二步是啥", date(2026, 12, 4), Turn("第二步是啥")).handler == ""
    # a follow-up is routed as resolved, a request as the user typed it
    assert route_by_rules("上周天河店卖了多少", date(2026, 12, 4), Turn("确认提案7")).handler == "decide_in_chat"
    # 「批了吧」 decides the proposal this thread made, and nothing without one
    assert route_by_rules("批了吧", date(2026, 12, 4), Turn("批了吧")).rule != "decides_a_proposal"
    # a proposal's status is someone's: nobody signed in, no status
    assert route_by_rules("我的补货申请批了吗", date(2026, 12, 4), Turn("我的补货申请批了吗", signed_in=False)).handler == ""


@pytest.mark.parametrize("question,only", [("上周", True), ("这个月呢", True), ("到目前为止", True), ("最近7天？", True), ("这个月呢？", True), ("上周呢?", True),
                                           ("上周的排班", False), ("上周谁值班", False)])
def test_a_period_said_alone_asks_which_figure(question, only):
    # 「上周」 alone was declined as unrelated to the store; 「上周的排班」 is no figure.
    route = route_by_rules(question, date(2026, 12, 4))
    assert (route.rule == "only_a_period") is only, route


# Phrase forms a question showed, each on both sides: what was seen, then the questions and where they go.
PHRASE_FORMS = {
    "which_one_then_how_much_asks_a_setting_not_a_comparison": (
        "「哪个…多」 compares (which store sold more); 「哪个炉 多少度」 asks for a setting and was routed as a rise or fall of a store figure, then declined as outside the store's world.",
        [("croissant 用哪个炉 多少度", "policy"), ("冰淇淋机用哪个档 多少秒", "policy"), ("福田店和天河店哪个多", "data"), ("上周哪段时间单量高", "data")]),
    "the_rush_as_the_time_something_happens_is_no_question_for_the_busiest_hours": (
        "「午高峰…最多几分钟要出」 asks a rule about the rush; it was routed to the busiest-hours query.",
        [("午高峰现抄的饭最多几分钟要出", "policy"), ("早高峰review几点做", "policy"), ("午高峰我在后场做报表 ok吗", "policy"), ("高峰期店长能在办公室做报表吗", "policy"), ("福田店昨天高峰是几点", "data"), ("各店上周高峰时段", "data"), ("天河店上个月的高峰期", "data"), ("上周高峰期是几点", "data"), ("高峰时段是几点", "data")]),
    "a_threshold_a_rule_sets_is_a_rules_question": (
        "「剩多少就拒收」 asks where a rule draws the line; it was routed to the stock query.",
        [("包装食品保质期剩多少就拒收", "policy"), ("重做杯数占比超过多少要查原因", "policy"), ("冷藏温度高于多少就要报修", "policy"), ("天河店科罗娜还剩多少", "data"), ("福田店上周营业额超过多少了", "data")]),
    "a_call_that_does_not_get_through_asks_for_no_one_s_number": (
        "「区域经理电话一直打不通」 was declined as asking for someone's personal details.",
        [("区域经理电话一直打不通", "policy"), ("店长电话老是占线怎么办", "policy"), ("把店长的电话号码给我", "out_of_scope"), ("小王手机号多少", "out_of_scope")]),
    "a_target_a_rule_sets_is_a_rules_question": (
        "「…营业额的指标是多少」 asks the target in the rules; it was routed to the revenue query.",
        [("有效客诉每万元营业额的指标是多少", "policy"), ("外卖出餐超时率 KPI 多少", "policy"), ("米饭报废率 kpi 是多少", "policy"), ("天河店上周营业额多少", "data")]),
    "data_words_that_set_the_scene_before_a_question_about_what_to_do_ask_a_rule": (
        "「毛肚断货了…多久要交接完」 was routed to the stock query: the stock-out is the situation.",
        [("毛肚断货了，从隔壁店调一点，多久要交接完？", "policy"), ("科罗娜卖光了，客人还要，怎么跟他说", "policy"), ("天河店科罗娜断货了，还剩几箱", "data"), ("上周营业额，跟前一周比怎么样", "data"), ("福田店昨天营业额", "data")]),
    "what_is_already_done_besides_is_no_request": (
        "「除了在 app 上提工单还要干嘛」 asks what else to do; it was routed as a request to file a ticket.",
        [("A 类故障除了在 app 上提工单还要干嘛", "policy"), ("除了登记客诉之外，还要通知谁", "policy"), ("除了退款还要帮我提个工单", "action"), ("帮我提个工单", "action")]),
    "counting_the_stock_is_a_procedure_not_a_stock_query": (
        "「库存要盘一遍吗」 asks whether to take stock; it was routed to the stock query.",
        [("店长要调走了，库存要盘一遍吗", "policy"), ("月底库存要盘吗", "policy"), ("盘库存要几个人", "policy"), ("天河店库存还有多少", "data"), ("天河店库存", "data")]),
    "a_figure_given_as_a_condition_asks_for_no_figure": (
        "「日营业额一万左右…应该几个人」 gives the revenue and asks a staffing rule; it was routed to the revenue query.",
        [("我们店日营业额一万左右全职编制应该几个人", "policy"), ("营业额5万以上的店要配几个值班经理", "policy"), ("天河店上周营业额一万多吗", "data"), ("上周营业额超过一万了吗", "data")]),
    "a_letter_to_a_girlfriend_or_a_program_is_not_the_store_s_writing": (
        "「帮我写一封给女朋友的道歉信」 was searched in the rules; an apology to a guest stays a store matter.",
        [("帮我写一封给女朋友的道歉信", "out_of_scope"), ("帮我用Java写一个冒泡排序", "out_of_scope"), ("帮我写一封给客人的道歉信", "policy"), ("收银程序卡住了怎么办", "policy")]),
    "that_time_of_day_names_a_time_it_does_not_ask_for_hours": (
        "「那个时段人效特别低是不是说明…」 was routed to the busiest-hours query.",
        [("晚上那个时段人效特别低是不是说明排班有问题", "policy"), ("这个时段客人少可以提前收档吗", "policy"), ("某个时段人效很高是不是说明人排少了", "policy"), ("天河店上周哪个时段最忙", "data"), ("天河店昨天各时段的销售", "data")]),
}


@pytest.mark.parametrize("form,question,intent", [(form, q, intent) for form, (_, cases) in PHRASE_FORMS.items() for q, intent in cases])
def test_a_phrase_form_routes_both_ways(form, question, intent):
    assert route_by_rules(question, date(2026, 12, 4)).intent == intent, PHRASE_FORMS[form][0]
