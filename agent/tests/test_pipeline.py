"""The agent pipeline: concurrency, judge layers, rewrite, per-round selection, refusal,
the four guards, follow-ups and LLM-down degradation. Real PostgreSQL, real corpus
(hashing embedder), real tools; only the LLM server is faked."""
import threading
from datetime import date, timedelta

import pytest

from agent import compose, pipeline
from agent import vocabulary as vocab
from agent.llm import get_llm
from agent.models import Message, UnansweredQuestion
from agent.pipeline import Round, answer_question, start
from agent.pipeline.judge import judge
from agent.pipeline.loop import agent_loop, rewrite
from agent.router import Route
from agent.services import chat_ask
from knowledge.models import IndexMeta
from knowledge.selectors import Hit, SearchResult, search
from ops.tests.factories import make_user
from ops.tools import local_today, run_tool

from .fakes import openai_chat

pytestmark = pytest.mark.django_db


def state_for(question, user, **kw):
    state = start(question, user=user, today=local_today(), **kw)
    pipeline.follow_up.resolve_follow_up(state)
    pipeline.routing.route_node(state)
    return state


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


def test_the_two_guards_run_concurrently(staff, monkeypatch):
    barrier = threading.Barrier(2, timeout=10)
    real_retrieve, real_data = pipeline.guards.retrieve_guard, pipeline.guards.data_guard

    def retrieve(state):
        barrier.wait()  # both guards must be inside at the same time, or this raises
        return real_retrieve(state)

    def data(state):
        barrier.wait()
        return real_data(state)

    monkeypatch.setattr(pipeline.guards, "retrieve_guard", retrieve)
    monkeypatch.setattr(pipeline.guards, "data_guard", data)
    result, state = answer_question("上周天河店卖了多少，满减券的规则是什么", user=staff)
    assert result.intent == "both" and result.data and result.citations
    guards = next(s for s in result.trace if s["step"] == "guards")["detail"]
    r_span, d_span = guards["retrieve_guard"]["span_ms"], guards["data_guard"]["span_ms"]
    assert r_span[0] < d_span[1] and d_span[0] < r_span[1]  # the spans overlap


def test_unneeded_guard_returns_empty(staff):
    result, _ = answer_question("上周天河店卖了多少", user=staff)
    guards = next(s for s in result.trace if s["step"] == "guards")["detail"]
    assert guards["retrieve_guard"]["skipped"] is True and guards["data_guard"]["rows"] == 1


def _round(hits, attempt=0, query="满减券和折扣券能叠加吗"):
    return Round(attempt, query, SearchResult(query, hits, []))


def _hit(text, path="文档 > 节", vector_score=0.5, cid=1):
    h = Hit(cid, 1, "文档", "x.md", path, text, "staff", score=0.1)
    h.vector_score = vector_score
    return h


def coverage_model(threshold=0.5):
    """A hand-written answerability model: the share of the question's words the corpus uses."""
    from knowledge.answerability import FEATURES

    meta = IndexMeta.objects.get()
    coef = [10.0 if f == "coverage" else 0.0 for f in FEATURES]
    meta.answerability = {"signature": meta.signature, "features": list(FEATURES), "mean": [0.0] * len(FEATURES),
                          "std": [1.0] * len(FEATURES), "coef": coef, "bias": -5.0, "threshold": threshold}
    meta.save(update_fields=["answerability"])
    return meta


def test_judge_scores_answerability_with_the_questions_own_vector(staff):
    coverage_model()
    state = state_for("满减券和折扣券能叠加吗", staff)
    state.first = search(state.resolved_query, audiences=state.audiences, k=5)
    rnd = _round(state.first.hits)
    rnd.result = state.first
    judge(state, rnd)
    assert rnd.enough and rnd.layer == "answerability" and rnd.score > 0.5
    detail = next(s["detail"] for s in state.trace.steps if s["step"] == "judge")
    assert set(detail["answerability"]["signals"]) >= {"coverage", "section_coverage", "sentence_sim", "margin"}

    state = state_for("员工可以带宠物狗上班吗", staff)
    state.first = search(state.resolved_query, audiences=state.audiences, k=5)
    rnd = _round(state.first.hits)
    rnd.result = state.first
    judge(state, rnd)
    assert not rnd.enough and rnd.verdict.missing_terms and any("宠物" in t for t in rnd.verdict.missing_terms)


def test_judge_grey_zone_goes_to_the_llm(staff, settings, fake_http):
    coverage_model(threshold=0.9)  # the answerable question scores just under it: the grey zone
    settings.SM_LLM_BACKEND, settings.SM_OPENAI_BASE = "openai", fake_http.url + "/v1"  # read once, as the question starts
    state = state_for("满减券和折扣券能叠加吗", staff)
    state.first = search(state.resolved_query, audiences=state.audiences, k=5)
    fake_http.routes["/v1/chat/completions"] = openai_chat("OK")
    rnd = _round(state.first.hits)
    rnd.result = state.first
    judge(state, rnd)
    assert rnd.layer == "llm" and rnd.enough


