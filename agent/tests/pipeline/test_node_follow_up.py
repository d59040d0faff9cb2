"""Follow-ups that stand on the previous turn: 「那退卡呢」, 「要不要店长批」, an amount."""

import pytest

from agent import vocabulary as vocab
from agent.pipeline import answer_question
from agent.services import chat_ask

pytestmark = pytest.mark.django_db


def test_policy_follow_up_resolves_against_the_previous_turn(staff):
    _, conv, _ = chat_ask(user=staff, query="会员卡能跨店用吗")
    result, _, _ = chat_ask(user=staff, query="那退卡呢", thread_id=conv.thread_id)
    route = next(s for s in result.trace if s["step"] == "route")["detail"]
    assert route["resolved_query"].startswith("会员与储值规则 ") and route["resolved_query"].endswith(" 退卡")  # the document, near the section
    assert any(c["section_path"].endswith("退卡与退款") for c in result.citations)
    _, conv, _ = chat_ask(user=staff, query="满减和折扣券能一起用吗")
    result, _, _ = chat_ask(user=staff, query="那团购券呢", thread_id=conv.thread_id)
    resolved = next(s for s in result.trace if s["step"] == "route")["detail"]["resolved_query"]
    assert resolved.startswith("活动核销规则 ") and resolved.endswith(" 团购券")


def test_a_follow_up_without_a_new_thing_continues_the_previous_section(staff):
    # Was resolved against the document's title (「未成年人与醉酒客人 要不要打120」) and answered
    # from the section on minors; a follow-up that names no new thing continues the section.
    chat_ask(user=staff, query="客人喝多了吐了咋办", thread_id="fu-drunk")
    result, _, _ = chat_ask(user=staff, query="那要不要打120", thread_id="fu-drunk")
    route = next(s for s in result.trace if s["step"] == "route")["detail"]
    assert route["resolved_query"] == "醉酒客人的处理 要不要打120"


def test_a_short_question_without_a_situation_of_its_own_follows_up_the_previous_answer(staff):
    # 「要不要店长批？」 after a refund question was searched on its own and answered from the
    # section on guests feeling unwell; 「那150呢」 then followed that wrong section.
    first, _, _ = chat_ask(user=staff, query="客人要退款，金额250", thread_id="fu-refund")
    document = first.citations[0]["document"]
    result, _, _ = chat_ask(user=staff, query="要不要店长批？", thread_id="fu-refund")
    assert next(s for s in result.trace if s["step"] == "route")["detail"]["resolved_query"].startswith(f"{document} ")
    # A longer question is a question of its own.
    alone, _, _ = chat_ask(user=staff, query="要不要给喝醉的客人叫代驾", thread_id="fu-refund")
    assert next(s for s in alone.trace if s["step"] == "route")["detail"].get("resolved_query") is None


def test_who_approves_and_an_amount_follow_up_the_previous_rule(manager, staff):
    # 「要谁批」 after the write-off rule was searched on its own (→ 请假「由店长审批」), and
    # 「那要是三千块呢」 followed that; 「三百块的话」 after a refund was the call-the-manager list.
    def resolved(result):
        return next(s for s in result.trace if s["step"] == "route")["detail"].get("resolved_query", "")

    first, _, _ = chat_ask(user=manager, query="报损了几瓶摔碎的酒", thread_id="fu-writeoff")
    who, _, _ = chat_ask(user=manager, query="要谁批", thread_id="fu-writeoff")
    assert resolved(who) == f"{first.citations[0]['section_path'].split(' > ')[-1]} 要谁批"
    amount, _, _ = chat_ask(user=manager, query="那要是三千块呢", thread_id="fu-writeoff")
    assert resolved(amount).startswith(who.citations[0]["section_path"].split(" > ")[-1]), "an amount names no new thing"
    first, _, _ = chat_ask(user=staff, query="客人结完账要退款", thread_id="fu-amount")
    result, _, _ = chat_ask(user=staff, query="三百块的话", thread_id="fu-amount")
    assert resolved(result).startswith(first.citations[0]["section_path"].split(" > ")[-1]) and resolved(result).endswith("三百块的话")


