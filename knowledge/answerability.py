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
import re
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
from django.db import connection

from .calibration import nearest_negative
from .models import IndexMeta
from .selectors import Hit, SearchResult, cosines, index_cached, read_once, section_snapshot
from .text import contains_word, grams, synonym_meanings, tokenize, uncovered_topics

FEATURES = ("chunk_sim", "sentence_sim", "form_sim", "global_sim", "coverage", "gram_coverage", "section_coverage", "margin",
            "noun_coverage", "nouns_missing", "bank_sim", "type_match", "type_miss")

# What kind of figure a question asks for, and how a section states one: a question asking 多久
# answered by a section with no duration anywhere is likely asking a detail the SOPs leave out.
ANSWER_TYPES = {
    "duration": (r"多久|多长时间|多长|几秒|多少秒|几天|几分钟|几小时|几个小时|多少天|多少分钟|多少小时|几周|几个月|多少年|几年|期限",
                 r"\d+(\.\d+)?\s*(分钟|小时|天|日|秒|周|个月|年|min|h)|[一二两三四五六七八九十半]+\s*(分钟|小时|天|周|个月|年)"),
    "money": (r"多少钱|几块|多少元|多少块|价格|价钱|金额|费用|多少费", r"\d+(\.\d+)?\s*(元|块)|¥\s*\d"),
    "clock": (r"几点|什么时间开|什么时候关|几点钟", r"\d{1,2}\s*[:：]\s*\d{2}|\d{1,2}\s*点"),
    "temperature": (r"几度|多少度|温度", r"-?\d+(\.\d+)?\s*(℃|°C|度)"),
    "ratio": (r"几倍|百分之|比例|几成|多少倍|折扣是多少|打几折", r"\d+(\.\d+)?\s*(%|倍|成|折)|百分之"),
    "count": (r"几次|几个|多少个|几份|几张|几人|几位|几名|多少人|多少份|多少次|几瓶|几杯|几克|多少克|多少毫升|几毫升",
              r"\d+\s*(次|个|份|张|人|位|名|瓶|杯|克|g|ml|毫升|斤|公斤|kg)"),
    # Whether something costs (a guest or a worker): answered by an amount, 免费, a charge or a deduction.
    "charge": (r"(加|扣|掏|赔)钱(吗|不|么)|(另外|额外|另)收|收不收(钱|费)|要不要(钱|掏钱|收费|收钱)|收费吗|(要|会|这个|[盒袋])收钱(吗|不|么)",
               r"\d+(\.\d+)?\s*(元|块)|¥\s*\d|免费|不收|收取|收费|另收|加收|扣|赔|自费|自付|承担|原价|成本价|费用"),
    "distance": (r"几公里|多少公里|多少千米|多远|多少米|几米",
                 r"\d+(\.\d+)?\s*(公里|千米|km|米)|[一二两三四五六七八九十半]+\s*(公里|千米)"),
    # Which brand or where from (「鲜奶用的哪个牌子」「牛腩是哪里产的」): SOPs that name a brand
    # or an origin say so with the word. 「有哪些牌子」 (what the store sells) is not asked as one.
    "brand": (r"(什么|啥|哪个|哪家|哪种)(牌子|品牌)|(牌子|品牌)是(什么|啥|哪)|哪里产|哪儿产|哪产的|产地|哪个厂|哪家厂|(用的|用)(什么|啥)豆",
              r"品牌|牌子|产地|产自|原产|厂家|厂商|进口|国产|供应商|指定"),
    # Where a worker gets a supply or a replacement (「小票纸用完了去哪领」「工服能再领吗」):
    # answered by a section that says how it is issued. A coupon a guest claims (「能领生日券吗」)
    # is not asked as one.
    "supply": (r"(去|到|在|找)(哪|哪里|哪儿|谁)(申)?领|再领|补领|重新领|领新的",
               r"领取|领用|申领|补领|发放|配发|补发|申购|请购|仓库|库房"),
    # A number to call: SOPs that name a hotline often say only 「见应急联系卡」, and 「报修热线号码是多少」
    # answered from such a section quoted no number. Stated as one a phone would dial, or as an
    # emergency number after the word that calls it (120 alone is as often 120℃ or 120g).
    "phone": (r"(电话|号码|手机号|热线|联系方式)[^，。？！,?!\s]{0,4}(多少|是啥|是什么|是几)(?!钱|次|个|天)"
              r"|手机号?(是)?多少(?!钱|次|个|天)|(打|拨)(什么|啥|哪个|几号)(电话|号码)",
              r"(?<!\d)(400[-\s]?\d{3}[-\s]?\d{4}|0\d{2,3}[-\s]?\d{7,8}|1[3-9]\d{9}|\d{7,8})(?!\d)"
              r"|(拨打|打|报警|急救|火警|电话|热线)\D{0,3}(110|119|120|122|12315)(?!\d)"),
}
_NOUN_TAGS = ("n", "vn", "eng", "j")
# Nouns by their tag that name nothing a rule would be about (「什么时候」「有点酸」「感觉不对」).
_GENERIC_NOUNS = frozenset("时候 有点 感觉 事情 东西 问题 情况 多长时间 意思 样子 地方 办法 方法 原因".split())

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