def test_without_a_calibrated_model_nothing_is_refused_on_a_score(staff):
    result, _ = answer_question("员工可以带宠物狗上班吗", user=staff)
    assert not result.refused


def test_rewrite_prepends_terms_and_keeps_the_question(staff, settings, fake_http):
    import numpy as np

    from knowledge.embedders import get_embedder, normalise_query

    state = state_for("客人说吃到变质的酒", staff)
    state.first = search(state.resolved_query, audiences=state.audiences, k=5)
    query, vector = rewrite(state, _round([]))
    assert query.endswith("客人说吃到变质的酒") and len(query) > len("客人说吃到变质的酒")
    # Section titles: the vector is the question's plus the titles' mean, no model call for the new text.
    titles = query[: -len("客人说吃到变质的酒")].split()
    embedder = get_embedder()
    expected = state.first.qvec + np.mean([embedder.embed_query(t) for t in titles], axis=0)
    assert np.allclose(vector, expected / np.linalg.norm(expected), atol=1e-6)
    assert embedder.query_cache.get(normalise_query(query)) is None, "the rewritten text was embedded"
    settings.SM_LLM_BACKEND, settings.SM_OPENAI_BASE = "openai", fake_http.url + "/v1"
    fake_http.routes["/v1/chat/completions"] = openai_chat("酒水异味 品质问题")
    state.llm = get_llm()  # what start() resolves for a question asked with an LLM configured
    assert rewrite(state, _round([])) == ("酒水异味 品质问题 客人说吃到变质的酒", None)  # an LLM's words are embedded


def test_first_round_judged_enough_is_used_and_rounds_are_never_pooled(staff, monkeypatch):
    state = state_for("退卡怎么办", staff, max_attempts=2)
    verdicts = iter([False, True, True])

    def fake_judge(state, rnd):
        rnd.enough, rnd.score = next(verdicts), 0.1
    monkeypatch.setattr(pipeline.loop, "judge", fake_judge)
    first = search("退卡怎么办", k=5)
    agent_loop(state, first)
    assert len(state.rounds) == 2 and state.chosen is state.rounds[1]
    assert state.chosen.hits == state.rounds[1].result.hits  # only that round's chunks

    state = state_for("退卡怎么办", staff, max_attempts=2)
    scores = iter([0.3, 0.9, 0.5])

    def never_enough(state, rnd):
        rnd.enough, rnd.score = False, next(scores)
    monkeypatch.setattr(pipeline.loop, "judge", never_enough)
    agent_loop(state, first)
    assert len(state.rounds) == 3 and state.chosen is state.rounds[1]


def test_agent_off_means_a_single_round(staff):
    coverage_model()
    _, state = answer_question("员工可以带宠物上班吗", user=staff, max_attempts=0)
    assert len(state.rounds) == 1


def test_a_hopeless_first_round_is_not_rewritten(staff, monkeypatch):
    # 「比特币现在多少钱一个」 went through three retrievals (two of them rewritten toward
    # section titles) to be refused as out of scope; below a fifth of the threshold the
    # rewrite rounds are skipped now.
    coverage_model()
    again = []
    real = pipeline.loop.retrieve_again
    monkeypatch.setattr(pipeline.loop, "retrieve_again", lambda *a, **kw: again.append(a[1]) or real(*a, **kw))
    result, state = answer_question("比特币现在多少钱一个", user=staff, max_attempts=2)
    assert result.refused and state.route.intent == vocab.OUT_OF_SCOPE
    assert len(state.rounds) == 1 and again == []
    rewrite_steps = [s for s in result.trace if s["step"] == "rewrite"]
    assert len(rewrite_steps) == 1 and rewrite_steps[0]["detail"]["skipped"] is True
    assert state.rounds[0].score < pipeline.loop.REWRITE_FLOOR * state.rounds[0].verdict.threshold
    # Not enough, but not hopeless: rewritten and retrieved again.
    _, state = answer_question("员工可以带盆栽上班吗", user=staff, max_attempts=2)
    assert state.rounds[0].score >= pipeline.loop.REWRITE_FLOOR * state.rounds[0].verdict.threshold
    assert len(state.rounds) == 3 and len(again) == 2


def test_with_an_llm_a_hopeless_first_round_is_still_rewritten(staff, settings, fake_http):
    # The floor was measured without an LLM; an LLM's rewrite brings its own search terms.
    coverage_model()
    settings.SM_LLM_BACKEND, settings.SM_OPENAI_BASE = "openai", fake_http.url + "/v1"
    fake_http.routes["/v1/chat/completions"] = openai_chat("MISS")
    _, state = answer_question("比特币现在多少钱一个", user=staff, max_attempts=2)
    assert state.rounds[0].score < pipeline.loop.REWRITE_FLOOR * state.rounds[0].verdict.threshold
    assert len(state.rounds) == 3


