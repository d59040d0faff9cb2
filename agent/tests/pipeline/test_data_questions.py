"""Data questions end to end: the plan, the tool, the answer, and follow-ups that keep or change period and store."""
from datetime import date, timedelta

import pytest

from agent import compose
from agent import vocabulary as vocab
from agent.models import Message, UnansweredQuestion
from agent.services import chat_ask
from agent.tests.fakes import openai_chat
from ops.tests.factories import make_user
from ops.tools import local_today, run_tool

pytestmark = pytest.mark.django_db


def test_data_follow_up_keeps_the_period():
    staff = make_user("agent_two_stores", role="staff", stores=["GZ-TH", "SZ-FT"])
    first, conv, _ = chat_ask(user=staff, query="天河店上周卖了多少")
    second, _, _ = chat_ask(user=staff, query="那福田店呢", thread_id=conv.thread_id)
    assert second.intent == "data"
    assert second.data[0]["params"]["store"] == "深圳福田店"
    assert second.data[0]["params"]["period"] == first.data[0]["params"]["period"]
    assert Message.objects.filter(conversation=conv).count() == 4


def test_a_follow_up_builds_on_the_last_plan_that_ran_not_on_a_refused_store():
    # 「那福田店呢」 (not the asker's store) was refused, and 「那上个月呢」 then asked about 深圳福田店 again.
    staff = make_user("agent_one_store_fu", role="staff", stores=["GZ-TH"])
    _, conv, _ = chat_ask(user=staff, query="上周卖了多少")
    refused, _, _ = chat_ask(user=staff, query="那福田店呢", thread_id=conv.thread_id)
    assert not refused.data
    later, _, _ = chat_ask(user=staff, query="那上个月呢", thread_id=conv.thread_id)
    assert later.data and later.data[0]["params"]["store"] == "广州天河店" and "福田" not in later.answer


def test_a_question_refused_for_its_store_is_asked_of_our_store_next():
    # 「福田店上周卖了多少」 by a 天河 manager was refused, and 「那我们店呢」 was then asked back
    # 「想查哪项经营数据？」: the refused question was forgotten, not only its store.
    manager = make_user("agent_refused_then_ours", role="manager", stores=["GZ-TH"])
    refused, conv, _ = chat_ask(user=manager, query="福田店上周卖了多少")
    assert not refused.data and "没有权限查看" in refused.answer
    ours, _, _ = chat_ask(user=manager, query="那我们店呢", thread_id=conv.thread_id)
    assert ours.data and ours.data[0]["tool"] == "store_sales", ours.answer
    assert ours.data[0]["params"]["store"] == "广州天河店" and "上周" in ours.answer and "福田" not in ours.answer


@pytest.mark.parametrize("question", ["上周各店外卖销售额对比", "上周哪家店退款最多"])
def test_a_store_comparison_by_channel_says_it_cannot_split_instead_of_dropping_the_channel(question):
    # Both were answered with the all-channel revenue ranking, as if 外卖 / 退款 had not been said.
    from agent.data_guard import plan_data
    from ops.tools import local_today

    plan = plan_data(question, today=local_today())
    assert plan.clarify and "不能按" in plan.clarify


def test_a_store_named_with_invisible_characters_or_spaces_is_the_store_named():
    # 「福\u200b田店上周卖了多少」 and 「福 田 店…」 were answered with the asker's own store's figures.
    staff = make_user("agent_zero_width", role="staff", stores=["GZ-TH"])
    for question in ("福\u200b田店上周卖了多少", "福 田 店上周卖了多少"):
        result, _, _ = chat_ask(user=staff, query=question)
        assert not result.data and result.answer.startswith("深圳福田店的数据你没有权限查看"), question


def test_a_follow_up_to_a_comparison_compares_again_and_stores_are_not_summed_silently():
    # 「那上个月呢」 after a comparison was 「这个参数是必填的」 (the baseline was not carried);
    # 「哪家店上周环比涨得最多」 compared all stores summed as one.
    from agent.data_guard import plan_data
    from ops.tools import local_today

    staff = make_user("agent_compare_fu", role="staff", stores=["GZ-TH"])
    first, conv, _ = chat_ask(user=staff, query="上周跟上上周比怎么样")
    assert first.data and first.data[0]["tool"] == "period_compare"
    again, _, _ = chat_ask(user=staff, query="那这周呢", thread_id=conv.thread_id)  # (上个月 vs 上上个月 predates the seed data early in a month)
    assert again.data and again.data[0]["tool"] == "period_compare" and len(again.data) == 2, again.answer
    plan = plan_data("哪家店上周环比涨得最多", today=local_today())
    assert plan.clarify and "一家一家问" in plan.clarify
    # 「上周营业额多少」 → 「跟上上周比呢」 gave the earlier week's figures alone
    _, conv2, _ = chat_ask(user=staff, query="上周营业额多少")
    versus, _, _ = chat_ask(user=staff, query="跟上上周比呢", thread_id=conv2.thread_id)
    assert versus.data and versus.data[0]["tool"] == "period_compare"
    assert [d["row"]["period"] for d in versus.data] == ["上周", "上上周"]
    # 「昨日营收」 → 「比前天多还是少」: yesterday against the day before (was out of scope)
    _, conv3, _ = chat_ask(user=staff, query="昨天营业额多少")
    day, _, _ = chat_ask(user=staff, query="比前天多还是少", thread_id=conv3.thread_id)
    assert day.data and [d["row"]["period"] for d in day.data] == ["昨天", "前天"]


