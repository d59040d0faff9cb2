"""Can the corpus answer this question? One calibrated score over several signals.

A single cosine gate cannot tell a near-domain question (「员工可以带宠物狗来上班吗」) from an
answerable one: both score high against *some* section. What separates them is whether the
question's salient words exist in the corpus at all, whether they occur in the section that
would answer, and how clearly that section stands out. `eval calibrate` fits a logistic
regression (numpy, no new dependency) on the tuning set's answerable / near / far labels and
stores it in the index metadata; the trace shows the score and every signal.

Reads only; never writes. Query words reach SQL only as bound parameters.
"""
from __future__ import annotations

import json
import math
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
from django.db import connection
from pgvector.django import CosineDistance

from .models import IndexMeta, Sentence
from .selectors import Hit, SearchResult, _cosines, index_cached, read_once, section_snapshot
from .text import contains_word, grams, synonym_meanings, tokenize, uncovered_topics

FEATURES = ("chunk_sim", "sentence_sim", "alias_sim", "global_sim", "coverage", "gram_coverage", "section_coverage", "margin",
            "noun_coverage", "nouns_missing")
_NOUN_TAGS = ("n", "vn", "eng", "j", "l", "i")

# Fitted by `manage.py eval calibrate --save-default` with the e5 embedder on the tuning set:
# what a fresh clone refuses with. A model stored in the index metadata (fitted on the
# running index) wins.
DEFAULT_MODEL_PATH = Path(__file__).with_name("answerability_e5.json")
DEFAULT_MODEL: dict = json.loads(DEFAULT_MODEL_PATH.read_text("utf-8")) if DEFAULT_MODEL_PATH.exists() else {}


@dataclass
class Verdict:
    score: float
    enough: bool
    threshold: float
    signals: dict
    missing_terms: list[str] = field(default_factory=list)  # the question's nouns found nowhere in the corpus (nor meant by a synonym)
    # A topic the SOPs leave to someone else that the question names, and refused for it:
    # {"topic": "人事与薪酬", "ask": "店长或公司人事部门", "words": ["辞职"]} (corpus/uncovered.txt).
    uncovered: dict | None = None

    def as_dict(self) -> dict:
        return {"score": round(self.score, 4), "threshold": round(self.threshold, 4), "enough": self.enough,
                "signals": {k: round(v, 4) for k, v in self.signals.items()}, "missing_terms": self.missing_terms,
                **({"uncovered": self.uncovered} if self.uncovered else {})}


def salient_terms(question: str) -> list[str]:
    """The question's content words (two characters or more when there are any)."""
    terms = list(dict.fromkeys(tokenize(question)))
    return [t for t in terms if len(t) >= 2] or terms


def topic_words(question: str) -> list[str]:
    """The question's nouns (jieba POS tags n*, vn, eng …): what it is *about*. A near-domain
    question usually names a thing the corpus never mentions (宠物, 社保, 停车费)."""
    return list(_topic_words((question or "").lower()))


# POS tagging runs an HMM over every stretch jieba does not know (2–4 ms a question here) and
# the judge asks again each round and for every repeat of a common question; like the search
# tokens, the result is fixed once the dictionary is loaded.
@lru_cache(maxsize=4096)
def _topic_words(question: str) -> tuple[str, ...]:
    import jieba.posseg as pseg

    from .text import STOPWORDS, tokenize

    tokenize("")  # loads jieba and the corpus's user dictionary once
    # 「哪些地方」「什么东西」 ask where or what; they name nothing the corpus should contain.
    words = [w for w, tag in pseg.cut(question) if len(w) >= 2 and w not in STOPWORDS and tag.startswith(_NOUN_TAGS)
             and not w.startswith(("哪", "什么", "啥"))]
    return tuple(dict.fromkeys(words))


# A question naming a topic the SOPs leave to others is refused unless its evidence is this
# far (log-odds) above the threshold: the word may be said in passing (「包厢客人抽烟，烟灰缸多久
# 换」 is answered by 包厢服务标准, +4.9). Chosen on the tuning set: the near-domain questions
# naming such a topic score below it but one (+6.2, 「请病假那几天工资怎么算」; next +3.9).
UNCOVERED_GUARD_LOGITS = 4.0


def _words_the_corpus_uses(words: tuple[str, ...]) -> frozenset[str]:
    def build():
        with connection.cursor() as cur:
            cur.execute("SELECT w FROM unnest(%s::text[]) AS w WHERE EXISTS "
                        "(SELECT 1 FROM knowledge_chunk c WHERE strpos(lower(c.text), w) > 0)", [list(words)])
            return frozenset(r[0] for r in cur.fetchall())

    return index_cached(("uncovered_words_in_corpus", words), build)


def uncovered_named(question: str) -> dict | None:
    """The first topic of corpus/uncovered.txt the question names, with the words it names it
    by, as words (text.contains_word: 「这个税号」 does not name 个税, 「增加班次」 not 加班). A word
    the corpus itself uses never counts: once a section covers it, it is answered."""
    found = [(t, w) for t in uncovered_topics() for w in t.words if contains_word(question, w)]
    if not found:
        return None
    used = _words_the_corpus_uses(tuple(sorted({w for t in uncovered_topics() for w in t.words})))
    found = [(t, w) for t, w in found if w not in used]
    if not found:
        return None
    topic = found[0][0]
    return {"topic": topic.topic, "ask": topic.ask, "words": [w for t, w in found if t is topic]}


