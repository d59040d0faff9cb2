"""Retrieval figures for `manage.py eval retrieval`: recall@1/3/5 and MRR of each channel and
of the hybrid ranking, with every miss and the rank it got.

Two question sets, honest by construction: eval/golden.jsonl is the *tuning* set (weights,
synonyms and thresholds may be fitted on it); eval/holdout.jsonl is only ever *reported*.
"""
from __future__ import annotations

import itertools
import json
import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.conf import settings
from tqdm import tqdm

from .embedders import get_embedder
from .selectors import CHANNELS, channel_rankings, default_fusion, expanded_query, fusion_params, index_meta, search
from .text import query_terms

GOLDEN = Path(settings.BASE_DIR) / "eval" / "golden.jsonl"
HOLDOUT = Path(settings.BASE_DIR) / "eval" / "holdout.jsonl"
DEPTH = 10


def load_golden(path: Path = GOLDEN) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_sets() -> dict[str, list[dict]]:
    """{"tune": [...], "holdout": [...]} of the corpus being evaluated (SM_EVAL_CORPUS: the
    bundled one unless `eval --corpus` chose another); a missing holdout file is left out."""
    from .corpora import eval_corpus

    return {name: load_golden(path) for name, path in eval_corpus(settings.SM_EVAL_CORPUS).sets().items()}


def retrieval_items(items: list[dict]) -> list[dict]:
    return [i for i in items if i.get("expect_section") and i.get("kind", "policy") == "policy"]


def audiences_for(item: dict) -> list[str]:
    return ["staff", "manager"] if item.get("as_role") == "manager" else ["staff"]


def same_heading(heading: str, expected: str) -> bool:
    """A section's heading is the expected one, whitespace aside (a writer copying 「3.2 鲜奶储存」)."""
    return "".join(heading.split()) == "".join((expected or "").split())


def rank_of(hits, item: dict) -> int | None:
    for i, hit in enumerate(hits, start=1):
        if hit.document == item["expect_doc"] and same_heading(hit.heading, item["expect_section"]):
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


@contextmanager
def persistent_query_vectors():
    """Evaluation only: the embedder's query vectors are kept in the embedding cache table for
    the duration, so running an eval again costs no model call for a text seen before."""
    from .models import EmbeddingCache
    from .services import embedding_digest, ensure_cache_column

    embedder = get_embedder()
    original = embedder.embed_query

    def embed_query(text: str):
        key = embedding_digest("eval-query", text)
        row = EmbeddingCache.objects.filter(signature=embedder.signature, digest=key).values_list("embedding", flat=True).first()
        if row is not None:
            return np.asarray(row, dtype=np.float32)
        vec = original(text)
        EmbeddingCache.objects.bulk_create([EmbeddingCache(signature=embedder.signature, digest=key, embedding=list(map(float, vec)))],
                                           ignore_conflicts=True)
        return vec

    if embedder.dimension == 0:
        embedder.embed_passages(["dimension probe"])
    ensure_cache_column(embedder.dimension)
    embedder.embed_query = embed_query
    try:
        yield
    finally:
        del embedder.embed_query


def retrieval_figures(items: list[dict], *, progress=None) -> dict:
    """Each channel's ranking and the hybrid one for every answerable question of a set."""
    embedder = get_embedder()
    meta = index_meta()
    ranks = {c: [] for c in (*CHANNELS, "hybrid")}
    misses = []
    for item in progress(items) if progress else items:
        audiences = audiences_for(item)
        terms = query_terms(item["query"])
        qvec = embedder.embed_query(expanded_query(item["query"], terms))
        rankings = channel_rankings(item["query"], terms, qvec, meta, audiences, DEPTH)
        per = {c: rank_of(rankings.get(c, []), item) for c in CHANNELS}
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


# --- eval tune-fusion ---------------------------------------------------------------------

FUSION_GRID = {
    "sentence": [0.0, 0.25, 0.5, 1.0],
    "alias": [0.0, 0.5, 1.0, 1.5],
    "lexical": [0.0, 0.3, 0.6, 1.0],
    "gram": [0.0, 0.3, 0.6, 1.0],
    "k": [3, 5, 10, 20, 60],
    "candidates": [10, 20, 40],
    "title_boost": [0.0, 0.3, 0.6],
}
# Cumulative channel sets (default weights) for the step-by-step table of the report.
ABLATION_STEPS = (
    ("vector+lexical", ("vector", "lexical")),
    ("+sentence", ("vector", "lexical", "sentence")),
    ("+gram", ("vector", "lexical", "sentence", "gram")),
    ("+alias", ("vector", "lexical", "sentence", "gram", "alias")),
)