def test_a_channel_asked_for_leads_the_answer():
    # 「上周外卖卖了多少」 was answered with the three channels' table and no sentence about 外卖.
    from ops.tools import run_tool

    staff = make_user("agent_channel_lead", role="staff", stores=["GZ-TH"])
    result, _, _ = chat_ask(user=staff, query="上周外卖卖了多少")
    takeaway = next(r for r in run_tool("channel_sales", {"store": "天河店", "period": "上周"}, user=None).rows if r["channel"] == "外卖")
    assert f"外卖：营业额 ¥{takeaway['revenue']:,.2f}" in result.answer.split("\n")[0]


def test_how_many_of_a_product_sold_is_answered_in_units_and_follow_ups_switch_product():
    # 「上周天河店科罗娜卖了几瓶」 was answered from the 沽清 rule, and 「这个月青岛啤酒卖了多少」
    # with every store's whole revenue.
    from ops.tools import run_tool

    staff = make_user("agent_product_sales", role="staff", stores=["GZ-TH"])
    first, conv, _ = chat_ask(user=staff, query="上周天河店科罗娜卖了几瓶")
    assert first.intent == "data" and not first.refused
    assert first.data[0]["params"]["product"] == "科罗娜啤酒" and first.data[0]["params"]["store"] == "广州天河店"
    expected = run_tool("product_sales", {"product": "科罗娜", "store": "天河店", "period": "上周"}, user=None).rows[0]["qty"]
    assert f"卖出 {expected:,}瓶" in first.answer
    second, _, _ = chat_ask(user=staff, query="那百威呢", thread_id=conv.thread_id)
    assert second.intent == "data" and second.data[0]["params"]["product"] == "百威啤酒"
    assert second.data[0]["params"]["period"] == first.data[0]["params"]["period"]
    unknown, _, _ = chat_ask(user=staff, query="上周嗨棒卖了多少杯")
    assert "想查哪个商品的销量" in unknown.answer and not unknown.data and "营业额" not in unknown.answer


def test_a_products_sales_day_by_day_keep_the_product_and_follow_ups_switch_it():
    # 「最近7天科罗娜每天卖几瓶」 was answered with the store's daily revenue, 科罗娜 dropped.
    staff = make_user("agent_product_daily", role="staff", stores=["GZ-TH"])
    first, conv, _ = chat_ask(user=staff, query="最近7天科罗娜每天卖几瓶")
    assert first.intent == "data" and first.data[0]["tool"] == "product_daily", first.data
    rows = run_tool("product_daily", {"product": "科罗娜", "store": "天河店", "period": "最近7天"}, user=None).rows
    assert all(f"{r['date']}（{r['weekday']}）：{r['qty']:,}瓶" in first.answer for r in rows)
    assert "营业额" not in first.answer and "卖得最多的是" in first.answer
    assert f"合计 {sum(r['qty'] for r in rows):,}瓶" in first.answer
    second, _, _ = chat_ask(user=staff, query="那百威呢", thread_id=conv.thread_id)
    assert second.data[0]["tool"] == "product_daily" and second.data[0]["params"]["product"] == "百威啤酒"
    # after the store's daily revenue, 「那科罗娜呢」 is that product's days, not 「cannot split」
    _, conv, _ = chat_ask(user=staff, query="上周每天营业额")
    third, _, _ = chat_ask(user=staff, query="那科罗娜呢", thread_id=conv.thread_id)
    assert third.data[0]["tool"] == "product_daily" and third.data[0]["params"]["period"]["label"].startswith("上周")
    unknown, _, _ = chat_ask(user=staff, query="上周每天卖几瓶")
    assert "想查哪个商品的销量" in unknown.answer and not unknown.data


def test_a_period_before_the_records_is_bounded_by_the_tool_in_chat_as_in_the_api():
    # One path (ops.tools): the chat planner used to bound periods itself as well.
    from datetime import timedelta

    from ops.selectors import first_sale_date

    staff = make_user("agent_before_records", role="staff", stores=["GZ-TH"])
    first = first_sale_date()
    none, _, _ = chat_ask(user=staff, query="2020年1月天河店卖了多少")
    assert f"没有数据：销售记录从 {first.isoformat()} 开始" in none.answer and not none.data
    part, _, _ = chat_ask(user=staff, query=f"{first - timedelta(days=30)}到{first + timedelta(days=5)}天河店卖了多少")
    assert part.data and part.data[0]["params"]["period"]["start"] == first.isoformat() and "按此起算" in part.answer
    mixed, _, _ = chat_ask(user=staff, query=f"{first.year - 1}年12月1日到{first}天河店卖了多少")  # two formats
    assert "两个日期" in mixed.answer and not mixed.data  # was: the second date alone, half the range dropped


def test_a_product_follow_up_to_a_per_store_figure_says_it_cannot_be_split_by_product():
    # 「几点最忙」 → 「那科罗娜呢」 repeated the store's hourly table unchanged.
    staff = make_user("agent_peak_product", role="staff", stores=["GZ-TH"])
    _, conv, _ = chat_ask(user=staff, query="上周天河店几点最忙")
    result, _, _ = chat_ask(user=staff, query="那科罗娜呢", thread_id=conv.thread_id)
    assert "不能按商品拆分" in result.answer and "科罗娜卖了多少" in result.answer and not result.data


def test_a_store_of_the_chain_outside_the_askers_scope_is_said_to_be_not_theirs():
    # 「那福田店呢」 from 天河's staff answered 「没有叫「福田店」的门店」 and was audited as 越权被拒:
    # staff know the chain's stores. It exists, is not theirs, and is recorded as a scope refusal.
    from core.models import AuditLog

    staff = make_user("agent_compare_scope", role="staff", stores=["GZ-TH"])
    _, conv, _ = chat_ask(user=staff, query="上周卖了多少")
    result, _, _ = chat_ask(user=staff, query="那福田店呢", thread_id=conv.thread_id)
    assert "深圳福田店的数据你没有权限查看；你可以查看：广州天河店" in result.answer and not result.data, result.answer
    assert "没有叫" not in result.answer
    rows = AuditLog.objects.filter(actor=staff)
    assert rows.filter(action="scope_refused", store__code="SZ-FT").exists() and not rows.filter(action="permission_denied").exists()
    compared, _, _ = chat_ask(user=staff, query="上周天河跟福田比谁卖得多")
    assert "深圳福田店的数据你没有权限查看" in compared.answer and not compared.data
    typo, _, _ = chat_ask(user=staff, query="上周三里屯店卖了多少")  # not a store of the chain: still said so
    assert "没有叫「三里屯店」的门店" in typo.answer and "深圳福田店" not in typo.answer