def test_near_domain_refusal_names_what_is_missing_and_lands_on_the_unanswered_list(staff):
    coverage_model()
    result, conv, reply = chat_ask(user=staff, query="员工可以带盆栽上班吗")
    assert result.refused and not result.citations
    steps = [s["step"] for s in result.trace]
    assert steps.count("judge") == 3 and "rewrite" in steps and steps[-1] == "refuse"
    assert "制度里没有关于「盆栽" in result.answer and "相近的内容在《" in result.answer
    item = UnansweredQuestion.objects.get(message=reply)
    assert item.question == "员工可以带盆栽上班吗" and item.reason.startswith("制度里找不到能回答的内容（可答性")
    # A section that shares no word with the question is no 「相近的内容」: 「团建经费有多少」 was
    # pointed at 《团购与平台券核销》 for the character 团.
    unrelated, _, _ = chat_ask(user=staff, query="团建经费有多少")
    assert unrelated.refused and "「经费」" in unrelated.answer and "相近的内容" not in unrelated.answer



def _answers_everything():
    """An answerability model under which every question is enough on its score (0.5 ≥ 0.1)."""
    from knowledge import answerability

    meta = IndexMeta.objects.get()
    n = len(answerability.FEATURES)
    return answerability.scoring_with({"signature": meta.signature, "features": list(answerability.FEATURES),
                                       "mean": [0.0] * n, "std": [1.0] * n, "coef": [0.0] * n, "bias": 0.0, "threshold": 0.1})


def test_a_topic_the_sops_leave_to_others_is_refused_and_sent_to_whoever_answers_it(staff):
    # 「我想辞职要提前多久说」 was answered with 请假's 「提前 2 周申请」.
    with _answers_everything():
        result, conv, reply = chat_ask(user=staff, query="我想辞职，要提前多久跟店长说")
        assert result.refused and not result.citations and result.intent == "policy"
        assert result.answer.startswith("抱歉，门店制度不涉及「辞职」")
        assert "人事与薪酬方面的问题请问店长或公司人事部门" in result.answer and "相近的内容" not in result.answer
        judges = [s["detail"] for s in result.trace if s["step"] == "judge"]
        assert len(judges) == 1 and judges[0]["layer"] == "uncovered"  # no rewrite changes what it is about
        assert judges[0]["answerability"]["uncovered"]["words"] == ["辞职"]
        item = UnansweredQuestion.objects.get(message=reply, question="我想辞职，要提前多久跟店长说")
        assert item.source == UnansweredQuestion.Source.UNCOVERED
        assert item.reason == "制度不管的话题（人事与薪酬：辞职，应问店长或公司人事部门）"
        answered, _ = answer_question("员工请假要提前多久申请", user=staff)
        assert not answered.refused and answered.citations
        # A word inside other words is not the topic: 「增加班次」 does not say 加班.
        answered, _ = answer_question("周末要不要增加班次", user=staff)
        assert not any(s["detail"].get("layer") == "uncovered" for s in answered.trace if s["step"] == "judge")


def test_an_uncovered_topic_is_no_off_topic_question(staff):
    # 「在职证明找谁开」 has no word of the store's world in the vocabulary: it was declined as
    # unrelated to the store and filed off-topic, and never said who answers it.
    with _answers_everything():
        result, conv, reply = chat_ask(user=staff, query="在职证明找谁开")
    assert result.refused and result.intent == "policy" and "店长或公司人事部门" in result.answer
    assert UnansweredQuestion.objects.get(message=reply).source == UnansweredQuestion.Source.UNCOVERED


def test_with_an_llm_an_uncovered_topic_is_neither_rewritten_nor_judged_by_it(staff, settings, fake_http):
    calls = []
    settings.SM_LLM_BACKEND, settings.SM_OPENAI_BASE = "openai", fake_http.url + "/v1"
    fake_http.routes["/v1/chat/completions"] = lambda body: calls.append(body) or openai_chat("OK")(body)
    with _answers_everything():
        result, state = answer_question("婚假能休几天", user=staff, max_attempts=2)
    assert result.refused and len(state.rounds) == 1
    assert [c["messages"][0]["content"][:12] for c in calls] == ["你是门店运营助手的意图分"]  # the router's only
    assert "人事与薪酬方面的问题请问店长或公司人事部门" in result.answer


