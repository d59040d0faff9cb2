"""Warm start: each web and worker process loads, as it starts, what the first question would
otherwise pay for (the embedding model and its first inference, jieba's dictionaries, the
synonym list, the URL resolver, every section's snapshot), so the first user's answer costs the
same as the hundredth.

Called after the fork (gunicorn `post_worker_init`, Celery `worker_process_init`), never in a
parent that forks: a native thread pool or a database connection made before a fork would be
shared by every child. Never raises and never writes: a process that cannot warm up (no
database yet, no index) still serves, cold.
"""
from __future__ import annotations

import logging
import time

logger = logging.getLogger(__name__)

WARM_QUESTION = "客人说酒有异味怎么办"
# Policy, data, both. Never a low-stock or action question: those offer or make proposals.
WARM_PIPELINE_QUESTIONS = ("客人说酒有异味怎么办", "上周天河店卖了多少", "上周天河店卖了多少，满减券和折扣券能一起用吗")
IN_PROCESS_EMBEDDERS = ("e5", "hashing")  # HTTP embedders are not called at start: a down endpoint must not stop a boot


def warm_before_fork() -> dict[str, float]:
    """What every child would load the same way and that is safe to share through fork: jieba's
    dictionaries (word and part-of-speech; pure Python data, copy-on-write) and the corpus's
    user dictionary. No database connection, no native thread pool, no model: those are made
    after the fork (warm_process). Loaded once in gunicorn's master (preload_app) or Celery's
    parent, it spares each worker ~1.5 s of CPU at start, which it spent while its siblings
    were already answering."""
    timings: dict[str, float] = {}
    t = time.perf_counter()
    try:
        import jieba.posseg as pseg

        from knowledge.text import tokenize

        tokenize(WARM_QUESTION)
        list(pseg.cut(WARM_QUESTION))
    except Exception as exc:  # noqa: BLE001 - warming is best effort
        logger.warning("pre-fork warm-up failed: %s", exc)
    timings["dictionaries"] = round((time.perf_counter() - t) * 1000, 1)
    return timings


def warm_process() -> dict[str, float]:
    """Load the models and dictionaries; returns milliseconds per step (for logs and tests)."""
    timings: dict[str, float] = {}

    def step(name, fn):
        t = time.perf_counter()
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - warming is best effort, serving is not
            logger.warning("warm-up step %s failed: %s", name, exc)
        timings[name] = round((time.perf_counter() - t) * 1000, 1)

    def embedder():
        from knowledge.embedders import get_embedder

        emb = get_embedder()
        if emb.backend in IN_PROCESS_EMBEDDERS:
            emb.embed_query(WARM_QUESTION)

    def tokenizer():
        from knowledge.text import overlap_ratio, query_terms

        overlap_ratio(WARM_QUESTION, " ".join(query_terms(WARM_QUESTION)), expand=True)

    def code_paths():
        from django.urls import resolve

        import agent.api.views  # noqa: F401 - the chat view and everything the pipeline imports
        from agent.llm import get_llm
        from agent.router import route

        resolve("/api/v1/chat")
        route(WARM_QUESTION, get_llm())

    def pipeline():
        # One question of each kind through the whole pipeline, nothing persisted: opens this
        # process's database connections (request thread and guard threads), compiles the ORM
        # queries and fills the per-process caches the first user would otherwise pay for.
        from agent.pipeline import answer_question

        for question in WARM_PIPELINE_QUESTIONS:
            answer_question(question, user=None)

    def sections():
        # Every section's snapshot (units, vectors, words: a few MB for the bundled corpus), so
        # no user's question pays for reading a section the first time this process meets it.
        from knowledge.selectors import snapshot_every_section

        snapshot_every_section()

    step("embedder", embedder)
    step("tokenizer", tokenizer)
    step("code", code_paths)
    step("sections", sections)
    step("pipeline", pipeline)
    return timings