def _idf(n: int, df: int | None) -> float:
    if not df:
        return math.log((n + 0.5) / 0.5)  # a word the corpus never uses weighs most
    return max(0.1, math.log((n - df + 0.5) / (df + 0.5)))


def _weighted_share(terms: list[str], idf: dict[str, float], present: set[str]) -> float:
    total = sum(idf[t] for t in terms)
    return sum(idf[t] for t in terms if t in present) / total if total else 0.0


def signals(question: str, qvec, result: SearchResult, top: Hit | None, meta: IndexMeta,
            global_result: SearchResult | None = None) -> tuple[dict, list[str]]:
    """The signals for `top` as the answer to `question` (qvec: the question's own vector,
    never a rewritten query's: a rewrite that prepends section titles would match them)."""
    n = max(1, meta.n_chunks)
    terms = salient_terms(question)
    qgrams = list(dict.fromkeys(grams(question)))
    nouns = topic_words(question)
    noun_grams = list({w[i : i + 2] for w in nouns for i in range(len(w) - 1)})
    # 「锁门」 is 闭店 in the corpus's words (corpus/synonyms.txt): known, and present where 闭店 is.
    meanings = synonym_meanings(question, set(terms) | set(nouns))
    meant = {t for ts in meanings.values() for t in ts}
    words, word_grams = sorted(set(terms) | set(nouns) | meant), sorted(set(qgrams) | set(noun_grams))

    def read_stats():
        with connection.cursor() as cur:  # every statistic in one round trip
            cur.execute("SELECT 'w', term, df FROM knowledge_termstat WHERE term = ANY(%s) "
                        "UNION ALL SELECT 'g', term, df FROM knowledge_gramstat WHERE term = ANY(%s)",
                        [words, word_grams])
            return cur.fetchall()

    stats = read_once(("corpus_df", tuple(words), tuple(word_grams)), read_stats)  # once per question, not per round
    word_df = {t: d for kind, t, d in stats if kind == "w"}
    gram_df = {t: d for kind, t, d in stats if kind == "g"}
    df = {t: word_df[t] for t in terms if t in word_df}
    for t in terms:  # a colloquial word weighs like the corpus term it stands for
        if t not in df and (dfs := [word_df[m] for m in meanings.get(t, []) if m in word_df]):
            df[t] = max(dfs)
    gdf = {g: gram_df[g] for g in qgrams if g in gram_df}
    # A noun counts as known when the corpus uses the word, or every two characters of it
    # (jieba's split can differ between question and corpus).
    unknown_nouns = [w for w in nouns if w not in word_df and not all(w[i : i + 2] in gram_df for i in range(len(w) - 1))
                     and not any(m in word_df for m in meanings.get(w, []))]
    idf = {t: _idf(n, df.get(t)) for t in terms}
    gidf = {g: _idf(n, gdf.get(g)) for g in qgrams}
    # Only the things it names: the words around them (「之前」「一班」「清楚」) were quoted back
    # in refusals as if the rules lacked them.
    missing = unknown_nouns
    out = {f: 0.0 for f in FEATURES}
    out["noun_coverage"] = 1.0 - len(unknown_nouns) / len(nouns) if nouns else 1.0
    out["nouns_missing"] = float(min(3, len(unknown_nouns)))
    out["coverage"] = _weighted_share(terms, idf, set(df))
    out["gram_coverage"] = _weighted_share(qgrams, gidf, set(gdf))
    rankings = (global_result or result).rankings if (global_result or result) else {}
    out["global_sim"] = max([h.vector_score or 0.0 for h in rankings.get("vector", [])[:1]]
                            + [h.sentence_score or 0.0 for h in rankings.get("sentence", [])[:1]]
                            + [h.alias_score or 0.0 for h in rankings.get("alias", [])[:1]] + [0.0])
    if top is None:
        return out, missing
    # The chosen section's chunks, sentences and words from the process's snapshot of it;
    # only its question aliases (a manager may add one at any time) are read live.
    snap = section_snapshot(top.document_id, top.section_path)
    chunk_sims = _cosines(snap.chunk_vectors, qvec)
    out["chunk_sim"] = float(chunk_sims.max()) if len(chunk_sims) else 0.0
    sentence_sims = _cosines(snap.sentence_vectors, qvec)
    out["sentence_sim"] = float(sentence_sims.max()) if len(sentence_sims) else 0.0
    vec = [float(x) for x in qvec]
    out["alias_sim"] = 1.0 - min(
        (float(d) for d in Sentence.objects.filter(chunk_id__in=snap.chunk_ids, kind=Sentence.Kind.ALIAS)
         .annotate(d=CosineDistance("embedding", vec)).values_list("d", flat=True)),
        default=1.0)
    in_section = (snap.terms & set(terms)) | {t for t in terms if snap.terms & set(meanings.get(t, []))}
    out["section_coverage"] = _weighted_share(terms, idf, in_section)
    others = [h.score for h in (result.hits if result else []) if h.section_path != top.section_path]
    out["margin"] = (top.score - others[0]) / top.score if others and top.score else (1.0 if top.score else 0.0)
    return out, missing


