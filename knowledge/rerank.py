"""A learned rerank of the fused candidates: which of the top ten sections answers the question.

Fusion sees ranks only. Over its top ten this model also reads each candidate's own scores in
every channel, those scores against the best candidate's, how much of the question (IDF-weighted)
the section's words and heading cover, and whether a section states the kind of figure the
question asks for (多久 → a duration, 几度 → a temperature …). Pointwise logistic regression,
fitted by `manage.py eval fit-rerank` over every evaluation corpus's tuning questions (each
corpus weighing the same; each corpus's held-out figures come from the fit made without it)
and shipped as knowledge/rerank_e5.json. Signals every corpus has: no list, no alias needed.

Reads the index; never writes. `SM_RERANKER` names this (the hook a cross-encoder could take).
"""
from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
from django.conf import settings

RERANK_MODEL_PATH = Path(__file__).with_name("rerank_e5.json")
DEPTH = 10  # candidates the model reorders; the rest keep their fused order after them
_RELATIVE = ("vs", "ss", "as", "lex", "gram", "cov", "head")
# What kind of figure a question asks for, and how a section states one.
ASKS = {
    "dur": (r"多久|多长时间|几天|几分钟|几小时|多少天|多少分钟|多少小时|几个小时|多长", r"\d+\s*(分钟|小时|天|日|秒|周|个月|min|h)"),
    "money": (r"多少钱|几块|多少元|多少块|价格|价钱|金额", r"\d+\s*元|¥"),
    "who": (r"谁|找哪个|哪个部门|什么人", r"店长|经理|主管|领班|负责|审批|批准|部门"),
    "temp": (r"几度|多少度|温度", r"℃|度"),
    "count": (r"几次|几个|多少个|几份|几杯|几张|多少份|多少次|几人|几位", r"\d+\s*(次|个|份|杯|张|人|位|瓶|克|g|ml|毫升)"),
}
_ASKS = {k: (re.compile(a), re.compile(s)) for k, (a, s) in ASKS.items()}


@lru_cache(maxsize=4)
def shipped_model(path: str = str(RERANK_MODEL_PATH)) -> dict:
    p = Path(path)
    return json.loads(p.read_text("utf-8")) if p.exists() else {}


def _idf_of(terms: list[str], meta) -> dict[str, float]:
    from django.db import connection

    from .selectors import read_once

    def read():
        with connection.cursor() as cur:
            cur.execute("SELECT term, df FROM knowledge_termstat WHERE term = ANY(%s)", [list(set(terms))])
            return dict(cur.fetchall())

    df = read_once(("rerank_df", tuple(sorted(set(terms)))), read)
    n = max(1, meta.n_chunks)
    return {t: math.log((n + 0.5) / (df.get(t, 0) + 0.5)) for t in terms}


def candidate_features(query: str, hits: list, terms: list[str], meta) -> list[dict]:
    """The features of each of `hits` (fused order) as the answer to `query`."""
    from .selectors import section_words

    salient = [t for t in dict.fromkeys(terms) if len(t) >= 2] or list(dict.fromkeys(terms))
    idf = _idf_of(salient, meta) if salient else {}
    total = sum(idf.values()) or 1.0
    asked = {k: bool(a.search(query)) for k, (a, _) in _ASKS.items()}
    top = hits[0].score if hits and hits[0].score else 1.0
    lex_max = max([h.lexical_score or 0.0 for h in hits] + [1e-9])
    gram_max = max([h.gram_score or 0.0 for h in hits] + [1e-9])
    rows = []
    sections = section_words([(h.document_id, h.section_path) for h in hits])  # read together, not one by one
    for rank, h in enumerate(hits, start=1):
        snap = sections[(h.document_id, h.section_path)]
        text = snap.text
        heading = h.section_path.split(" > ", 1)[-1]
        f = {"rank": rank, "rrf": h.score / top, "vs": h.vector_score or 0.0, "ss": h.sentence_score or 0.0, "as": h.alias_score or 0.0,
             "lex": (h.lexical_score or 0.0) / lex_max, "gram": (h.gram_score or 0.0) / gram_max,
             "vr": 1 / (1 + (h.vector_rank or 99)), "sr": 1 / (1 + (h.sentence_rank or 99)), "ar": 1 / (1 + (h.alias_rank or 99)),
             "lr": 1 / (1 + (h.lexical_rank or 99)), "gr": 1 / (1 + (h.gram_rank or 99)),
             "head": sum(w for t, w in idf.items() if t in heading) / total, "title": sum(w for t, w in idf.items() if t in h.document) / total,
             "cov": sum(w for t, w in idf.items() if t in snap.terms) / total, "len": math.log(1 + len(text))}
        for kind, (_, states) in _ASKS.items():
            f["t_" + kind] = float(asked[kind] and bool(states.search(text)))
            f["m_" + kind] = float(asked[kind] and not states.search(text))
        rows.append(f)
    for key in _RELATIVE:  # against the best of the candidates the model chooses among
        best = max((f[key] for f in rows[:DEPTH]), default=0.0)
        for f in rows:
            f[key + "_rel"] = f[key] - best
    return rows