def test_figures_are_given_and_the_uncovered_half_is_sent_to_its_owner(staff, settings, fake_http):
    owner = "制度文档里没有关于「提成」的规定，人事与薪酬方面的问题请问店长或公司人事部门。"
    with _answers_everything():
        result, conv, reply = chat_ask(user=staff, query="上周天河店卖了多少，卖酒提成怎么算")
        assert result.intent == "both" and result.data and not result.citations and not result.refused
        assert "[D1]" in result.answer and owner in result.answer
        assert UnansweredQuestion.objects.get(message=reply).source == UnansweredQuestion.Source.UNCOVERED
        # The LLM writes from the figures; the owner is still named after it.
        settings.SM_LLM_BACKEND, settings.SM_OPENAI_BASE = "openai", fake_http.url + "/v1"
        fake_http.routes["/v1/chat/completions"] = openai_chat("上周天河店营业额见[D1]。")
        result, _ = answer_question("上周天河店卖了多少，卖酒提成怎么算", user=staff)
    assert result.answer.startswith("上周天河店营业额见[D1]。") and owner in result.answer


def test_a_products_price_the_sops_never_give_is_sent_to_the_pos(staff):
    # 「百威一瓶卖多少」 was answered from 员工消费 and 「红酒多少钱一瓶」 from 无酒精饮品推荐: no line of
    # the SOPs gives either a price.
    with _answers_everything():
        result, conv, reply = chat_ask(user=staff, query="百威一瓶卖多少？客人嫌贵问我")
        assert result.refused and result.intent == "policy" and not result.citations
        assert result.answer.startswith("抱歉，门店制度不涉及「百威的售价」") and "价格以 POS 里的为准" in result.answer
        assert UnansweredQuestion.objects.get(message=reply).source == UnansweredQuestion.Source.UNCOVERED
        # A price the SOPs do give is answered: 芝华士 12 年 整瓶 458 元.
        answered, _ = answer_question("客人要整瓶芝华士 多少钱来着", user=staff)
        assert not answered.refused and "458 元" in answered.answer
        # Asking about 百威 without asking its price is no price question, nor is a price mentioned.
        for question in ("百威卖光了，系统里怎么弄", "客人嫌百威价格贵，我能给打个折吗"):
            other, state = answer_question(question, user=staff)
            assert not any(s["detail"].get("layer") == "uncovered" for s in other.trace if s["step"] == "judge"), question
        # In a question that also asks for figures, 「卖了多少钱」 is the figures' half.
        both, state = answer_question("天河店这个月百威卖了多少钱，客人嫌贵我能打折吗", user=staff)
        assert state.route.intent == "both" and "百威的售价" not in both.answer

# --- the four guards: each fails without it --------------------------------------------------


def _sources():
    hits = [_hit("满减券和折扣券不能叠加使用。", cid=11), _hit("单品券可以和满减券叠加。", cid=12)]
    tool = run_tool("low_stock", {"store": "天河店"}, user=None)
    return compose.number_sources(hits, tool), tool


def test_guard_one_removes_citations_that_point_nowhere():
    sources, tool = _sources()
    draft = "不能叠加[1]。单品券可以[2]。店长说可以[7]。库存见[D1][D9]。"
    answer, removed = compose.guard_unknown_citations(draft, sources)
    assert "[7]" in draft and "[7]" not in answer and "[D9]" not in answer
    assert "[1]" in answer and "[D1]" in answer and set(removed) == {"[7]", "[D9]"}


def test_guard_two_documents_and_rows_are_numbered_separately():
    sources, tool = _sources()
    assert [c["ref"] for c in sources.citations] == ["1", "2"]
    assert [d["ref"] for d in sources.data] == [f"D{i}" for i in range(1, len(tool.rows) + 1)]
    # A data row may never be cited as a document: [3] is not a source even if there are 3 rows.
    answer, _ = compose.guard_unknown_citations("见[3]", sources)
    assert answer == "见"


def test_guard_three_every_row_appears(staff):
    sources, tool = _sources()
    assert len(tool.rows) >= 2
    first = tool.rows[0]["product"]
    draft = f"{first} 库存不足[D1]。"
    answer, missing = compose.guard_all_rows(draft, tool, sources)
    for row in tool.rows:
        assert row["product"] in answer
    assert missing and all(m not in draft for m in missing)


def test_guard_four_mandatory_clause_always_included():
    from knowledge.models import Document

    quality = Document.objects.get(title="酒水异味或品质问题处理")
    bottle_keeping = Document.objects.get(title="包厢预订与存酒")

    def cited_from(document):
        hit = _hit("先道歉并更换酒水。", cid=99)
        hit.document_id = document.pk
        return compose.number_sources([hit], None)

    draft = "先道歉并更换酒水[1]。"
    sources = cited_from(quality)
    answer, added = compose.guard_mandatory_clauses("客人说喝了变质的酒", draft, sources, ["staff"])
    assert "就医" not in draft and "就医" in answer and added
    assert any("身体不适" in c["section_path"] for c in sources.citations)  # cited, not invented
    untouched, none = compose.guard_mandatory_clauses("黑牌多少钱", draft, cited_from(quality), ["staff"])
    assert untouched == draft and not none
    # Words with everyday senses (过期, 坏了, 不舒服) count only when the answer is about the rule's
    # own scenario: a voucher or stored liquor that 过期 gets no 「建议客人就医」 …
    for question in ("送的钱会过期吗", "存的酒过期了没人拿怎么办", "存在店里的红酒坏了没有"):
        untouched, none = compose.guard_mandatory_clauses(question, draft, cited_from(bottle_keeping), ["staff"])
        assert untouched == draft and not none, question
    # … while a spoiled drink does, and 拉肚子 (an always-trigger) does whatever the sources are.
    assert "就医" in compose.guard_mandatory_clauses("客人说这瓶酒过期了", draft, cited_from(quality), ["staff"])[0]
    assert "就医" in compose.guard_mandatory_clauses("存的酒过期了，客人喝了拉肚子", draft, cited_from(bottle_keeping), ["staff"])[0]


