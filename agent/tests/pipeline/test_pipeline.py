"""The agent pipeline end to end: cited policy answers, figures from the database, clarifying replies,
scope and audiences. Real PostgreSQL, real corpus (hashing embedder), real tools; only the LLM server is faked.
Each node has its own file (test_node_*.py)."""
from datetime import timedelta

import pytest

from agent import compose
from agent.models import Message
from agent.pipeline import answer_question
from agent.services import chat_ask
from agent.tests.helpers import _section_hit
from ops.tests.factories import make_user
from ops.tools import local_today, run_tool

pytestmark = pytest.mark.django_db


def test_policy_answer_is_cited_and_traced(staff):
    result, _ = answer_question("会员卡能跨店用吗", user=staff)
    assert result.intent == "policy" and not result.refused
    assert result.citations and "[1]" in result.answer
    assert any("跨店" in c["section_path"] for c in result.citations)
    steps = [s["step"] for s in result.trace]
    assert steps[:2] == ["route", "guards"] and "judge" in steps and steps[-1] == "answer"
    assert all(isinstance(s["ms"], float) for s in result.trace)


def test_data_answer_states_the_database_figures(staff):
    result, _ = answer_question("上周天河店卖了多少", user=staff)
    expected = run_tool("store_sales", {"store": "天河店", "period": "上周"}, user=None)
    assert result.intent == "data" and result.data[0]["row"] == expected.rows[0]
    assert f"{expected.rows[0]['orders']} 单" in result.answer and "[D1]" in result.answer
    assert result.data[0]["params"]["period"]["label"] == "上周"


def test_unknown_store_and_missing_period_become_clarifying_replies(staff):
    result, _ = answer_question("上周北京三里屯店卖了多少", user=staff)
    assert "北京三里屯店" in result.answer and "广州天河店" in result.answer and not result.data
    assert "深圳福田店" not in result.answer  # only the asker's own stores are listed
    other, _ = answer_question("上周福田店卖了多少", user=staff)  # a store of the chain outside the asker's scope
    assert "深圳福田店的数据你没有权限查看；你可以查看：广州天河店" in other.answer and not other.data
    result, _ = answer_question("天河店卖了多少", user=staff)
    assert "哪段时间" in result.answer and not result.data


def test_another_users_thread_id_is_a_thread_of_ones_own_and_reveals_nothing(staff, manager):
    # It was a 403 「这个会话属于其他用户」: proof that the thread exists. Thread ids are
    # per user now: the same id is the other user's own, empty, thread.
    from django.core.exceptions import ValidationError

    from agent.services import conversation_delete, conversation_rename

    _, conv, _ = chat_ask(user=staff, query="会员卡能跨店用吗")
    result, mine, _ = chat_ask(user=manager, query="那退卡呢", thread_id=conv.thread_id)
    assert mine.pk != conv.pk and mine.user == manager and mine.thread_id == conv.thread_id
    assert Message.objects.filter(conversation=conv).count() == 2  # the staff's thread is untouched
    for action in (lambda: conversation_rename(user=manager, thread_id="nobody-has-this", title="x"),
                   lambda: conversation_delete(user=manager, thread_id="nobody-has-this")):
        with pytest.raises(ValidationError) as exc:
            action()
        assert exc.value.message_dict["thread_id"] == ["没有这个会话。"]
    conversation_delete(user=manager, thread_id=conv.thread_id)  # the manager's own thread of that id
    conv.refresh_from_db()
    assert conv.deleted_at is None


def test_staff_never_get_manager_only_citations(staff, manager):
    result, _ = answer_question("店长的免单权限和报损审批", user=staff)
    assert all(c["document"] != "店长手册" for c in result.citations)
    result, _ = answer_question("店长的免单权限和报损审批", user=manager)
    hits = next(s for s in result.trace if s["step"] == "guards")["detail"]["retrieve_guard"]["hits"]
    assert any(h["section_path"].startswith("店长手册") for h in hits)


def test_a_pointer_to_a_document_the_reader_cannot_open_says_so(staff, manager):
    # 「报损金额的审批权限见《店长手册》」 sent a bartender to a document they cannot open, with no word on it.
    result, _ = answer_question("报损金额谁来审批", user=staff)
    assert "见《店长手册》" in result.answer
    assert "注意：《店长手册》你没有权限查看，这部分请问店长。" in result.answer
    result, _ = answer_question("报损金额谁来审批", user=manager)
    assert "你没有权限查看" not in result.answer