def test_hq_comparing_two_named_stores_sees_those_two_and_the_follow_up_keeps_them():
    hq = make_user("agent_hq_compare", role="hq", stores=[])
    first, conv, _ = chat_ask(user=hq, query="上周天河店跟福田店比谁卖得多")
    assert first.intent == "data" and [d["row"]["store"] for d in first.data] in (
        ["广州天河店", "深圳福田店"], ["深圳福田店", "广州天河店"])
    second, _, _ = chat_ask(user=hq, query="那上个月呢", thread_id=conv.thread_id)
    assert second.data[0]["params"]["stores"] == ["广州天河店", "深圳福田店"] and len(second.data) == 2


def test_two_stores_set_side_by_side_without_a_figure_word_are_compared():
    # 「天河跟福田比」 (the README's own example) was answered from the membership rule on
    # using a card in another store; asked which period, 「上个月呢」 then ranked all four stores.
    hq = make_user("agent_hq_bare_compare", role="hq", stores=[])
    first, conv, _ = chat_ask(user=hq, query="天河跟福田比")
    assert first.intent == "data" and not first.citations and "哪段时间" in first.answer
    second, _, _ = chat_ask(user=hq, query="上个月呢", thread_id=conv.thread_id)
    assert sorted(d["row"]["store"] for d in second.data) == ["广州天河店", "深圳福田店"]
    third, _, _ = chat_ask(user=hq, query="福田店跟天河店上个月比")
    assert third.intent == "data" and len(third.data) == 2


def test_a_refund_rate_is_the_refunded_share_of_orders_placed():
    # 「天河店上周退款率」 was answered from the refund procedure.
    hq = make_user("agent_hq_refund_rate", role="hq", stores=[])
    result, _, _ = chat_ask(user=hq, query="天河店上周退款率")
    assert result.intent == "data" and result.data[0]["tool"] == "channel_sales"
    rows = [d["row"] for d in result.data]
    refunded, placed = sum(r["refunded_orders"] for r in rows), sum(r["orders"] + r["refunded_orders"] for r in rows)
    assert refunded and f"占下单的 {refunded / placed * 100:.1f}%" in result.answer


@pytest.mark.parametrize("question,period,baseline", [
    # Was declined as 「与门店运营无关」: 「上周同期」 alone is no period.
    ("这周跟上周同期比", ("2026-11-16", "2026-11-18"), ("2026-11-09", "2026-11-11", "上周同期")),
    ("今天跟上周同期比", ("2026-11-18", "2026-11-18"), ("2026-11-11", "2026-11-11", "上周同期")),
    ("这个月跟去年同期比", ("2026-11-01", "2026-11-18"), ("2025-11-01", "2025-11-18", "去年同期")),
    # Was compared with the whole previous month on its last day (11-30 against 10-01..10-31).
    ("上个月同期跟这个月比", ("2026-11-01", "2026-11-18"), ("2026-10-01", "2026-10-18", "上月同期")),
])
def test_the_same_time_before_is_the_same_days(question, period, baseline):
    from datetime import date

    from agent.data_guard import plan_data
    from agent.router import route

    today = date(2026, 11, 18)  # a Wednesday
    assert route(question, None, today).intent == vocab.DATA
    plan = plan_data(question, today=today)
    assert plan.tool == "period_compare" and not plan.clarify, plan
    assert (plan.params["period"]["start"], plan.params["period"]["end"]) == period
    assert (plan.params["baseline"]["start"], plan.params["baseline"]["end"], plan.params["baseline"]["label"]) == baseline


def test_on_a_months_last_day_上个月同期_is_not_the_whole_month():
    from datetime import date

    from agent.data_guard import plan_data

    plan = plan_data("上个月同期跟这个月比", today=date(2026, 11, 30))
    assert (plan.params["baseline"]["start"], plan.params["baseline"]["end"]) == ("2026-10-01", "2026-10-30")


def test_a_channel_share_asked_right_after_a_data_answer_keeps_its_period_and_store():
    # 「上周卖了多少」 → 「外卖占多少」 was answered with the delivery-range rule; 「上周外卖占多少」 too.
    staff = make_user("agent_share_fu", role="staff", stores=["GZ-TH"])
    first, conv, _ = chat_ask(user=staff, query="上周卖了多少")
    share, _, _ = chat_ask(user=staff, query="外卖占多少", thread_id=conv.thread_id)
    assert share.intent == "data" and share.data and share.data[0]["tool"] == "channel_sales", share.answer
    assert share.data[0]["params"]["period"] == first.data[0]["params"]["period"] and "占" in share.answer
    alone, _, _ = chat_ask(user=staff, query="上周外卖占多少")
    assert alone.data and alone.data[0]["tool"] == "channel_sales"
    fresh, _, _ = chat_ask(user=staff, query="外卖占多少")  # nothing before it: which period is asked
    assert not fresh.data and "哪段时间" in fresh.answer