_ANSWER_TYPES = {kind: (re.compile(ask), re.compile(states)) for kind, (ask, states) in ANSWER_TYPES.items()}


def asked_types(question: str) -> tuple[str, ...]:
    """The kinds of figure a question asks for (「洗手洗多久」 → duration)."""
    return tuple(kind for kind, (ask, _) in _ANSWER_TYPES.items() if ask.search(question or ""))


def states_type(kinds: tuple[str, ...], text: str) -> bool:
    """Whether `text` states a figure of one of those kinds (「搓洗不少于 20 秒」 a duration)."""
    return any(_ANSWER_TYPES[kind][1].search(text) for kind in kinds)


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
    import jieba
    import jieba.posseg as pseg

    from .text import STOPWORDS, tokenize

    tokenize("")  # loads jieba and the corpus's user dictionary once
    known = jieba.dt.FREQ
    # 「哪些地方」「什么东西」 ask where or what; they name nothing the corpus should contain. A two-character
    # stretch jieba's dictionary does not know is a fragment of its guess at an unfamiliar phrase
    # (「问芋泥」 → 问芋), not a word: a typo or a colloquial run, not a thing the corpus lacks.
    words = [w for w, tag in pseg.cut(question) if len(w) >= 2 and w not in STOPWORDS and w not in _GENERIC_NOUNS
             and tag.startswith(_NOUN_TAGS) and not w.startswith(("哪", "什么", "啥"))
             and (tag == "eng" or len(w) >= 3 or known.get(w, 0) > 0)]
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
    # Signals every corpus has: chunks, sentences and the question forms the product wrote at
    # ingest. Hand-written 常见问法 (a corpus may have none) help retrieval, never this score.
    rankings = (global_result or result).rankings if (global_result or result) else {}
    out["global_sim"] = max([h.vector_score or 0.0 for h in rankings.get("vector", [])[:1]]
                            + [h.sentence_score or 0.0 for h in rankings.get("sentence", [])[:1]] + [0.0])
    # How close it comes to a shipped question about something this corpus does not cover.
    out["bank_sim"] = nearest_negative(qvec)[0]
    if top is None:
        return out, missing
    # The chosen section's chunks, sentences and words from the process's snapshot of it;
    # only its question aliases (a manager may add one at any time) are read live.
    snap = section_snapshot(top.document_id, top.section_path)
    chunk_sims = cosines(snap.chunk_vectors, qvec)
    out["chunk_sim"] = float(chunk_sims.max()) if len(chunk_sims) else 0.0
    sentence_sims = cosines(snap.sentence_vectors, qvec)
    out["sentence_sim"] = float(sentence_sims.max()) if len(sentence_sims) else 0.0
    form_sims = cosines(snap.form_vectors, qvec) if snap.form_vectors is not None else np.zeros(0)
    out["form_sim"] = float(form_sims.max()) if len(form_sims) else out["sentence_sim"]
    if asked := asked_types(question):
        section_text = "\n".join(text for _, text, _ in snap.units)
        states = [kind for kind in asked if states_type((kind,), section_text)]
        out["type_match"] = float(bool(states))
        out["type_miss"] = float(not states)
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


_PROCESS_MODEL: list[dict | None] = [None]