def test_guards_apply_to_llm_answers(staff, settings, fake_http):
    settings.SM_LLM_BACKEND, settings.SM_OPENAI_BASE = "openai", fake_http.url + "/v1"
    answer_route, judge_route = openai_chat("先道歉并换一杯[1]，按公司规定赔偿[5]。"), openai_chat("OK")
    # Like a real model, the server answers the judge's prompt and the answer prompt differently.
    fake_http.routes["/v1/chat/completions"] = lambda body: (judge_route if "判断参考资料" in body["messages"][0]["content"] else answer_route)(body)
    result, _ = answer_question("客人说喝了变质的酒怎么办", user=staff)
    assert "[5]" not in result.answer and "就医" in result.answer
    answer_step = next(s for s in result.trace if s["step"] == "answer")["detail"]
    assert answer_step["mode"] == "llm" and answer_step["guards"]["citations_removed"] == ["[5]"]


def test_llm_down_degrades_to_extractive(staff, settings):
    settings.SM_LLM_BACKEND, settings.SM_OPENAI_BASE, settings.SM_LLM_TIMEOUT = "openai", "http://127.0.0.1:9/v1", 1.0
    result, _ = answer_question("会员卡能跨店用吗", user=staff)
    answer_step = next(s for s in result.trace if s["step"] == "answer")["detail"]
    assert answer_step["mode"] == "extractive" and "降级" in answer_step["degraded"]
    assert result.citations and "[1]" in result.answer


# --- conversations -----------------------------------------------------------------------------


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


# --- answers that say the thing ---------------------------------------------------------------


def test_a_procedure_answer_keeps_every_step_and_leads_with_the_answer(staff):
    from knowledge.embedders import get_embedder
    from knowledge.models import Chunk

    chunk = Chunk.objects.select_related("document").get(section_path="酒水异味或品质问题处理 > 现场处理步骤")
    hit = Hit(chunk.id, chunk.document_id, chunk.document.title, chunk.document.path, chunk.section_path, chunk.text, "staff", score=1.0)
    question = "客人说酒喝着有股怪味怎么办"
    sources = compose.number_sources([hit], None, qvec=get_embedder().embed_query(question))
    answer = compose.extractive_policy_answer(question, sources, [])
    for fact in ("道歉", "免费为客人更换", "200 毫升", "48 小时", "5 分钟内告知值班主管"):
        assert fact in answer, fact
    lines = answer.splitlines()
    assert all(line.endswith("[1]") for line in lines)
    steps = [line for line in lines if line[:2] in {"1.", "2.", "3.", "4.", "5."}]
    assert [s[:2] for s in steps] == ["1.", "2.", "3.", "4.", "5."]  # the procedure whole and in order
    # The old composition kept the two best-matching sentences of a chunk: steps 3–5 were lost.
    assert len(steps) == 5


def test_a_long_section_is_cut_to_what_is_relevant_but_a_table_stays_whole(staff):
    from knowledge.selectors import SectionUnit

    units = [SectionUnit("sentence", f"第{i}条规定的内容。", i, similarity=0.5) for i in range(12)]
    units[7].similarity = 0.9
    units.append(SectionUnit("table", "| 角色 | 免单 |\n| --- | --- |\n| 店长 | 200 元 |", 20, similarity=0.89))
    lines = compose.section_lines(units, [])
    assert lines[0] == "第7条规定的内容。"
    assert "| 角色 | 免单 |\n| --- | --- |\n| 店长 | 200 元 |" in lines
    assert len(lines) <= compose.MAX_LINES


def _section_hit(section_path, score):
    from knowledge.models import Chunk

    chunk = Chunk.objects.select_related("document").filter(section_path=section_path).order_by("ordinal").first()
    return Hit(chunk.id, chunk.document_id, chunk.document.title, chunk.document.path, chunk.section_path, chunk.text, "staff", score=score)