def test_a_one_store_manager_asking_for_every_store_is_told_what_they_can_see():
    # 「四家店上周各卖了多少」 showed 广州天河店 alone, as if the chain had one store.
    manager = make_user("agent_one_store_mgr", role="manager", stores=["GZ-TH"])
    result, _, _ = chat_ask(user=manager, query="四家店上周各卖了多少")
    assert result.data and "你能查看的门店只有广州天河店" in result.answer
    own, _, _ = chat_ask(user=manager, query="上周卖了多少")
    assert "你能查看的门店只有" not in own.answer
    hq = make_user("agent_hq_all", role="hq", stores=[])
    every, _, _ = chat_ask(user=hq, query="所有门店上周营业额")
    assert len(every.data) > 1 and "你能查看的门店只有" not in every.answer
    # One store named on purpose by someone who sees them all: no scope note.
    one, _, _ = chat_ask(user=hq, query="天河店上周卖了多少，占全公司多少")
    assert one.data and "你能查看的门店只有" not in one.answer


def test_a_bare_product_name_asks_which_figure_and_is_not_an_sop_gap():
    # 「那百威呢」 after a ticket turn, and 「百威」 alone, were refused as 「制度文档里没有」 and
    # filed on the managers' unanswered list.

    staff = make_user("agent_bare_product", role="staff", stores=["GZ-TH"])
    ticket, conv, _ = chat_ask(user=staff, query="客人喝了我们的酒说头晕，帮我建个工单")
    assert ticket.intent == "action"
    follow, _, _ = chat_ask(user=staff, query="那百威呢", thread_id=conv.thread_id)
    alone, _, _ = chat_ask(user=staff, query="百威")
    for result in (follow, alone):
        assert not result.refused and result.intent == "data" and not result.data
        assert "想查百威啤酒的哪一项" in result.answer and "百威还剩多少" in result.answer
    assert not UnansweredQuestion.objects.filter(question__in=["那百威呢", "百威"]).exists()
    # After a stock answer the same words still switch product.
    stock, conv2, _ = chat_ask(user=staff, query="科罗娜还有多少")
    switched, _, _ = chat_ask(user=staff, query="那百威呢", thread_id=conv2.thread_id)
    assert switched.data and switched.data[0]["params"]["product"] == "百威啤酒"


@pytest.mark.parametrize("question,asks", [("青岛和科罗娜还剩多少", "还剩多少"), ("青岛和科罗娜今天卖了多少", "卖了多少")])
def test_two_products_in_one_data_question_are_asked_apart_not_one_dropped(question, asks):
    # 「青岛和科罗娜还剩多少」 answered for 科罗娜 alone; 青岛 was dropped without a word.
    from agent.data_guard import plan_data
    from ops.selectors import products_named_in_text
    from ops.tools import local_today

    assert products_named_in_text(question) == ["青岛啤酒", "科罗娜啤酒"]
    assert products_named_in_text("黑牌单杯还有吗") == ["黑牌单杯"]  # the longer name wins its characters
    plan = plan_data(question, today=local_today())
    assert plan.clarify and "青岛啤酒" in plan.clarify and "科罗娜啤酒" in plan.clarify and asks in plan.clarify


def test_a_lone_threshold_or_a_days_place_picks_nothing():
    # 「店里整个黑了快40分钟还没来电」 led with 「闭店后 45 分钟内完成闭店工作」 (met, but about something
    # else); 「第七天…」 was read as a duration of 7 days.
    from knowledge.selectors import SectionUnit

    texts = ["各门店营业时间为每天 17:00 至次日 02:30。", "闭店班员工在闭店后 45 分钟内完成闭店工作。", "最后点单时间为闭店前 30 分钟。"]
    units = [SectionUnit("sentence", t, 0, similarity=s) for t, s in zip(texts, (0.9, 0.88, 0.87))]
    assert compose.section_lines(units, [], quantity=(40.0, "分钟"))[0] == texts[0]
    assert compose.question_quantity("第七天店长考我实操没过，还要跟师傅多久") is None


def test_which_store_sold_most_of_a_product_ranks_that_product_not_revenue():
    # 「上周哪家店科罗娜卖得最多」 was the stores' whole revenue ranked, 科罗娜 silently dropped.
    hq = make_user("agent_hq_product_rank", role="hq", stores=[])
    result, _, _ = chat_ask(user=hq, query="上周哪家店科罗娜卖得最多")
    assert result.data and {d["tool"] for d in result.data} == {"product_sales"}
    rows = run_tool("product_sales", {"product": "科罗娜", "period": "上周"}, user=hq).rows
    best = max(rows, key=lambda r: r["qty"])
    assert f"卖得最多的是{best['store']}：{best['qty']:,}瓶" in result.answer and "营业额排名" not in result.answer
    manager = make_user("agent_mgr_product_rank", role="manager", stores=["GZ-TH"])
    own, _, _ = chat_ask(user=manager, query="上周哪家店科罗娜卖得最多")
    assert "你能查看的门店只有广州天河店" in own.answer


def test_the_week_before_as_a_follow_up_keeps_the_product_and_steps_back():
    # 「上周科罗娜卖了几瓶」 → 「那前一周呢」 was the last seven days' top product (「前一」 read as top 1).
    manager = make_user("agent_mgr_week_before", role="manager", stores=["GZ-TH"])
    first, conv, _ = chat_ask(user=manager, query="上周科罗娜卖了几瓶")
    second, _, _ = chat_ask(user=manager, query="那前一周呢", thread_id=conv.thread_id)
    assert second.data[0]["tool"] == "product_sales" and second.data[0]["params"]["product"] == "科罗娜啤酒"
    before, after = first.data[0]["params"]["period"], second.data[0]["params"]["period"]
    assert after["label"] == "上上周" and after["end"] < before["start"]
    assert (date.fromisoformat(before["start"]) - date.fromisoformat(after["start"])).days == 7