def test_a_member_number_is_read_as_a_member_when_the_rules_are_searched(staff):
    # 「帮我查下M00010最近消费了啥」 was declined as unrelated to the store, then refused for want of a
    # rule about 「m00010」; the privacy section (只能告知余额，不能告知消费明细) answers it.
    assert vocab.as_rule_words("帮我查下M00010最近消费了啥") == "帮我查下会员最近消费了啥"
    assert vocab.as_rule_words("13800138000这个号的会员") == "手机号这个号的会员"
    assert vocab.as_rule_words("AM1234 和 M12") == "AM1234 和 M12"  # not a member number
    assert vocab.about_the_store("帮我查下M00010最近消费了啥")
    _, state = answer_question("帮我查下M00010最近消费了啥", user=staff)
    assert state.rules_query == "帮我查下会员最近消费了啥" and state.first.query == state.rules_query
    assert state.route.intent != vocab.OUT_OF_SCOPE


def test_a_follow_up_naming_a_new_thing_is_also_read_on_its_own(staff):
    # Seen: 「那换桶呢」 after a sour-beer question answered the sour-beer steps again (相关度 高),
    # and 「那电子发票呢」 after a group invoice the group-invoice section: the previous section's
    # heading in the resolved query pulled the search back to it.
    def first_section(result):
        return result.citations[0]["section_path"] if result.citations else ""

    chat_ask(user=staff, query="客人说酒味道怪怪的怎么办", thread_id="fu-keg")
    keg, _, _ = chat_ask(user=staff, query="那换桶呢", thread_id="fu-keg")
    reading = next(s for s in keg.trace if s["step"] == "follow_up_reading")["detail"]
    assert reading["chosen"] == "on_its_own" and reading["on_its_own"] > reading["within_previous"]
    assert not keg.refused and first_section(keg).endswith("扎啤机的日常使用")
    chat_ask(user=staff, query="客人要发票", thread_id="fu-invoice")
    invoice, _, _ = chat_ask(user=staff, query="那电子发票呢", thread_id="fu-invoice")
    assert first_section(invoice).endswith("开票方式")
    # A follow-up about the same document still lands in it: 「那如果客人喝了以后不舒服呢」.
    chat_ask(user=staff, query="客人说酒有异味怎么办", thread_id="fu-unwell")
    unwell, _, _ = chat_ask(user=staff, query="那如果客人喝了以后不舒服呢", thread_id="fu-unwell")
    assert first_section(unwell).endswith("客人饮用后身体不适")


def test_a_message_about_whom_the_thread_was_on_continues_it_and_is_never_declined_as_unrelated(staff):
    # 「他朋友说没事让我们接着上」 after a drunk guest, 「为啥要问这个」 after the steps and 「他能打印出来给他吗」
    # after a member's balance were declined as 与门店运营无关.
    _, conv, _ = chat_ask(user=staff, query="有个客人喝多了还要继续点酒 咋办")
    friend, _, _ = chat_ask(user=staff, query="他朋友说没事让我们接着上", thread_id=conv.thread_id)
    route = next(s for s in friend.trace if s["step"] == "route")["detail"]
    assert "醉酒客人的处理" in route["resolved_query"] and not friend.refused, friend.answer
    _, conv, _ = chat_ask(user=staff, query="帮我查下会员M00012的余额")
    printed, _, _ = chat_ask(user=staff, query="他能打印出来给他吗", thread_id=conv.thread_id)
    assert printed.intent != "out_of_scope" and "与门店运营无关" not in printed.answer, printed.answer
    # Out of the store's world in a thread is still declined in a line.
    weather, _, _ = chat_ask(user=staff, query="今天天气怎么样", thread_id=conv.thread_id)
    assert weather.intent == "out_of_scope"


def test_a_rules_question_about_the_figures_just_given_is_searched_with_what_they_were_about(staff):
    # 「他能打印出来给他吗」 after a member's balance was searched alone and refused, though the
    # membership rules say 「店员只能口头告知余额，不得打印或拍照」.
    _, conv, _ = chat_ask(user=staff, query="帮我查下会员M00012的余额")
    printed, _, _ = chat_ask(user=staff, query="他能打印出来给他吗", thread_id=conv.thread_id)
    assert not printed.refused and "不得打印" in printed.answer, printed.answer
    assert printed.citations[0]["section_path"].endswith("会员卡遗失与余额查询")


def test_a_members_balance_is_said_once():
    # The balance was said in the summary and again in a row line below it.
    from agent.compose import extractive_data_answer, number_sources
    from ops.tools import run_tool

    result = run_tool("member_balance", {"member": "M00012"}, user=None)
    sources = number_sources([], result)
    answer = extractive_data_answer(result, sources, "M00012 还剩多少钱")
    assert answer.count("M00012") == 1 and answer.endswith("[D1]") and "\n" not in answer, answer