def test_a_second_section_is_cited_only_when_it_answers_on_its_own(staff):
    from knowledge.embedders import get_embedder

    question = "满减券和折扣券能叠加吗"
    qvec = get_embedder().embed_query(question)
    answer = _section_hit("活动核销规则 > 叠加规则", 1.0)
    unrelated = _section_hit("设备使用与保养 > 制冰机", 0.99)  # fused almost as high, says nothing about coupons
    assert compose.select_citation_hits([answer, unrelated], qvec=qvec) == [answer]
    same_again = _section_hit("活动核销规则 > 叠加规则", 0.98)
    assert compose.select_citation_hits([answer, same_again], qvec=qvec) == [answer]  # one section, cited once


def test_a_refused_question_not_about_the_store_is_out_of_scope(staff, settings):
    # Was decided by how close the nearest section scored: 「红烧肉怎么做才不腻」 lands near the
    # recipes and counted as a gap in the rules; 「店里WiFi密码多久换」 near nothing, as off-topic.
    coverage_model()
    for threshold in (0.0, 0.999):  # the cosine split no longer decides
        settings.SM_REFUSAL_THRESHOLD = threshold
        near, _ = answer_question("员工可以带盆栽上班吗", user=staff)
        assert near.refused and near.intent == "policy"
        far, _ = answer_question("明年流行什么颜色的羽绒服", user=staff)
        assert far.refused and far.intent == "out_of_scope" and far.route_reason.startswith("与门店制度无关")
        # Declined in one line: no "nearest SOP" for a question about something else entirely.
        assert far.answer == vocab.DECLINE["与门店无关"] and "相近的内容" in near.answer


def test_the_same_unanswered_question_asked_again_counts_up(staff):
    # Was one row per ask: 150 refused chats made 150 rows on the manager's list.
    coverage_model()
    question = "员工可以带宠物狗上班吗"
    for _ in range(3):
        result, _, _ = chat_ask(user=staff, query=question)
        assert result.refused
    rows = UnansweredQuestion.objects.filter(user=staff, question=question)
    assert rows.count() == 1 and rows.get().times_asked == 3
    other = make_user("agent_staff_other", role="staff", stores=["GZ-TH"])
    chat_ask(user=other, query=question)
    assert UnansweredQuestion.objects.filter(question=question).count() == 2  # per asker


@pytest.mark.parametrize("question", ["帮我写一首关于啤酒的诗", "hi", "明天股市会涨吗"])
def test_an_off_topic_question_is_filed_apart_from_the_managers_gap_list(staff, question, client):
    # 「hi」, 股市 and poems filled the unanswered list a manager works through to find SOP gaps.
    coverage_model()
    result, _, _ = chat_ask(user=staff, query=question)
    assert result.refused and result.intent == "out_of_scope"
    item = UnansweredQuestion.objects.get(question=question)
    assert item.source == UnansweredQuestion.Source.OFF_TOPIC
    manager = make_user("agent_manager_gaps", role="manager", stores=["GZ-TH"], is_staff=True)
    client.force_login(manager)
    listed = client.get("/admin/agent/unansweredquestion/").context_data["cl"].queryset
    assert not listed.filter(pk=item.pk).exists()
    asked = client.get("/admin/agent/unansweredquestion/", {"source__exact": "off_topic"}).context_data["cl"].queryset
    assert asked.filter(pk=item.pk).exists()
    assert f">{question}<" not in client.get("/admin/").content.decode()  # the manager's desk


def test_a_cited_section_is_read_once_per_answer(staff, django_assert_max_num_queries):
    from knowledge.embedders import get_embedder

    qvec = get_embedder().embed_query("满减券和折扣券能叠加吗")
    hit = _section_hit("活动核销规则 > 叠加规则", 1.0)
    units: dict = {}
    compose.select_citation_hits([hit], qvec=qvec, units=units)
    with django_assert_max_num_queries(0):  # selection already read it
        sources = compose.number_sources([hit], None, qvec=qvec, units=units)
    assert sources.citations[0]["text"] and sources.sections["1"] is units[hit.chunk_id]


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


def test_a_clause_from_the_middle_of_an_enumeration_does_not_lead_without_its_opening():
    # 「安排员工关注，防止跌倒；」 led the answer, without 「对醉酒客人：」 that it belongs to.
    from knowledge.selectors import SectionUnit

    texts = ["对醉酒客人：停止向其出售含酒精饮品；", "安排员工关注，防止跌倒；", "协助联系其同伴或代驾；", "客人失去意识时立即拨打 120。",
             "另起一段的规定。"]
    units = [SectionUnit("sentence", t, 0 if i < 4 else 1, similarity=0.9 if i == 1 else 0.5) for i, t in enumerate(texts)]
    lines = compose.section_lines(units, [])
    assert lines[0] == "对醉酒客人：停止向其出售含酒精饮品；" and lines[1] == "安排员工关注，防止跌倒；"
    units[4].similarity = 0.95  # a clause that opens its own paragraph still leads
    assert compose.section_lines(units, [])[0] == "另起一段的规定。"
    units[4].similarity = 0.5  # a one-line extract keeps the clause that answers
    assert compose.section_lines(units, [], budget=1)[0] == "安排员工关注，防止跌倒；"