def test_comparing_with_another_store_as_a_follow_up_compares_stores():
    # 「上周卖了多少」 → 「跟福田比」 was answered from the stored-value rules.
    hq = make_user("agent_hq_follow_compare", role="hq", stores=[])
    first, conv, _ = chat_ask(user=hq, query="上周天河店卖了多少")
    second, _, _ = chat_ask(user=hq, query="跟福田比", thread_id=conv.thread_id)
    assert second.intent == "data" and second.data[0]["tool"] == "compare_stores"
    assert second.data[0]["params"]["stores"] == ["广州天河店", "深圳福田店"]
    assert second.data[0]["params"]["period"] == first.data[0]["params"]["period"]
    assert {d["row"]["store"] for d in second.data} == {"广州天河店", "深圳福田店"}


def test_comparing_busy_hours_with_another_period_says_it_shows_one_period():
    # 「哪个时段最忙」 → 「跟上上周比呢」 showed 上上周's busiest hours as if they were the comparison.
    manager = make_user("agent_mgr_hours_compare", role="manager", stores=["GZ-TH"])
    first, conv, _ = chat_ask(user=manager, query="上周哪个时段最忙")
    second, _, _ = chat_ask(user=manager, query="跟上上周比呢", thread_id=conv.thread_id)
    assert second.data[0]["tool"] == "hourly_peak" and second.data[0]["params"]["period"]["label"] == "上上周"
    assert "不能把两段时间放在一起比" in second.answer and "「上周跟上上周比」" in second.answer
    plain, _, _ = chat_ask(user=manager, query="上上周哪个时段最忙")
    assert "不能把两段时间放在一起比" not in plain.answer


def test_the_note_on_what_a_data_answer_could_not_do_survives_an_llm_written_answer(settings, fake_http):
    # The note was added on the extractive path only: with an LLM configured it was gone.
    settings.SM_LLM_BACKEND, settings.SM_OPENAI_BASE = "openai", fake_http.url + "/v1"
    fake_http.routes["/v1/chat/completions"] = openai_chat("上上周 22:00 前后最忙[D1]。")
    manager = make_user("agent_mgr_hours_llm", role="manager", stores=["GZ-TH"])
    _, conv, _ = chat_ask(user=manager, query="上周哪个时段最忙")
    second, _, _ = chat_ask(user=manager, query="跟上上周比呢", thread_id=conv.thread_id)
    assert "22:00 前后最忙" in second.answer and "不能把两段时间放在一起比" in second.answer


def test_the_one_before_steps_back_by_the_periods_own_unit():
    # 「那前一X呢」 stepped back by the previous period whatever X was: 「那前一天呢」 after 上个月 gave
    # the month before.
    manager = make_user("agent_mgr_one_before", role="manager", stores=["GZ-TH"])
    month, conv, _ = chat_ask(user=manager, query="上个月卖了多少")
    before = month.data[0]["params"]["period"]
    back, _, _ = chat_ask(user=manager, query="那前一个月呢", thread_id=conv.thread_id)
    stepped = back.data[0]["params"]["period"]
    # The month before starts on its 1st, or on the first day with sales when the demo data
    # (60 days up to yesterday) begins inside it: a range before the first sale is bounded.
    from ops.selectors import first_sale_date

    first = date.fromisoformat(before["start"]).replace(day=1) - timedelta(days=1)
    expected = max(first.replace(day=1), first_sale_date())
    assert stepped["end"] < before["start"] and date.fromisoformat(stepped["start"]) == expected
    day, conv2, _ = chat_ask(user=manager, query="上个月卖了多少")
    other, _, _ = chat_ask(user=manager, query="那前一天呢", thread_id=conv2.thread_id)
    got = other.data[0]["params"]["period"]
    assert got["start"] == got["end"]  # one day, not the month before
    # This week so far is shorter than a week, and still steps back by one (it fell to the last 7 days).
    week, conv4, _ = chat_ask(user=manager, query="本周卖了多少")
    prior, _, _ = chat_ask(user=manager, query="那前一周呢", thread_id=conv4.thread_id)
    assert prior.data[0]["params"]["period"]["label"] == "上周同期"
    yesterday, conv3, _ = chat_ask(user=manager, query="昨天卖了多少")
    again, _, _ = chat_ask(user=manager, query="那前一天呢", thread_id=conv3.thread_id)
    assert again.data[0]["params"]["period"]["label"] == "前天"


@pytest.mark.parametrize("question,n", [("前14天卖得最好的5个", 5), ("前10天热销排行", 5), ("上周热销前3", 3), ("本周销量前10的商品", 10)])
def test_a_period_of_days_is_not_a_top_n(question, n):
    # 「前10天」 matched 「前1」 (a top-1 ranking) before the unit check.
    from agent.data_guard import plan_data

    plan = plan_data(question, today=local_today())
    assert plan.tool == "top_products" and plan.params["n"] == n, plan


def test_comparing_busy_hours_with_another_store_says_it_shows_one_store():
    # 「上周天河店哪个时段最忙」 → 「跟福田比」 answered for 福田 alone, as if that were the comparison.
    hq = make_user("agent_hq_hours_store", role="hq", stores=[])
    _, conv, _ = chat_ask(user=hq, query="上周天河店哪个时段最忙")
    second, _, _ = chat_ask(user=hq, query="跟福田比", thread_id=conv.thread_id)
    assert second.data[0]["tool"] == "hourly_peak" and second.data[0]["params"]["store"] == "深圳福田店"
    assert "不能把两家店放在一起比" in second.answer and "「广州天河店跟福田比」" in second.answer


