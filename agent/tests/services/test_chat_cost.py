"""What one chat costs: the guard threads and their connections, the message writes.
Real PostgreSQL, real corpus (hashing embedder), real tools."""
import threading

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agent import pipeline
from agent.models import Conversation, Message
from agent.pipeline import answer_question
from agent.services import chat_ask
from ops.tests.factories import make_user

pytestmark = pytest.mark.django_db


def _record_guards(monkeypatch):
    """Wrap both guards to record the thread and the PostgreSQL backend each ran on."""
    seen = []
    for name in ("retrieve_guard", "data_guard"):
        real = getattr(pipeline.guards, name)

        def wrapped(state, real=real, name=name):
            with connection.cursor() as cur:
                cur.execute("SELECT pg_backend_pid()")
                backend = cur.fetchone()[0]
            seen.append((name, threading.current_thread(), backend))
            return real(state)

        monkeypatch.setattr(pipeline.guards, name, wrapped)
    return seen


@pytest.mark.parametrize("question", ["会员卡能跨店用吗", "上周天河店卖了多少"])
def test_a_question_needing_one_channel_runs_it_in_the_request_thread(staff, monkeypatch, question):
    seen = _record_guards(monkeypatch)
    result, _ = answer_question(question, user=staff)
    assert result.answer
    assert {t for _, t, _ in seen} == {threading.current_thread()}, "a single-channel question started guard threads"


def test_guard_threads_and_their_connections_outlive_a_question(staff, monkeypatch):
    seen = _record_guards(monkeypatch)
    for _ in range(2):
        result, _ = answer_question("上周天河店卖了多少，满减券的规则是什么", user=staff)
        assert result.intent == "both" and result.data and result.citations
    first, second = seen[:2], seen[2:]
    assert {t for _, t, _ in first} == {t for _, t, _ in second}, "each question made new guard threads"
    assert threading.current_thread() not in {t for _, t, _ in seen}
    assert {b for _, _, b in first} == {b for _, _, b in second}, "each question opened new database connections"


def test_a_new_thread_is_written_in_one_transaction_with_one_insert_for_both_messages(staff):
    with CaptureQueriesContext(connection) as ctx:
        result, conv, reply = chat_ask(user=staff, query="上周天河店卖了多少")
    sqls = [q["sql"] for q in ctx.captured_queries]
    assert sum(s.startswith('INSERT INTO "agent_message"') for s in sqls) == 1
    assert not any('FROM "agent_message"' in s for s in sqls), "a new thread has no history to read"
    assert not any(s.startswith('UPDATE "agent_conversation"') for s in sqls)
    conv = Conversation.objects.get(pk=conv.pk)
    assert conv.title == "上周天河店卖了多少" and conv.user == staff
    question, answer = conv.messages.order_by("id")
    assert (question.role, question.content) == (Message.Role.USER, "上周天河店卖了多少")
    assert (answer.pk, answer.role, answer.content, answer.trace) == (reply.pk, Message.Role.ASSISTANT, result.answer, result.trace)


def test_a_follow_up_reads_the_history_and_keeps_the_title(staff):
    _, conv, _ = chat_ask(user=staff, query="上周天河店卖了多少", thread_id="cost-thread-1")
    result, again, _ = chat_ask(user=staff, query="那福田店呢", thread_id="cost-thread-1")
    assert again.pk == conv.pk and result.intent == "data"
    again.refresh_from_db()
    assert again.title == "上周天河店卖了多少" and again.messages.count() == 4
    other = make_user("cost_other", role="staff", stores=["GZ-TH"])
    _, theirs, _ = chat_ask(user=other, query="会员卡能跨店用吗", thread_id="cost-thread-1")  # their own thread of that id
    assert theirs.pk != again.pk and again.messages.count() == 4


def test_every_round_of_a_question_shares_one_read_of_the_index_and_of_its_words_statistics(staff):
    """A refused question runs three rounds (search, judge, rewrite); the index metadata row,
    its version (the per-index caches' key) and the corpus statistics of the question's words
    are the same in each, so each is read once."""
    from knowledge.answerability import FEATURES
    from knowledge.models import IndexMeta

    meta = IndexMeta.objects.order_by("pk").first()  # a fitted model that answers nothing: every round is judged
    meta.answerability = {"signature": meta.signature, "features": list(FEATURES), "mean": [0.0] * len(FEATURES),
                          "std": [1.0] * len(FEATURES), "coef": [0.0] * len(FEATURES), "bias": 0.0, "threshold": 0.9}
    meta.save(update_fields=["answerability"])
    answer_question("店里能不能带盆栽进来", user=staff)  # the section snapshots are built on first use
    with CaptureQueriesContext(connection) as ctx:
        result, state = answer_question("店里能不能带盆栽进来", user=staff)
    assert result.refused and len(state.rounds) == 3, "the question should be judged three times"
    sqls = [q["sql"] for q in ctx.captured_queries]
    assert sum('FROM "knowledge_indexmeta"' in s or "FROM knowledge_indexmeta" in s for s in sqls) == 1, sqls
    assert sum("FROM knowledge_termstat" in s for s in sqls) == 1
