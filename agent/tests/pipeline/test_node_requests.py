"""Requests the router hands to a handler (agent.pipeline.requests): a page's address, a proposal
decided on its card, where the asker's proposals stand."""

import pytest

from agent.models import UnansweredQuestion
from agent.pipeline import answer_question
from agent.services import chat_ask
from ops.tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("question,url", [("查看审计记录", "/audit/"), ("审计记录在哪看", "/audit/"),
                                          ("未解答问题在哪里看", "/admin/agent/unansweredquestion/"), ("待确认的提案在哪", "/proposals/")])
def test_asking_where_a_page_is_gets_its_address(staff, question, url):
    # 「查看审计记录」 was declined as unrelated to the store.
    from django.urls import resolve

    result, _ = answer_question(question, user=staff)
    assert url in result.answer and not result.refused and resolve(url)


@pytest.mark.parametrize("question", ["盘点差异怎么处理", "查看上周营业额", "客人要看消费记录怎么办"])
def test_questions_that_are_not_about_a_page_are_not_pointed_at_one(staff, question):
    result, _ = answer_question(question, user=staff)
    assert "找页面" not in result.route_reason


@pytest.mark.parametrize("question", ["确认提案{pk}", "驳回 #{pk}", "批准一下{pk}号补货单"])
def test_deciding_a_proposal_in_chat_points_at_its_card(manager, question):
    # Was an out-of-scope refusal pointing at 《演出与活动安排》, logged as an unanswered question.
    from ops.models import Store
    from workflow.services import proposal_create

    proposal, _ = proposal_create(user=manager, kind="restock", store=Store.objects.get(code="GZ-TH"), source="api",
                                  payload={"lines": [{"sku": "B003", "quantity": 2, "unit": "瓶", "reason": "测试"}]})
    pk = str(proposal.pk)
    question = question.format(pk=pk)
    result, _ = answer_question(question, user=manager)
    assert not result.refused and result.intent == "action" and not result.proposal
    assert f"#{pk}" in result.answer and "/proposals/" in result.answer and "不会替任何人确认" in result.answer
    chat_ask(user=manager, query=question)
    assert not UnansweredQuestion.objects.filter(question=question).exists()


def test_numbers_of_people_are_not_proposal_numbers(staff):
    result, _ = answer_question("同意3个人一起请假吗", user=staff)
    assert result.intent == "policy"


def test_deciding_a_proposal_that_does_not_exist_says_so():
    # 「确认提案99999」 sent the user to /proposals/ to look for #99999.
    manager = make_user("agent_mgr_no_such", role="manager", stores=["GZ-TH"])
    for number in ("99999", "999999999999999999999999"):
        result, _, _ = chat_ask(user=manager, query=f"确认提案{number}")
        assert f"没有提案 #{number}" in result.answer and "找到" not in result.answer


@pytest.mark.parametrize("said,kind", [("你好", "greeting"), ("在吗", "greeting"), ("谢谢", "thanks"), ("好的谢谢", "thanks"),
                                       ("好的", "ack"), ("收到！", "ack"), ("拜拜", "bye"), ("🍺🍺🍺", "symbols"),
                                       # 「哈哈」 was answered from 食品安全, 「你能做什么」 from 卫生标准, 「你是谁」 declined as unrelated.
                                       ("哈哈", "laugh"), ("你能做什么", "about"), ("你是谁", "about"), ("你能帮我干啥", "about"),
                                       ("👍", "ack"), ("👌👌", "ack")])
def test_small_talk_gets_a_line_back_and_is_not_an_unanswered_question(staff, said, kind):
    # Seen: 「你好」 was answered from 社交媒体 › 负面舆情, 「谢谢」 with a stored-value table, 「好的」
    # as unrelated to the store, and each was filed under 未解答问题 for the manager.
    result, _, _ = chat_ask(user=staff, query=said)
    assert not result.refused and not result.citations and result.route_reason.startswith("寒暄")
    assert next(s for s in result.trace if s["step"] == "route")["detail"]["handler"] == "small_talk"
    assert not UnansweredQuestion.objects.filter(question=said).exists()


@pytest.mark.parametrize("question", ["你好，客人喝多了怎么办", "好吃吗", "可以退卡吗", "早上几点开门", "好的 帮我补两箱科罗娜",
                                      "你能做什么菜", "牛肉要冷藏吗"])
def test_a_question_that_starts_with_a_greeting_is_still_a_question(staff, question):
    result, _ = answer_question(question, user=staff)
    assert not any(s["step"] == "route" and s["detail"].get("handler") == "small_talk" for s in result.trace)


def test_a_step_of_the_previous_answer_is_that_step_with_its_source(staff):
    # Seen: after the numbered odd-taste procedure, 「刚才说的第二步是啥」 got 「制度里没有找到完全对应的
    # 规定」 and the call-the-manager list; 「第三条再说一遍」 the new-staff principles.
    first, conv, _ = chat_ask(user=staff, query="客人说酒味道怪怪的怎么办", thread_id="steps")
    lines = [line for line in first.answer.splitlines() if line[:2] == "2."]
    assert lines, first.answer
    second, _, _ = chat_ask(user=staff, query="刚才说的第二步是啥", thread_id="steps")
    assert second.answer == f"第 2 条：{lines[0][2:].strip()}" and not second.refused
    assert second.citations and second.citations[0]["section_path"] == first.citations[0]["section_path"]
    # The same list stays for the next one, and a number past its end is said to be.
    third, _, _ = chat_ask(user=staff, query="那第三步呢", thread_id="steps")
    assert third.answer.startswith("第 3 条：")
    assert chat_ask(user=staff, query="第9条再说一遍", thread_id="steps")[0].answer.startswith("上一条回答只列了")


