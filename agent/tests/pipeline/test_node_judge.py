"""The judge node: answerability with the question's own vector; an LLM decides the grey zone."""

import pytest

from agent.pipeline import answer_question
from agent.pipeline.judge import judge
from agent.tests.fakes import openai_chat
from agent.tests.helpers import _round, coverage_model, state_for
from knowledge.selectors import search

pytestmark = pytest.mark.django_db


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