def use_model(model: dict | None) -> None:
    """This process scores with `model` (an evaluation corpus's fit made without it) instead of
    the index's or the shipped one; scoring_with() still wins inside its block."""
    _PROCESS_MODEL[0] = model


def never_enough_model() -> dict:
    """Every score below its threshold: every rewrite round of the agent loop runs."""
    return {**fit([{f: 0.0 for f in FEATURES}] * 2, [0, 1]), "threshold": 2.0}


def stored_model(meta: IndexMeta | None) -> dict:
    if _OVERRIDE.get() is not None:
        return _OVERRIDE.get()
    if _PROCESS_MODEL[0] is not None:
        return _PROCESS_MODEL[0]
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


def fit(rows: list[dict], labels: list[int], *, groups: list[str] | None = None, l2: float = 0.01, steps: int = 20000,
        lr: float = 0.5) -> dict:
    """Logistic regression by gradient descent on standardised features, class-balanced; with
    `groups` (the corpus of each row), balanced within each group and every group weighing the
    same, so no corpus outweighs another by the number of its questions."""
    X = np.array([[r[f] for f in FEATURES] for r in rows], dtype=float)
    y = np.array(labels, dtype=float)
    mean, std = X.mean(axis=0), X.std(axis=0)
    std[std == 0] = 1.0
    Z = (X - mean) / std
    g = np.array(groups if groups is not None else ["all"] * len(rows))
    weight = np.zeros(len(y))
    for group in set(g.tolist()):
        for label in (0.0, 1.0):
            mask = (g == group) & (y == label)
            if mask.any():
                weight[mask] = 1.0 / mask.sum()
    weight /= weight.sum()
    coef, bias = np.zeros(Z.shape[1]), 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(Z @ coef + bias)))
        grad = (p - y) * weight
        coef -= lr * (Z.T @ grad + l2 * coef)
        bias -= lr * grad.sum()
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


# The share of a corpus's answerable tuning questions the threshold may refuse; across corpora
# the threshold is the median of each corpus's own (one corpus with easy questions cannot set it).
FALSE_REFUSAL_BUDGET = 0.03


def _best_round(model: dict, row: dict) -> float:
    return max(probability(model, r["signals"]) for r in row["rounds"])


def fit_across(rows_by_corpus: dict[str, list[dict]], *, budget: float = FALSE_REFUSAL_BUDGET) -> dict:
    """The model over every corpus's tuning rows ({"set", "label", "rounds": [{"signals"}…]}),
    each corpus weighing the same, and its threshold: the median over corpora of the score
    below which `budget` of that corpus's answerable tuning questions fall."""
    tune = [(name, r) for name, rows in rows_by_corpus.items() for r in rows if r["set"] == "tune"]
    model = fit([r["rounds"][0]["signals"] for _, r in tune], [r["label"] for _, r in tune], groups=[n for n, _ in tune])
    per_corpus = {}
    for name, rows in rows_by_corpus.items():
        pos = sorted(_best_round(model, r) for r in rows if r["set"] == "tune" and r["label"] == 1)
        if pos:
            per_corpus[name] = pos[int(math.floor(budget * len(pos)))] - 1e-6
    model.update(threshold=float(np.median(list(per_corpus.values()))) if per_corpus else 0.5,
                 threshold_rule=f"各语料调参集可答问题误拒 {budget:.0%} 处分数的中位数",
                 thresholds_per_corpus={k: round(v, 4) for k, v in per_corpus.items()},
                 fitted_on={name: sum(1 for n, _ in tune if n == name) for name in rows_by_corpus})
    return model


def refusal_figures(model: dict, rows: list[dict]) -> dict:
    """How `model` at its threshold refuses labelled rows: false refusals, near and far refused."""
    t = model["threshold"]
    scored = [(r, _best_round(model, r)) for r in rows]
    return {"answerable": sum(1 for r, _ in scored if r["label"] == 1),
            "false_refusals": sum(1 for r, p in scored if r["label"] == 1 and p < t),
            "near": sum(1 for r, _ in scored if r["scope"] == "near"), "near_refused": sum(1 for r, p in scored if r["scope"] == "near" and p < t),
            "far": sum(1 for r, _ in scored if r["scope"] == "far"), "far_refused": sum(1 for r, p in scored if r["scope"] == "far" and p < t)}
