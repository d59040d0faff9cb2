"""Retrieval figures for `manage.py eval retrieval`: recall@1/3/5 and MRR of each channel and
of the hybrid ranking, with every miss and the rank it got.

Two question sets, honest by construction: eval/golden.jsonl is the *tuning* set (weights,
synonyms and thresholds may be fitted on it); eval/holdout.jsonl is only ever *reported*.
"""
from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings

from .embedders import get_embedder
from .selectors import expanded_query, index_meta, lexical_channel, search, vector_channel
from .text import query_terms

GOLDEN = Path(settings.BASE_DIR) / "eval" / "golden.jsonl"
HOLDOUT = Path(settings.BASE_DIR) / "eval" / "holdout.jsonl"
EVAL_SETS = {"tune": GOLDEN, "holdout": HOLDOUT}
DEPTH = 10


def load_golden(path: Path = GOLDEN) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_sets() -> dict[str, list[dict]]:
    """{"tune": [...], "holdout": [...]}; a missing holdout file is simply left out."""
    return {name: load_golden(path) for name, path in EVAL_SETS.items() if path.exists()}


def retrieval_items(items: list[dict]) -> list[dict]:
    return [i for i in items if i.get("expect_section") and i.get("kind", "policy") == "policy"]


def audiences_for(item: dict) -> list[str]:
    return ["staff", "manager"] if item.get("as_role") == "manager" else ["staff"]


def rank_of(hits, item: dict) -> int | None:
    for i, hit in enumerate(hits, start=1):
        if hit.document == item["expect_doc"] and hit.heading == item["expect_section"]:
            return i
    return None


def summarise(ranks: list[int | None]) -> dict:
    n = len(ranks) or 1
    return {
        "recall@1": round(sum(1 for r in ranks if r and r <= 1) / n, 4),
        "recall@3": round(sum(1 for r in ranks if r and r <= 3) / n, 4),
        "recall@5": round(sum(1 for r in ranks if r and r <= 5) / n, 4),
        "mrr": round(sum(1 / r for r in ranks if r) / n, 4),
    }


def retrieval_figures(items: list[dict], *, progress=None) -> dict:
    """Each channel's ranking and the hybrid one for every answerable question of a set."""
    embedder = get_embedder()
    meta = index_meta()
    ranks = {"vector": [], "lexical": [], "hybrid": []}
    misses = []
    for item in progress(items) if progress else items:
        audiences = audiences_for(item)
        terms = query_terms(item["query"])
        qvec = embedder.embed_query(expanded_query(item["query"], terms))
        per = {
            "vector": rank_of(vector_channel(qvec, audiences, DEPTH), item),
            "lexical": rank_of(lexical_channel(terms, meta, audiences, DEPTH), item),
        }
        hybrid = search(item["query"], audiences=audiences, k=DEPTH)
        per["hybrid"] = rank_of(hybrid.hits, item)
        for channel, r in per.items():
            ranks[channel].append(r)
        if per["hybrid"] != 1:
            misses.append({
                "id": item["id"], "query": item["query"],
                "expected": f"{item['expect_doc']} > {item['expect_section']}",
                "hybrid_rank": per["hybrid"], "vector_rank": per["vector"], "lexical_rank": per["lexical"],
                "got": hybrid.hits[0].section_path if hybrid.hits else None,
            })
    report = {"n": len(items), "embedder": embedder.signature}
    for channel in ranks:
        report[channel] = summarise(ranks[channel])
    report["misses"] = misses
    return report