def original_golden(items: list[dict]) -> list[dict]:
    """The tuning set as it was before the second writer's questions (ids t…, tn…, tf…) were
    added: the figures the acceptance compares with."""
    return [i for i in items if not re.match(r"^t[nf]?\d", i["id"])]
TUNE_DEPTH = 40


@dataclass
class _Candidates:
    """One question's candidate chunks as arrays, so a fusion setting is scored with a few
    vector operations instead of re-running the fusion code (thousands of settings)."""

    ranks: np.ndarray  # (chunks, channels): rank in that channel, inf where absent
    heading_match: np.ndarray  # (chunks,): share of query terms found in the heading
    ids: np.ndarray
    correct: np.ndarray  # bool: the expected document and section


def _precomputed(items: list[dict], progress=None) -> list[_Candidates]:
    """Every channel's ranking of every question, computed once; fused many ways afterwards."""
    embedder = get_embedder()
    meta = index_meta()
    out = []
    for item in progress(items) if progress else items:
        terms = query_terms(item["query"])
        qvec = embedder.embed_query(expanded_query(item["query"], terms))
        rankings = channel_rankings(item["query"], terms, qvec, meta, audiences_for(item), TUNE_DEPTH)
        hits = {}
        for channel in CHANNELS:
            for rank, hit in enumerate(rankings.get(channel, []), start=1):
                hits.setdefault(hit.chunk_id, [hit, {}])[1][channel] = rank
        ids = sorted(hits)
        term_set = set(terms)
        out.append(_Candidates(
            ranks=np.array([[hits[i][1].get(c, np.inf) for c in CHANNELS] for i in ids], dtype=float).reshape(len(ids), len(CHANNELS)),
            heading_match=np.array([
                (sum(1 for t in term_set if t in hits[i][0].section_path.split(" > ", 1)[-1]) / len(term_set)) if term_set else 0.0
                for i in ids]),
            ids=np.array(ids),
            correct=np.array([hits[i][0].document == item["expect_doc"] and same_heading(hits[i][0].heading, item["expect_section"])
                              for i in ids], dtype=bool),
        ))
    return out


def _rank(c: _Candidates, params: dict) -> int | None:
    """The expected section's rank under `params`, as `fuse` would rank it (ties by chunk id)."""
    if not c.correct.any():
        return None
    weights = np.array([params["weights"].get(ch, 0.0) for ch in CHANNELS])
    ranks = np.where(c.ranks <= params["candidates"], c.ranks, np.inf)
    score = (weights / (params["k"] + ranks)).sum(axis=1) * (1 + params["title_boost"] * c.heading_match)
    present = score > 0
    best = None
    for i in np.flatnonzero(c.correct & present):
        r = 1 + int(((score > score[i]) | ((score == score[i]) & (c.ids < c.ids[i]))).sum())
        best = r if best is None else min(best, r)
    return best if best is not None and best <= DEPTH else None


def _fused_figures(pre: list[_Candidates], params: dict) -> dict:
    return summarise([_rank(c, params) for c in pre])


def candidates_as_json(pre: list[_Candidates]) -> list[dict]:
    return [{"ranks": [[None if np.isinf(v) else int(v) for v in row] for row in c.ranks.tolist()],
             "heading_match": c.heading_match.tolist(), "ids": c.ids.tolist(), "correct": c.correct.tolist()} for c in pre]


def candidates_from_json(rows: list[dict]) -> list[_Candidates]:
    return [_Candidates(ranks=np.array([[np.inf if v is None else v for v in row] for row in r["ranks"]], dtype=float)
                        .reshape(len(r["ids"]), len(CHANNELS)),
                        heading_match=np.array(r["heading_match"], dtype=float), ids=np.array(r["ids"]),
                        correct=np.array(r["correct"], dtype=bool)) for r in rows]