def score(model: dict, rows: list[dict]) -> np.ndarray:
    X = np.array([[f[k] for k in model["features"]] for f in rows], dtype=float)
    return ((X - np.array(model["mean"])) / np.array(model["std"])) @ np.array(model["coef"])


_IN_FORCE: list[dict | None] = [None]  # set by use_model() (an evaluation of one corpus, or no rerank)


def use_model(model: dict | None) -> None:
    """This process reranks with `model` ({} : fused order) instead of the shipped choice."""
    _IN_FORCE[0] = model


def model_in_force() -> dict:
    """The shipped choice for the e5 embedder (SM_RERANK_MODEL may name another file, "" none),
    unless use_model() set another in this process."""
    if _IN_FORCE[0] is not None:
        return _IN_FORCE[0]
    if settings.SM_RERANK_MODEL == "" or (settings.SM_EMBED_BACKEND != "e5" and not settings.SM_RERANK_MODEL):
        return {}
    return shipped_model(settings.SM_RERANK_MODEL or str(RERANK_MODEL_PATH)).get("chosen") or {}


def learned_rerank(query: str, hits: list, terms: list[str] | None = None, *, boost: float | None = None) -> list:
    """The fused hits with the top DEPTH reordered by the model (the title boost when none is shipped)."""
    from .selectors import current_index, title_boost_rerank

    model = model_in_force()
    hits = title_boost_rerank(query, hits, terms, boost=boost)
    if not model or len(hits) < 2:
        return hits
    from .text import tokenize

    meta = current_index()
    head = hits[:DEPTH]
    scores = score(model, candidate_features(query, head, terms if terms is not None else tokenize(query), meta))
    order = sorted(range(len(head)), key=lambda i: (-scores[i], i))
    return [head[i] for i in order] + hits[DEPTH:]


def fit(groups: dict[str, list[dict]], *, l2: float = 0.01, steps: int = 3000, lr: float = 0.5) -> dict:
    """Pointwise logistic regression over candidates ({"features": [...], "ok": [...]}) of each
    corpus's questions, every corpus weighing the same."""
    rows, labels, weights = [], [], []
    for questions in groups.values():
        n = sum(len(q["ok"]) for q in questions) or 1
        for q in questions:
            rows += q["features"]
            labels += [float(ok) for ok in q["ok"]]
            weights += [1.0 / n] * len(q["ok"])
    keys = sorted(rows[0]) if rows else []
    X = np.array([[r[k] for k in keys] for r in rows], dtype=float)
    y, w = np.array(labels), np.array(weights)
    w /= w.sum()
    mean, std = X.mean(axis=0), X.std(axis=0)
    std[std == 0] = 1.0
    Z = (X - mean) / std
    coef, bias = np.zeros(len(keys)), 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(Z @ coef + bias)))
        g = (p - y) * w
        coef -= lr * (Z.T @ g + l2 * coef)
        bias -= lr * g.sum()
    return {"features": keys, "mean": mean.tolist(), "std": std.tolist(), "coef": coef.tolist()}


def top1(model: dict | None, questions: list[dict]) -> float:
    """Share of questions whose first candidate after reranking (or in fused order, model None) is right."""
    if not questions:
        return 0.0
    right = 0
    for q in questions:
        if not q["ok"]:
            continue
        if model is None:
            right += bool(q["ok"][0])
        else:
            right += bool(q["ok"][int(np.argmax(score(model, q["features"][:DEPTH])))])
    return right / len(questions)


def eval_rerank_candidates(cmd, opts) -> dict:
    """`eval rerank-candidates --corpus NAME`: each answerable question's fused top ten with their
    features and which is right (fused order: no rerank), what `eval fit-rerank` fits on."""
    from tqdm import tqdm

    from .evaluation import audiences_for, load_sets, rank_of, retrieval_items
    from .selectors import index_meta, search

    use_model({})
    meta = index_meta()
    sets = {}
    for name, items in load_sets().items():
        rows = []
        for item in tqdm(retrieval_items(items), desc=f"candidates {name}", file=cmd.stderr):
            result = search(item["query"], audiences=audiences_for(item), k=DEPTH)
            rows.append({"id": item["id"], "features": candidate_features(item["query"], result.hits, result.terms, meta),
                         "ok": [rank_of([h], item) == 1 for h in result.hits]})
        sets[name] = rows
    cmd.stdout.write(f"rerank candidates · corpus {settings.SM_EVAL_CORPUS} · " + " · ".join(f"{n} {len(v)}" for n, v in sets.items()))
    return {"corpus": settings.SM_EVAL_CORPUS, "sets": sets}