@pytest.mark.parametrize("question, keeps_store", [
    ("上周外卖卖了多少", False), ("本月每天的营业额", False), ("上周卖了多少", False),
    ("外卖占多少", True), ("那上周呢", True),
])
def test_a_question_that_states_its_own_period_inherits_no_store(question, keeps_store):
    # Head office: 「上周外卖卖了多少」 after a 福田 question was answered for 福田 only, and
    # 「本月每天的营业额」 after a 天河 one for 天河 only. A question of its own keeps nothing.
    from agent.data_guard import plan_data

    today = local_today()
    previous = {"tool": "store_sales", "params": {"store": "深圳福田店", "period": {
        "label": "昨天", "start": (today - timedelta(days=1)).isoformat(), "end": (today - timedelta(days=1)).isoformat()}}}
    plan = plan_data(question, today=today, previous=previous)
    assert plan.tool is not None, plan
    assert (plan.params.get("store") == "深圳福田店") is keeps_store, plan


def test_when_it_is_busiest_with_no_period_is_the_last_four_weeks_said_as_such():
    # 「一般几点最忙」 asked for a period (or kept the previous turn's 「今天」).
    from agent.data_guard import plan_data

    today = local_today()
    plan = plan_data("一般几点最忙", today=today)
    assert plan.tool == "hourly_peak" and not plan.clarify, plan
    period = plan.params["period"]
    assert period["label"] == "最近四周" and period["end"] == (today - timedelta(days=1)).isoformat()
    assert period["start"] == (today - timedelta(days=28)).isoformat() and "最近四周" in plan.note
    previous = {"tool": "store_sales", "params": {"store": "广州天河店", "period": {
        "label": "今天", "start": today.isoformat(), "end": today.isoformat()}}}
    assert plan_data("一般几点最忙", today=today, previous=previous).params["period"]["label"] == "最近四周"
    assert plan_data("上周几点最忙", today=today).params["period"]["label"] == "上周"


@pytest.mark.parametrize("question, by_store", [
    ("11月各店每天营业额趋势", True), ("上个月每家店每天的营业额", True), ("本月每天的营业额", False), ("上周天河店每天卖了多少", False),
])
def test_a_daily_trend_across_stores_is_asked_per_store(question, by_store):
    from agent.data_guard import plan_data

    plan = plan_data(question, today=local_today())
    assert plan.tool == "daily_trend" and bool(plan.params.get("by_store")) is by_store, plan


@pytest.mark.parametrize("typed,read_as", [
    ("天河店上周卖了躲少", "天河店上周卖了多少"),  # was a rules question answered from 《会员与储值规则》
    ("裤存还有多少", "库存还有多少"),
    ("上周营业鹅多少", "上周营业额多少"),
    ("我买了两箱", "我买了两箱"),  # 买了 sounds like 卖了: a real phrase is never replaced
    ("早上买的鸡蛋", "早上买的鸡蛋"),  # a real word (鸡蛋 ≠ 几单)
    # two words that sound like an intent word are no typo
    ("烤串多烧一会", "烤串多烧一会"), ("加多勺糖浆", "加多勺糖浆"), ("小梁今天上班吗", "小梁今天上班吗"), ("凉菜怎么拌", "凉菜怎么拌"),
])
def test_a_key_word_typed_by_its_sound_is_read_as_that_word(typed, read_as):
    assert vocab.sound_repaired(typed) == read_as


def test_a_typo_by_sound_is_answered_with_the_figure_and_said_in_the_trace():
    staff = make_user("agent_sound_typo", role="staff", stores=["GZ-TH"])
    result, _, reply = chat_ask(user=staff, query="天河店上周卖了躲少")
    assert result.intent == "data" and result.data[0]["tool"] == "store_sales" and not result.citations
    step = next(s for s in result.trace if s["step"] == "repair")
    assert step["detail"] == {"typed": "天河店上周卖了躲少", "read_as": "天河店上周卖了多少"}
    assert reply.content == result.answer and Message.objects.filter(content="天河店上周卖了躲少").exists()  # stored as typed


def test_a_period_alone_asks_which_figure_or_keeps_the_last_one():
    # 「上周」 alone was declined as 「与门店运营无关」; 「到目前为止」 after a sales question was
    # answered from 《酒水单与价格管理》 as the closest rule (and filed as unanswered).
    staff = make_user("agent_period_alone", role="staff", stores=["GZ-TH"])
    alone, _, _ = chat_ask(user=staff, query="上周")
    assert alone.intent == "data" and not alone.refused and "想查哪项经营数据" in alone.answer
    _, conv, _ = chat_ask(user=staff, query="上周卖了多少")
    so_far, _, _ = chat_ask(user=staff, query="到目前为止", thread_id=conv.thread_id)
    assert so_far.intent == "data" and "从哪天算起" in so_far.answer and not so_far.citations
    month, _, _ = chat_ask(user=staff, query="这个月呢", thread_id=conv.thread_id)
    assert month.data[0]["tool"] == "store_sales" and month.data[0]["params"]["period"]["label"] == "本月"
    assert not UnansweredQuestion.objects.filter(question__in=["上周", "到目前为止"]).exists()


def test_busiest_hours_of_a_day_without_orders_yet_point_to_the_usual_ones():
    # 「今天几点最忙」 at 14:00, before the bar opens, said 「没有已支付订单」 and nothing else.
    from agent.compose.data import extractive_data_answer
    from ops.tools import ToolResult

    today = local_today().isoformat()
    empty = ToolResult("hourly_peak", {"store": "广州天河店", "period": {"label": "今天", "start": today, "end": today}}, [],
                       "广州天河店 今天 没有已支付订单。", ["hour", "orders", "revenue"])
    answer = extractive_data_answer(empty, compose.number_sources([], empty), "今天几点最忙")
    assert "「一般几点最忙」" in answer
    last_week = ToolResult("hourly_peak", {"store": "广州天河店", "period": {"label": "上周", "start": "2026-11-23", "end": "2026-11-29"}},
                           [], "广州天河店 上周 没有已支付订单。", ["hour", "orders", "revenue"])
    assert "一般几点最忙" not in extractive_data_answer(last_week, compose.number_sources([], last_week), "上周几点最忙")


