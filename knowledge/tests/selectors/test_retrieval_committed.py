"""Retrieval outside a test transaction: its two halves side by side, its per-connection
settings. Read against the session's committed corpus (a second connection cannot see inside
a test transaction); these tests write nothing."""
import threading

import pytest
from django.db import connection, transaction

from knowledge.selectors import retrieval, search


@pytest.fixture
def committed_corpus(django_db_setup, django_db_blocker):
    """The session's committed corpus, read outside any test transaction (this test writes nothing)."""
    with django_db_blocker.unblock():
        yield


def test_the_vector_half_runs_beside_the_lexical_half_on_its_own_connection(committed_corpus, settings, monkeypatch):
    settings.SM_RETRIEVAL_THREADS = 2
    threads = {}
    real_vector = retrieval._nearest_rows

    def recording(*args, **kwargs):
        threads["vector"] = threading.current_thread().name
        return real_vector(*args, **kwargs)

    monkeypatch.setattr(retrieval, "_nearest_rows", recording)
    question = "客人说酒喝着有股怪味怎么办"
    parallel = search(question, audiences=["staff"], k=5)
    assert threads["vector"].startswith("retrieval") and "channels" in parallel.timings_ms
    with transaction.atomic():  # inside a transaction another connection would not see its rows: one thread
        assert connection.in_atomic_block
        serial = search(question, audiences=["staff"], k=5)
    assert threads["vector"] == threading.current_thread().name
    assert [h.chunk_id for h in parallel.hits] == [h.chunk_id for h in serial.hits]
    for channel in ("vector", "alias", "lexical", "gram", "sentence"):
        assert [h.chunk_id for h in parallel.rankings[channel]] == [h.chunk_id for h in serial.rankings[channel]], channel


def test_hnsw_ef_search_is_set_once_per_connection_outside_transactions(committed_corpus, settings):
    from django.test.utils import CaptureQueriesContext

    settings.SM_RETRIEVAL_THREADS = 0
    search("客人说酒喝着有股怪味怎么办", audiences=["staff"])
    with CaptureQueriesContext(connection) as ctx:
        search("存的酒过期了怎么办", audiences=["staff"])
    assert not [q for q in ctx.captured_queries if "ef_search" in q["sql"]], "the connection already has this ef_search"
    with transaction.atomic(), CaptureQueriesContext(connection) as ctx:  # a rollback would undo it: set every time
        search("存的酒过期了怎么办", audiences=["staff"])
    assert [q for q in ctx.captured_queries if "ef_search" in q["sql"]]


def test_the_retrieval_queries_are_prepared_statements(committed_corpus, settings):
    """`execute(..., prepare=True)` is a no-op on a connection with psycopg's preparation turned
    off, which is Django's default: the settings turn it on (only where asked for)."""
    settings.SM_RETRIEVAL_THREADS = 0
    search("客人说酒喝着有股怪味怎么办", audiences=["staff"])
    with connection.cursor() as cur:
        cur.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cur.fetchall()]
    assert any("knowledge_chunk" in sql and "<=>" in sql for sql in prepared), prepared
    assert any("knowledge_term" in sql for sql in prepared), prepared
    assert not any("django_" in sql or "auth_" in sql for sql in prepared), "the ORM's own queries stay unprepared"
