"""The guards node: the knowledge and data channels, concurrent when a question needs both."""
import threading

import pytest

from agent import pipeline
from agent.pipeline import answer_question

pytestmark = pytest.mark.django_db


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
