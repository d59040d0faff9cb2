"""The query-embedding LRU cache (every backend's embed_query) and the thread pinning of the
embedding runtime."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from django.conf import settings

from knowledge.embedders import HashingEmbedder, OllamaEmbedder, QueryCache, normalise_query


def ollama_route(body):
    # The real /api/embed shape; the vector depends on the text so a wrong cache hit shows.
    return 200, {"model": body["model"], "embeddings": [[1.0, float(len(t)), float(ord(t[0]))] for t in body["input"]]}


def test_repeated_query_is_embedded_once_and_whitespace_does_not_matter(fake_http):
    fake_http.routes["/api/embed"] = ollama_route
    emb = OllamaEmbedder(fake_http.url, "bge-m3")
    first = emb.embed_query("会员卡 能跨店用吗")
    again = emb.embed_query("  会员卡   能跨店用吗\n")
    assert len(fake_http.requests) == 1, "the same normalised question reached the embedding endpoint twice"
    assert fake_http.requests[0][1]["input"] == ["会员卡 能跨店用吗"]
    assert np.array_equal(first, again)
    other = emb.embed_query("会员卡能跨店用吗")  # a different text is a different query
    assert len(fake_http.requests) == 2 and not np.array_equal(first, other)
    assert (emb.query_cache.hits, emb.query_cache.misses) == (1, 2)


def test_cached_vectors_cannot_be_corrupted_by_a_caller():
    emb = HashingEmbedder(64)
    vec = emb.embed_query("酒变质了怎么办")
    expected = vec.copy()
    vec *= 0  # a caller normalising or scaling in place
    assert np.array_equal(emb.embed_query("酒变质了怎么办"), expected)


def test_lru_keeps_the_most_recently_used():
    cache = QueryCache(2)
    for key in ("a", "b"):
        cache.put(key, np.ones(2))
    assert cache.get("a") is not None  # a is now the most recent
    cache.put("c", np.ones(2))
    assert cache.get("b") is None and cache.get("a") is not None and cache.get("c") is not None
    assert len(cache) == 2


def test_cache_size_zero_turns_it_off(fake_http):
    fake_http.routes["/api/embed"] = ollama_route
    emb = OllamaEmbedder(fake_http.url, "bge-m3")
    emb._cache = QueryCache(0)
    emb.embed_query("补货找谁批")
    emb.embed_query("补货找谁批")
    assert len(fake_http.requests) == 2


def test_normalise_query_changes_only_whitespace():
    assert normalise_query("  客人说 酒有异味\t怎么办？ ") == "客人说 酒有异味 怎么办？"
    assert normalise_query("ＡＢＣ，abc") == "ＡＢＣ，abc"  # no case or width folding: thresholds were calibrated on typed text


def _settings_env_in_fresh_process(**env) -> dict:
    """What a freshly started process (web, worker, command) sees after Django settings load."""
    code = textwrap.dedent("""
        import json, os, django
        django.setup()
        print(json.dumps({k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}))
    """)
    full = {k: v for k, v in os.environ.items() if k != "SM_EMBED_THREADS"}
    # A DATABASE_URL only to be parsed: settings must not start or touch a database here.
    full.update({"DJANGO_SETTINGS_MODULE": "storemind.settings", "DATABASE_URL": "postgres://nobody@localhost:1/none"}, **env)
    out = subprocess.run([sys.executable, "-c", code], cwd=settings.BASE_DIR, env=full, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    import json

    return json.loads(out.stdout.strip().splitlines()[-1])


def test_settings_pin_one_embedding_thread_per_process_over_a_stray_omp_setting():
    env = _settings_env_in_fresh_process(OMP_NUM_THREADS="8")
    assert env == {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def test_sm_embed_threads_configures_the_pin():
    env = _settings_env_in_fresh_process(SM_EMBED_THREADS="2")
    assert env["OMP_NUM_THREADS"] == "2"


@pytest.mark.e5
def test_e5_runtime_runs_one_thread_in_a_guard_thread():
    """The OpenMP runtime the e5 engine loads reports one thread, also in a new thread (the
    guard threads each question starts inherit the runtime's global setting)."""
    code = textwrap.dedent("""
        import ctypes, threading, django
        django.setup()
        from knowledge.embedders import E5Embedder
        E5Embedder().embed_query("预热")
        gomp = ctypes.CDLL("libgomp.so.1")
        seen = []
        t = threading.Thread(target=lambda: seen.append(gomp.omp_get_max_threads()))
        t.start(); t.join()
        print(seen[0])
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("SM_EMBED_THREADS", "OMP_NUM_THREADS")}
    env.update(DJANGO_SETTINGS_MODULE="storemind.settings", DATABASE_URL="postgres://nobody@localhost:1/none")
    out = subprocess.run([sys.executable, "-c", code], cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "1"


def test_tokenize_is_memoised_but_hands_out_fresh_lists():
    from knowledge import text

    first = text.tokenize("客人说酒有异味怎么办")
    hits_before = text._tokens_cached.cache_info().hits
    first.append("被调用方改掉")
    again = text.tokenize("客人说酒有异味怎么办")
    assert text._tokens_cached.cache_info().hits == hits_before + 1
    assert "被调用方改掉" not in again and again == first[:-1]


def test_e5_reads_a_long_question_by_its_start_and_end_within_its_limit():
    # A 2,000-character paste took 4.7 s of CPU to embed (1,495 tokens, past e5's 512).
    from knowledge.embedders import E5Embedder

    emb = E5Embedder.__new__(E5Embedder)  # the limit only, no model load
    short = "客人说酒有异味怎么办"
    assert emb.fit_query(short) == short
    long_text = "开头说明" + "客人一直在抱怨" * 300 + "最后问：要不要退款？"
    fitted = emb.fit_query(long_text)
    assert len(fitted) == E5Embedder.max_query_chars
    assert fitted.startswith("开头说明") and fitted.endswith("最后问：要不要退款？") and "…" in fitted
    assert HashingEmbedder(64).fit_query(long_text) == long_text  # no limit where the model has none


def test_many_queries_are_embedded_in_one_request_each_as_alone(fake_http):
    # An ingest embeds a corpus's question forms (1,600 for 19 documents): one by one, each
    # was a model call of its own. Together they are one request, each text read as
    # embed_query reads it, and a question already in the cache is not sent again.
    fake_http.routes["/api/embed"] = ollama_route
    emb = OllamaEmbedder(fake_http.url, "bge-m3")
    cached = emb.embed_query("会员卡 能跨店用吗")
    texts = ["  会员卡   能跨店用吗", "补货找谁批", "补货找谁批", "酒变质了怎么办"]
    vectors = emb.embed_queries(texts)
    assert len(fake_http.requests) == 2, "the batch's questions went to the endpoint one by one"
    assert fake_http.requests[1][1]["input"] == ["补货找谁批", "酒变质了怎么办"]
    assert np.array_equal(vectors[0], cached) and np.array_equal(vectors[1], vectors[2])
    alone = OllamaEmbedder(fake_http.url, "bge-m3")
    assert all(np.array_equal(v, alone.embed_query(t)) for v, t in zip(vectors, texts))


@pytest.mark.e5
def test_e5_embeds_a_batch_of_queries_as_it_embeds_each():
    from knowledge.embedders import E5Embedder

    emb = E5Embedder()  # the default embedder (tests run with the hashing one)
    texts = ["客人喝多了还要酒怎么办", "补货找谁批", "冰块机坏了"]
    emb.query_cache.clear()
    together = emb.embed_queries(texts)
    emb.query_cache.clear()
    assert all(np.allclose(v, emb.embed_query(t), atol=1e-6) for v, t in zip(together, texts))