def test_a_second_sections_line_keeps_what_it_cannot_stand_without():
    # 「我把后台今天卖了多少截图发朋友圈」 ended 「会员信息、订单截图、销售数据和后台系统页面；」 without
    # 「禁止发布：」, and 「客人骂完说要去网上曝光我们」 with 「出现以下任一情况…必须立即叫店长：」 and no list.
    from knowledge.selectors import SectionUnit

    run = ["禁止发布：客人的正脸或可识别身份的信息（未获本人同意）；", "会员信息、订单截图、销售数据和后台系统页面；", "对竞争对手的评价。"]
    units = [SectionUnit("sentence", t, 0, similarity=0.9 if i == 1 else 0.5) for i, t in enumerate(run)]
    assert compose.second_section_lines(units, []) == run[:2]
    intro = SectionUnit("sentence", "出现以下任一情况，当班员工必须立即叫店长：", 0, similarity=0.5)
    items = [SectionUnit("item", f"{i}. {t}", 1, similarity=s) for i, (t, s) in
             enumerate([("客人身体不适。", 0.5), ("客人表示要投诉到媒体。", 0.8), ("同一客人第二次投诉。", 0.6)], 1)]
    assert compose.second_section_lines([intro, *items], []) == [intro.text, items[1].text]  # an item leads: with its intro
    intro.similarity = 0.95  # the intro leads: with the closest item of its list
    assert compose.second_section_lines([intro, *items], []) == [intro.text, items[1].text]
    # A run whose opening has no colon still opens it: 「300 元至 2000 元由区域经理审批；」 lacked 「单次报损金额」.
    limits = ["单次报损金额 300 元以内由店长审批；", "300 元至 2000 元由区域经理审批；", "超过 2000 元需运营总监审批。"]
    units = [SectionUnit("sentence", t, 0, similarity=0.9 if i == 1 else 0.5) for i, t in enumerate(limits)]
    assert compose.second_section_lines(units, []) == limits[:2]
    alone = [SectionUnit("sentence", "存酒期限 90 天。", 0, similarity=0.9), SectionUnit("sentence", "到期前提醒。", 0, similarity=0.4)]
    assert compose.second_section_lines(alone, []) == ["存酒期限 90 天。"]


def test_a_sentence_that_points_back_leads_after_what_it_points_to():
    # 「客人要求赔钱 我能答应吗」 began 「超出以上权限的一律交给店长」, without the 权限 above it.
    from knowledge.selectors import SectionUnit

    texts = ["普通店员可以：道歉、更换酒水或菜品。", "值班主管可以：赠送不超过 50 元的代金券。", "超出以上权限的一律交给店长，员工不得口头承诺。",
             "工单要写明类别。", "工单在 24 小时内必须有人跟进。", "严重程度分为三级。", "回访要记录。", "每月汇总一次。", "另一条规定。"]
    units = [SectionUnit("sentence", t, 0 if i < 3 else 1, similarity=0.9 if i == 2 else 0.5) for i, t in enumerate(texts)]
    lines = compose.section_lines(units, [])
    assert lines[:3] == texts[:3], lines
    assert compose.section_lines(units, [], budget=1) == [texts[2]]  # a one-line extract: the clause itself
    units[2].similarity, units[5].similarity = 0.5, 0.9  # a sentence that points at nothing leads as it is
    assert compose.section_lines(units, [])[0] == "严重程度分为三级。"


@pytest.mark.parametrize("question,quantity", [
    ("交班现金差了20块", (20.0, "元")), ("报损两百元谁批", (200.0, "元")), ("迟到15分钟怎么算", (15.0, "分钟")),
    ("会员卡能跨店用吗", None), ("3号桌差了20块，又多收了5块", None),  # none, or two: no threshold to pick with
])
def test_the_amount_a_question_states(question, quantity):
    assert compose.question_quantity(question) == quantity


def test_a_threshold_the_questions_amount_meets_leads():
    # 「交班现金差了20块」 led with 「10 元以内的记录在交接单上」; the rule for 20 is 「超过 10 元的…」.
    from knowledge.selectors import SectionUnit

    texts = ["每班结束前，收银员打印交班报表。", "现金长短款在 10 元以内的记录在交接单上；", "超过 10 元的当场报告值班主管查找原因。"]
    units = [SectionUnit("sentence", t, 0, similarity=s) for t, s in zip(texts, (0.86, 0.9, 0.88))]
    assert compose.section_lines(units, [], quantity=(20.0, "元"))[0] == texts[2]
    assert compose.section_lines(units, [], quantity=(5.0, "元"))[0] == texts[1]
    assert compose.section_lines(units, [])[0] == texts[1]  # no amount asked: the closest
    assert compose.condition_fit("报损 500 元至 2000 元由店长审批", (800.0, "元")) == 1
    assert compose.condition_fit("不超过 50 元的代金券", (80.0, "元")) == -1
    assert compose.condition_fit("迟到超过 30 分钟记旷工半天", (30.0, "分钟")) == -1
    assert compose.condition_fit("超过 10 元的当场报告", (20.0, "分钟")) == 0  # another unit


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