@pytest.mark.parametrize("question,category,kinds", [
    ("上周哪个酒卖得最好", "酒类", {"啤酒", "威士忌", "鸡尾酒", "葡萄酒"}), ("上周卖得最好的饮料", "软饮", {"软饮"}),
    ("上周哪款啤酒卖得最好", "啤酒", {"啤酒"}), ("上周哪个无酒精饮料卖得最好", "软饮", {"软饮"})])
def test_a_kind_of_drink_said_in_everyday_words_filters_the_best_sellers(manager, question, category, kinds):
    # Seen: 「上周哪个酒卖得最好」 listed 可口可乐 (no category was read from 「酒」).
    result, _, _ = chat_ask(user=manager, query=question)
    assert result.data and result.data[0]["params"]["category"] == category
    assert {d["row"]["category"] for d in result.data} <= kinds, result.data


def test_a_follow_up_on_the_best_selling_drinks_keeps_the_kind(manager):
    # Seen: 「那上上周呢」 after 「上周哪个酒卖得最好」 ranked every product (可口可乐 #4, 薯条 #2).
    chat_ask(user=manager, query="上周哪个酒卖得最好", thread_id="top-drinks")
    again, _, _ = chat_ask(user=manager, query="那上上周呢", thread_id="top-drinks")
    assert again.data and again.data[0]["params"]["category"] == "酒类" and again.data[0]["params"]["period"]["label"] == "上上周"


@pytest.mark.parametrize("question,category", [("上周卖得最好的下酒菜", None), ("上周热销前五（不含酒）", "软饮"), ("酒吧上周热销前五", None)])
def test_a_word_with_酒_in_it_is_not_always_the_drinks(question, category):
    from agent.data_guard import plan_data

    assert plan_data(question, today=local_today()).params.get("category") == category


def test_every_product_after_the_best_selling_drinks_drops_the_kind(manager):
    chat_ask(user=manager, query="上周哪个酒卖得最好", thread_id="top-every")
    every, _, _ = chat_ask(user=manager, query="那全部商品呢", thread_id="top-every")
    assert every.data and not every.data[0]["params"].get("category")


def test_which_day_is_answered_before_the_days_it_was_read_from(manager):
    # 「上个月哪天生意最好」 listed all thirty days before the one line that answered it.
    result, _, _ = chat_ask(user=manager, query="上个月哪天生意最好")
    lines = result.answer.splitlines()
    assert lines[1].startswith("营业额最高的是") and len(lines) == len(result.data) + 2, result.answer
    best = max(result.data, key=lambda d: d["row"]["revenue"])
    assert f"[{best['ref']}]" in lines[1]
    # Without 哪天 the line still follows the days.
    plain, _, _ = chat_ask(user=manager, query="上个月每天营业额")
    assert plain.answer.splitlines()[-1].startswith("营业额最高的是"), plain.answer


def test_each_stores_best_sellers_are_ranked_store_by_store():
    # 「各店上周卖得最好的是什么」 got the chain's one ranking labelled 全部门店, and 「天河店和福田店各自卖得最好的
    # 酒是啥」 a comparison of revenue with no product in it.
    hq = make_user("agent_each_store_top", role="hq")
    each, conv, _ = chat_ask(user=hq, query="各店上周卖得最好的是什么")
    assert each.data and each.data[0]["tool"] == "top_products" and each.data[0]["params"]["by_store"] is True
    assert len({r["row"]["store"] for r in each.data}) > 1 and "每家店各自排名" in each.answer
    later, _, _ = chat_ask(user=hq, query="那上个月呢", thread_id=conv.thread_id)
    assert later.data[0]["params"]["by_store"] is True and "上月" in later.answer  # still store by store
    two, conv, _ = chat_ask(user=hq, query="上周天河店和福田店各自卖得最好的酒是啥")
    params = two.data[0]["params"]
    assert two.data[0]["tool"] == "top_products" and params["stores"] == ["广州天河店", "深圳福田店"] and params["category"] == "酒类"
    assert {r["row"]["store"] for r in two.data} == {"广州天河店", "深圳福田店"}
    by_sales, _, _ = chat_ask(user=hq, query="按销售额呢", thread_id=conv.thread_id)
    params = by_sales.data[0]["params"]
    assert by_sales.data[0]["tool"] == "top_products" and params["by"] == "revenue" and params["stores"] == ["广州天河店", "深圳福田店"]
    whole, _, _ = chat_ask(user=hq, query="上周哪家店卖得最好")  # which store: still the stores compared
    assert whole.data[0]["tool"] == "compare_stores"


def test_by_sales_right_after_a_ranking_reorders_the_ranking():
    # 「上周热销前五」 → 「按销售额呢」 got every store's revenue instead of the ranking by sales.
    hq = make_user("agent_ranking_by_sales", role="hq")
    _, conv, _ = chat_ask(user=hq, query="上周热销前五")
    result, _, _ = chat_ask(user=hq, query="按销售额呢", thread_id=conv.thread_id)
    assert result.data[0]["tool"] == "top_products" and result.data[0]["params"]["by"] == "revenue" and "销售额前 5" in result.answer