def eval_candidates(cmd, opts) -> dict:
    """Every channel's ranking of each answerable question of both sets (what a fusion setting
    is scored on), for `eval tune-fusion --across`, which fuses them across corpora."""
    bar = lambda name: (lambda xs: tqdm(xs, desc=f"channels {name}", file=cmd.stderr))  # noqa: E731
    sets = {name: candidates_as_json(_precomputed(retrieval_items(items), bar(name))) for name, items in load_sets().items()}
    cmd.stdout.write(f"candidates · corpus {settings.SM_EVAL_CORPUS} · " + " · ".join(f"{n} {len(v)}" for n, v in sets.items()))
    return {"corpus": settings.SM_EVAL_CORPUS, "sets": sets}


def _grid():
    keys = list(FUSION_GRID)
    for values in itertools.product(*(FUSION_GRID[k] for k in keys)):
        p = dict(zip(keys, values))
        yield {"weights": {"vector": 1.0, "sentence": p["sentence"], "alias": p["alias"], "lexical": p["lexical"], "gram": p["gram"]},
               "k": p["k"], "candidates": p["candidates"], "title_boost": p["title_boost"]}


def eval_tune_fusion(cmd, opts) -> dict:
    """Grid-search the fusion on the tuning set (recall@1 + MRR), store the choice with the
    index, and print what it gives on the held-out set (reported, never used to choose)."""
    sets = load_sets()
    bar = lambda name: (lambda xs: tqdm(xs, desc=f"channels {name}", file=cmd.stderr))  # noqa: E731
    tune_items = retrieval_items(sets["tune"])
    tune = _precomputed(tune_items, bar("tune"))
    original_ids = {i["id"] for i in original_golden(tune_items)}
    original = [c for c, i in zip(tune, tune_items) if i["id"] in original_ids]
    hold = _precomputed(retrieval_items(sets["holdout"]), bar("holdout")) if "holdout" in sets else []
    meta = index_meta()
    before = fusion_params(meta)
    grid = list(_grid())
    best, best_key = None, None
    for params in tqdm(grid, desc="fusion grid", file=cmd.stderr):
        f = _fused_figures(tune, params)
        key = (round(f["recall@1"] + f["mrr"], 6), f["recall@5"])
        if best_key is None or key > best_key:
            best, best_key = params, key
    report = {
        "grid_size": len(grid), "chosen": best, "previous": before,
        "tune": {"before": _fused_figures(tune, before), "after": _fused_figures(tune, best)},
        "tune_original": {"before": _fused_figures(original, before), "after": _fused_figures(original, best)},
        "holdout": {"before": _fused_figures(hold, before), "after": _fused_figures(hold, best)} if hold else None,
        "ablation": {},
    }
    defaults = default_fusion()
    for label, channels in ABLATION_STEPS:
        params = {**defaults, "weights": {c: w for c, w in defaults["weights"].items() if c in channels}}
        report["ablation"][label] = {"tune": _fused_figures(tune, params), "holdout": _fused_figures(hold, params) if hold else None}
    if not opts.get("dry_run"):
        meta.fusion = best
        meta.save(update_fields=["fusion"])
    w = cmd.stdout.write
    w(f"tune-fusion · {len(grid)} settings · tuning set {len(tune)} questions · held-out {len(hold)} (reported only)")
    w(f"  chosen: weights {best['weights']} · k {best['k']} · candidates {best['candidates']} · title boost {best['title_boost']}")
    for label, figs in report["ablation"].items():
        t, h = figs["tune"], figs["holdout"] or {}
        w(f"  step {label:16s} tune R@1 {t['recall@1']:.3f} MRR {t['mrr']:.3f} · holdout R@1 {h.get('recall@1', 0):.3f} "
          f"R@5 {h.get('recall@5', 0):.3f} MRR {h.get('mrr', 0):.3f}")
    for name in ("tune", "tune_original", "holdout"):
        if report[name]:
            b, a = report[name]["before"], report[name]["after"]
            w(f"  {name:8s} before R@1 {b['recall@1']:.3f} R@5 {b['recall@5']:.3f} MRR {b['mrr']:.3f} → "
              f"after R@1 {a['recall@1']:.3f} R@5 {a['recall@5']:.3f} MRR {a['mrr']:.3f}")
    w("  stored in the index metadata" if not opts.get("dry_run") else "  dry run: nothing stored")
    return report