def test_a_product_the_bar_sells_is_the_stores_world(staff):
    # 「那百威呢」 after a ticket turn was declined as 「这个请求与门店运营无关」.
    assert not pipeline.refusals.far_from_domain(state_for("那百威呢", staff))
    assert pipeline.refusals.far_from_domain(state_for("比特币现在多少钱一个", staff))


def test_a_bare_product_name_asks_which_figure_and_is_not_an_sop_gap():
    # 「那百威呢」 after a ticket turn, and 「百威」 alone, were refused as 「制度文档里没有」 and
    # filed on the managers' unanswered list.
    from agent.models import UnansweredQuestion

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


def test_deciding_a_proposal_that_does_not_exist_says_so():
    # 「确认提案99999」 sent the user to /proposals/ to look for #99999.
    manager = make_user("agent_mgr_no_such", role="manager", stores=["GZ-TH"])
    for number in ("99999", "999999999999999999999999"):
        result, _, _ = chat_ask(user=manager, query=f"确认提案{number}")
        assert f"没有提案 #{number}" in result.answer and "找到" not in result.answer


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


def test_an_answer_that_only_just_passed_says_it_is_the_closest_rule(staff, settings, fake_http):
    # 「客人想带狗进来坐行不行」 was answered from 包厢服务标准 as if that were the rule on dogs.
    meta = coverage_model(threshold=0.5)  # p = sigmoid(10 × coverage − 5): full coverage 0.99, none 0.007
    confident, _ = answer_question("满减券和折扣券能叠加吗", user=staff)
    assert not confident.refused and "制度里没有找到完全对应的规定" not in confident.answer
    meta.answerability["threshold"] = 0.988  # the same question (0.993) now passes by a hair
    meta.save(update_fields=["answerability"])
    barely, _ = answer_question("满减券和折扣券能叠加吗", user=staff)
    assert not barely.refused and barely.answer.startswith("制度里没有找到完全对应的规定，下面是最接近的《")
    assert "不能叠加" in barely.answer  # the answer itself follows
    step = next(s for s in barely.trace if s["step"] == "answer")["detail"]
    assert step["hedged"] is True
    # An LLM judge that read the section and said OK decided the round: no hedge, even when the
    # answer itself then falls back to the extractive one (the answer call fails).
    settings.SM_LLM_BACKEND, settings.SM_OPENAI_BASE = "openai", fake_http.url + "/v1"
    fake_http.routes["/v1/chat/completions"] = lambda body: (openai_chat("OK")(body) if "判断参考资料" in body["messages"][0]["content"]
                                                           else (503, {"error": {"message": "overloaded"}}))
    judged, _ = answer_question("满减券和折扣券能叠加吗", user=staff)
    judge_step = next(s for s in judged.trace if s["step"] == "judge")["detail"]
    answer_step = next(s for s in judged.trace if s["step"] == "answer")["detail"]
    assert judge_step["layer"] == "llm" and answer_step["mode"] == "extractive" and "degraded" in answer_step
    assert "不能叠加" in judged.answer and "制度里没有找到完全对应的规定" not in judged.answer


def test_a_question_that_also_asks_for_figures_is_hedged_when_its_rule_part_did_not_pass(staff):
    # Below the threshold, a question that also asked for figures is still answered from the closest
    # rules (the figures stand either way): that part says it is the closest rule. A round an LLM
    # judge decided is not hedged.
    from knowledge.answerability import Verdict

    state = state_for("上周天河店卖了多少，满减券的规则是什么", staff)
    state.route = Route("both", "test")
    state.chosen = _round([])
    state.chosen.layer, state.chosen.verdict = "answerability", Verdict(0.3, False, 0.5, {})
    assert pipeline.answer.barely_enough(state)
    state.route = Route("policy", "test")
    assert not pipeline.answer.barely_enough(state)  # a rule question below the threshold is refused, not hedged
    state.chosen.verdict = Verdict(0.6, True, 0.5, {})
    assert pipeline.answer.barely_enough(state)  # within the band
    state.chosen.verdict = Verdict(0.95, True, 0.5, {})
    assert not pipeline.answer.barely_enough(state)
    state.chosen.layer, state.chosen.verdict = "llm", Verdict(0.6, True, 0.5, {})
    assert not pipeline.answer.barely_enough(state)


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
