"""The agent loop: rewrite, retrieve again, per-round selection; no rewrite for a hopeless round."""

import pytest

from agent import pipeline
from agent import vocabulary as vocab
from agent.llm import get_llm
from agent.pipeline import answer_question
from agent.pipeline.loop import agent_loop, rewrite
from agent.tests.fakes import openai_chat
from agent.tests.helpers import _round, coverage_model, state_for
from knowledge.selectors import search

pytestmark = pytest.mark.django_db


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
    # 「比特币现在多少钱一个」 (now declined by its words) went through three retrievals (two of them rewritten toward
    # section titles) to be refused as out of scope; below a fifth of the threshold the
    # rewrite rounds are skipped now.
    coverage_model()
    again = []
    real = pipeline.loop.retrieve_again
    monkeypatch.setattr(pipeline.loop, "retrieve_again", lambda *a, **kw: again.append(a[1]) or real(*a, **kw))
    result, state = answer_question("量子纠缠到底是怎么回事", user=staff, max_attempts=2)
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
    _, state = answer_question("量子纠缠到底是怎么回事", user=staff, max_attempts=2)
    assert state.rounds[0].score < pipeline.loop.REWRITE_FLOOR * state.rounds[0].verdict.threshold
    assert len(state.rounds) == 3