def test_comparisons_said_the_short_way_are_data_questions():
    # 「各店比一下」 got the stock-count rule; 「比上上个月涨了还是跌了」 after last month's revenue and
    # 「这周五跟上周五比怎么样」 were declined as 与门店运营无关.
    hq = make_user("agent_short_comparisons", role="hq")
    stores, _, _ = chat_ask(user=hq, query="各店比一下上周")
    assert stores.intent == "data" and stores.data[0]["tool"] == "compare_stores"
    bare, _, _ = chat_ask(user=hq, query="各店比一下")
    assert bare.intent == "data" and "哪段时间" in bare.answer  # asked for the period, not answered from the rules
    manager = make_user("agent_change_follow_up", role="manager", stores=["GZ-TH"])
    last, conv, _ = chat_ask(user=manager, query="上个月营业额")
    change, _, _ = chat_ask(user=manager, query="比上上个月涨了还是跌了", thread_id=conv.thread_id)
    assert change.intent == "data" and change.data[0]["tool"] == "period_compare", change.answer
    period, baseline = change.data[0]["params"]["period"], change.data[0]["params"]["baseline"]
    assert period["start"] == last.data[0]["params"]["period"]["start"] and baseline["label"].startswith("上上月")
    fridays, _, _ = chat_ask(user=manager, query="上周五跟上上周五比怎么样")
    assert fridays.intent == "data" and fridays.data[0]["tool"] == "period_compare", fridays.answer
    weather, _, _ = chat_ask(user=manager, query="今天上证指数涨了还是跌了")
    assert weather.intent == "out_of_scope"  # a rise of something not the store's is still declined


def test_a_period_not_yet_come_is_named_by_itself_not_by_the_whole_question():
    # 「本周五和上周五对比一下营业额」 → 「「本周五和上周五对比一下营业额」还没到，没有数据。」
    from ops.periods import PeriodError, find_period

    today = date(2026, 12, 8)  # a Tuesday: this Friday is still to come
    with pytest.raises(PeriodError) as exc:
        find_period("本周五和上周五对比一下营业额", today)
    assert str(exc.value) == "「本周五」（2026-12-11）还没到，没有数据。"


def test_one_rules_question_between_two_data_questions_keeps_the_figures_period():
    # 上个月卖了多少 → a question the rules answered → 「按销售额排个名」 was asked 「请问要查哪段时间？」.
    hq = make_user("agent_period_across_a_rule", role="hq")
    _, conv, _ = chat_ask(user=hq, query="上个月卖了多少")
    rule, _, _ = chat_ask(user=hq, query="客人喝多了怎么办", thread_id=conv.thread_id)
    assert rule.intent == "policy"
    ranked, _, _ = chat_ask(user=hq, query="按销售额排个名", thread_id=conv.thread_id)
    assert ranked.data and ranked.data[0]["params"]["period"]["label"] == "上月", ranked.answer
    # Only for one turn: two questions about something else later, the period is asked again.
    chat_ask(user=hq, query="客人喝多了怎么办", thread_id=conv.thread_id)
    chat_ask(user=hq, query="开店流程", thread_id=conv.thread_id)
    later, _, _ = chat_ask(user=hq, query="每家店卖得最好的是啥", thread_id=conv.thread_id)
    assert "哪段时间" in later.answer and not later.data


def test_the_short_comparison_rules_fire_only_where_they_should():
    # Review of the rules above: each was first written too broadly.
    hq = make_user("agent_rules_not_too_broad", role="hq")
    _, conv, _ = chat_ask(user=hq, query="天河店上周营业额")
    index, _, _ = chat_ask(user=hq, query="今天上证指数涨了还是跌了", thread_id=conv.thread_id)
    assert index.intent == "out_of_scope", index.answer  # a rise of something else, even right after figures
    _, conv, _ = chat_ask(user=hq, query="上周热销前五")
    for question in ("各店营业额排名", "哪家店销售额最高"):
        ranked, _, _ = chat_ask(user=hq, query=question, thread_id=conv.thread_id)
        assert ranked.data[0]["tool"] == "compare_stores", (question, ranked.answer)
    last, conv, _ = chat_ask(user=hq, query="天河店上个月营业额")
    same, _, _ = chat_ask(user=hq, query="比上个月涨了还是跌了", thread_id=conv.thread_id)
    params = same.data[0]["params"]
    assert same.data[0]["tool"] == "period_compare" and params["period"]["start"] == last.data[0]["params"]["period"]["start"]
    assert params["baseline"]["end"] < params["period"]["start"]  # last month against the one before it, not itself
    assert params["store"] == "广州天河店"
    before, _, _ = chat_ask(user=hq, query="比上上个月涨了还是跌了", thread_id=conv.thread_id)
    assert before.data[0]["params"]["store"] == "广州天河店", before.answer  # the figure just given: 天河's
    for question in ("上周啤酒和红酒分别卖得最好的是啥", "上周卖得最好的前三分别是多少钱", "上周啤酒和红酒各自卖得最好的是啥"):
        plan = chat_ask(user=hq, query=question)[0].data
        assert not plan or not plan[0]["params"].get("by_store"), question
    _, conv, _ = chat_ask(user=hq, query="上周卖了多少")
    rule, _, _ = chat_ask(user=hq, query="为什么客人喝多了不能再卖酒", thread_id=conv.thread_id)
    route = next(s for s in rule.trace if s["step"] == "route")["detail"]
    assert "营业额" not in route.get("resolved_query", "") and rule.citations[0]["document"] == "未成年人与醉酒客人", rule.answer


def test_a_comparison_with_a_day_still_to_come_says_the_day_has_not_come():
    # On a Tuesday, 「这周五跟上周五比怎么样」 was declined as 与门店运营无关: the coming Friday was
    # no period at all, so only one was named.
    from agent.data_guard import plan_data
    from agent.router import Turn, route

    tuesday = date(2026, 12, 8)
    question = "这周五跟上周五比怎么样"
    assert route(question, None, tuesday, Turn(question)).intent == "data"
    plan = plan_data(question, today=tuesday)
    assert plan.clarify == "「这周五」（2026-12-11）还没到，没有数据。", plan.as_dict()