def test_a_step_asked_after_an_answer_without_numbered_lines_says_there_are_none(staff):
    # Seen: 「刚才说的第二步是啥」 after the keg-change answer (no numbered lines) was searched on its own
    # and answered from the call-the-manager list.
    previous = {"intent": "policy", "top_document": "设备使用与保养", "top_section": "设备使用与保养 > 扎啤机的日常使用"}
    result, _ = answer_question("刚才说的第二步是啥", user=staff, previous=previous)
    assert result.answer.startswith("上一条回答没有分步骤列出") and not result.citations


def test_details_said_after_a_complaint_ticket_are_added_to_it(manager):
    # Seen: 「他吃了一口 现在没不舒服 桌号A5」 right after the ticket was proposed was answered as a
    # rules question about 外卖差评与退款, and the ticket kept only the first sentence.
    from core.models import AuditLog
    from workflow.models import Proposal

    first, _, _ = chat_ask(user=manager, query="有个客人说鸡翅没熟 要投诉 帮我建个工单", thread_id="ticket-more")
    pk = first.proposal["id"]
    more, _, _ = chat_ask(user=manager, query="桌号A5 他吃了一口", thread_id="ticket-more")
    assert more.answer.startswith("已把") and f"#{pk}" in more.answer
    ticket = Proposal.objects.get(pk=pk)
    assert ticket.payload["description"].endswith("；补充：桌号A5 他吃了一口") and ticket.status == "pending"
    assert AuditLog.objects.filter(action=AuditLog.Action.AMENDED, target_id=str(pk)).count() == 1
    # A second detail is added too; the same again changes nothing.
    chat_ask(user=manager, query="大概晚上八点", thread_id="ticket-more")
    again, _, _ = chat_ask(user=manager, query="大概晚上八点", thread_id="ticket-more")
    assert "已经在" in again.answer and Proposal.objects.get(pk=pk).payload["description"].count("大概晚上八点") == 1
    # A detail that makes it serious raises the severity (never lowers it) and says what the SOPs ask.
    ill, _, _ = chat_ask(user=manager, query="他现在说肚子有点疼", thread_id="ticket-more")
    assert Proposal.objects.get(pk=pk).payload["severity"] == "严重" and "严重" in ill.answer and "就医" in ill.answer
    # 「补充一下是…」 adds the detail, not the words announcing it.
    chat_ask(user=manager, query="补充一下是8号桌的客人", thread_id="ticket-more")
    assert Proposal.objects.get(pk=pk).payload["description"].endswith("；补充：8号桌的客人")
    # A question is answered as one, and the ticket is left alone.
    asked, _, _ = chat_ask(user=manager, query="客人要是吐了怎么办", thread_id="ticket-more")
    assert asked.intent == "policy" and "吐了" not in Proposal.objects.get(pk=pk).payload["description"]


def test_a_ticket_s_severity_or_category_is_changed_in_chat_right_after_it_was_proposed(manager):
    # 「严重程度改成严重」 and 「类别改成食品安全」 were answered with the rules on severity and food.
    from core.models import AuditLog
    from workflow.models import Proposal

    first, _, _ = chat_ask(user=manager, query="帮我建个投诉工单 8号桌客人说服务员态度差", thread_id="ticket-change")
    pk = first.proposal["id"]
    raised, _, _ = chat_ask(user=manager, query="严重程度改成严重", thread_id="ticket-change")
    assert raised.answer.startswith(f"已把客诉工单提案 #{pk} 的严重程度改为「严重」") and "就医" in raised.answer, raised.answer
    moved, _, _ = chat_ask(user=manager, query="类别改成食品安全", thread_id="ticket-change")
    payload = Proposal.objects.get(pk=pk).payload
    assert (payload["severity"], payload["category"]) == ("严重", "食品安全"), moved.answer
    same, _, _ = chat_ask(user=manager, query="改成严重", thread_id="ticket-change")
    assert "已经是「严重」" in same.answer
    crossed, _, _ = chat_ask(user=manager, query="类别改成一般", thread_id="ticket-change")  # a severity named as a category
    assert crossed.answer.startswith("严重程度只能是") and Proposal.objects.get(pk=pk).payload["severity"] == "严重"
    from datetime import date

    from agent.router import Turn, route_by_rules

    assert route_by_rules("算其他", date(2026, 12, 4), Turn("算其他", proposal_id=str(pk), ticket=True)).handler != "ticket_change"
    assert AuditLog.objects.filter(action=AuditLog.Action.AMENDED, target_id=str(pk)).count() == 2
    # Without a ticket just proposed it is not a change of anything.
    alone, _, _ = chat_ask(user=manager, query="严重程度改成严重")
    assert "已把" not in alone.answer
    Proposal.objects.filter(pk=pk).update(status="rejected")