# A model used instead of the stored one within `scoring_with()`: `eval calibrate` collects the
# signals of every round under a model that never says "enough", in this process only — never
# by writing it to the index, which every running server reads (it refused every question there).
_OVERRIDE: ContextVar[dict | None] = ContextVar("answerability_override", default=None)


@contextmanager
def scoring_with(model: dict):
    token = _OVERRIDE.set(model)
    try:
        yield
    finally:
        _OVERRIDE.reset(token)


def never_enough_model() -> dict:
    """Every score below its threshold: every rewrite round of the agent loop runs."""
    return {**fit([{f: 0.0 for f in FEATURES}] * 2, [0, 1]), "threshold": 2.0}


def stored_model(meta: IndexMeta | None) -> dict:
    if _OVERRIDE.get() is not None:
        return _OVERRIDE.get()
    model = (meta.answerability if meta is not None else None) or {}
    if model.get("signature") == getattr(meta, "signature", None) and model.get("coef"):
        return model
    if DEFAULT_MODEL and DEFAULT_MODEL.get("backend") == getattr(meta, "backend", None):
        return DEFAULT_MODEL
    return {}


def probability(model: dict, sig: dict) -> float:
    x = (np.array([sig[f] for f in model["features"]]) - np.array(model["mean"])) / np.array(model["std"])
    return float(1.0 / (1.0 + np.exp(-(x @ np.array(model["coef"]) + model["bias"]))))


def verdict(question: str, qvec, result: SearchResult, top: Hit | None, meta: IndexMeta, *, threshold: float | None = None,
            global_result: SearchResult | None = None) -> Verdict:
    sig, missing = signals(question, qvec, result, top, meta, global_result)
    model = stored_model(meta)
    if not model:
        # No calibration for this embedder: never refuse on a score nobody fitted.
        return Verdict(1.0, top is not None, 0.0, sig, missing)
    t = model["threshold"] if threshold is None else threshold
    p = probability(model, sig)
    named = uncovered_named(question)
    if named and refusable_as_uncovered(p, t):
        return Verdict(p, False, t, sig, missing, uncovered=named)
    return Verdict(p, top is not None and p >= t, t, sig, missing)


def refusable_as_uncovered(score: float, threshold: float) -> bool:
    """May a question naming something the SOPs leave to others (a listed topic, a price they
    never give) be refused for it? Only on a calibrated score not far enough above the threshold
    for the word to have been said in passing (UNCOVERED_GUARD_LOGITS)."""
    return 0 < threshold < 1 and logit(score) - logit(threshold) < UNCOVERED_GUARD_LOGITS


def logit(p: float) -> float:
    p = min(max(p, 1e-9), 1 - 1e-9)
    return math.log(p / (1 - p))


def fit(rows: list[dict], labels: list[int], *, l2: float = 0.01, steps: int = 20000, lr: float = 0.5) -> dict:
    """Class-balanced logistic regression by gradient descent on standardised features."""
    X = np.array([[r[f] for f in FEATURES] for r in rows], dtype=float)
    y = np.array(labels, dtype=float)
    mean, std = X.mean(axis=0), X.std(axis=0)
    std[std == 0] = 1.0
    Z = (X - mean) / std
    w_pos = 0.5 / max(1, y.sum())
    w_neg = 0.5 / max(1, (1 - y).sum())
    weight = np.where(y == 1, w_pos, w_neg)
    coef, bias = np.zeros(Z.shape[1]), 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(Z @ coef + bias)))
        g = (p - y) * weight
        coef -= lr * (Z.T @ g + l2 * coef)
        bias -= lr * g.sum()
    return {"features": list(FEATURES), "mean": mean.tolist(), "std": std.tolist(), "coef": coef.tolist(), "bias": float(bias)}


def choose_threshold(model: dict, rounds: list[list[dict]], labels: list[int], *, max_false_refusal: float = 0.02) -> tuple[float, dict]:
    """The highest threshold that refuses at most `max_false_refusal` of the answerable
    questions (refusing a real question costs more than answering a near-domain one). Each
    question is answered when any of its rounds passes, so its best round counts."""
    probs = [max(probability(model, r) for r in rs) for rs in rounds]
    pos = sorted(p for p, y in zip(probs, labels) if y == 1)
    neg = [p for p, y in zip(probs, labels) if y == 0]
    allowed = int(math.floor(max_false_refusal * len(pos)))
    t = pos[allowed] - 1e-6 if pos else 0.5
    stats = {"false_refusals": sum(1 for p in pos if p < t), "answerable": len(pos),
             "refused_unanswerable": sum(1 for p in neg if p < t), "unanswerable": len(neg)}
    return float(t), stats