def test_the_closed_reference_note_names_only_documents_closed_to_the_reader():
    from agent.pipeline.answer import closed_reference_note
    from knowledge.selectors import Visibility

    staff_view, manager_view = Visibility(("staff",), None), Visibility(("staff", "manager"), None)
    said = "按《未成年人与醉酒客人》处理；审批权限见《店长手册》；另见《没有这篇》。"
    assert closed_reference_note(said, staff_view) == "注意：《店长手册》你没有权限查看，这部分请问店长。"
    assert closed_reference_note(said, manager_view) == ""
    assert closed_reference_note("没有书名号", staff_view) == ""


def test_period_for_data_answers_uses_today(staff):
    result, _ = answer_question("昨天天河店营业额", user=staff)
    assert result.data[0]["params"]["period"]["start"] == (local_today() - timedelta(days=1)).isoformat()


def test_everyday_questions_from_the_issue(staff):
    # Head office reads every store (a store's staff would see their own store only).
    hq = make_user("agent_hq", role="hq", stores=[])
    # 「目前为止四家店」 was taken for a store name.
    result, state = answer_question("这个月到目前为止四家店哪家卖得最好", user=hq)
    assert result.intent == "data" and state.plan.tool == "compare_stores" and len(result.data) == 4
    assert result.data[0]["params"]["period"]["start"] == local_today().replace(day=1).isoformat()
    # Routed to policy and refused before.
    result, state = answer_question("福田店有哪些东西快断货了", user=hq)
    assert result.intent == "data" and state.plan.tool == "low_stock" and state.plan.params["store"] == "深圳福田店"
    assert {d["row"]["store"] for d in result.data} <= {"深圳福田店"}
    # A question about the rule is not answered with every store's low-stock rows.
    result, state = answer_question("多少瓶算低库存", user=staff)
    assert result.intent == "policy" and not result.data
    # 「前两名」 was known to data_guard only.
    result, state = answer_question("天河店上周卖得前两名的商品", user=staff)
    assert result.intent == "data" and state.plan.params["n"] == 2 and len(result.data) == 2


def test_an_unreadable_month_is_questioned_by_name(staff):
    result, _ = answer_question("天河店2025年13月卖了多少", user=staff)
    assert "13月不是有效的月份" in result.answer and not result.data


def test_a_range_with_years_is_answered_whole_in_chat(staff):
    # Was read as its first day only (¥5,608 instead of ¥245,296 on the demo data).
    today = local_today()
    start, end = today - timedelta(days=25), today - timedelta(days=2)
    question = f"天河店{start.year}年{start.month}月{start.day}日到{end.year}年{end.month}月{end.day}日卖了多少"
    result, state = answer_question(question, user=staff)
    whole = run_tool("store_sales", {"store": "天河店", "period": {"start": start.isoformat(), "end": end.isoformat()}}, user=None)
    assert state.plan.params["period"]["start"] == start.isoformat() and state.plan.params["period"]["end"] == end.isoformat()
    assert result.data[0]["row"] == whole.rows[0]
    far, _ = answer_question("天河店1900年1月1日到2100年1月1日卖了多少", user=staff)
    assert "超过一年" in far.answer and not far.data


def test_a_cited_section_is_read_once_per_answer(staff, django_assert_max_num_queries):
    from knowledge.embedders import get_embedder

    qvec = get_embedder().embed_query("满减券和折扣券能叠加吗")
    hit = _section_hit("活动核销规则 > 叠加规则", 1.0)
    units: dict = {}
    compose.select_citation_hits([hit], qvec=qvec, units=units)
    with django_assert_max_num_queries(0):  # selection already read it
        sources = compose.number_sources([hit], None, qvec=qvec, units=units)
    assert sources.citations[0]["text"] and sources.sections["1"] is units[hit.chunk_id]


def test_a_short_opening_question_is_not_refused_for_a_bank_question_that_shares_its_frame(staff):
    # 「开店要做什么」 was refused: the shipped bank of uncovered questions held 「创始人开店之前是做什么的」
    # (cosine 0.96 to it), now worded by what it is about.
    from knowledge.calibration import negative_bank

    assert all(b.q != "创始人开店之前是做什么的" for b in negative_bank())
    result, _ = answer_question("开店要做什么", user=staff)
    assert not result.refused and result.citations[0]["document"] == "开店与闭店流程", result.answer


def test_checking_a_young_guests_id_is_the_age_check_not_lost_property(staff):
    # 「看着像未成年要不要查身份证」 got the lost-and-found rule: the demo corpus's synonym list read
    # 身份证 as a 贵重物品 (a lost guest's valuables), and searched for those.
    from knowledge.text import query_terms

    assert "贵重物品" not in query_terms("看着像未成年要不要查身份证")
    assert "贵重物品" in query_terms("客人手机落在包厢了")  # a phone left behind still is one
    result, _ = answer_question("看着像未成年要不要查身份证", user=staff)
    assert result.citations[0]["section_path"].endswith("查验年龄"), result.answer
    assert "查验身份证" in result.answer
