"""Tokenising Chinese for the lexical channel: jieba (search mode) with the corpus's user
dictionary, lower-cased, punctuation and stopwords dropped. Loaded once per process."""
from __future__ import annotations

import logging
import re
import threading
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings

_lock = threading.Lock()
_ready = False
_TOKEN_OK = re.compile(r"[\w\u4e00-\u9fff]", re.UNICODE)
STOPWORDS = frozenset(
    "的 了 吗 呢 吧 啊 呀 么 嘛 和 与 及 或 是 在 有 就 都 也 还 要 会 能 可以 可 把 被 给 让 对 从 到 向 "
    "我 你 他 她 它 我们 你们 他们 这 那 这个 那个 这些 那些 什么 怎么 怎么办 怎样 如何 为什么 哪 哪个 哪些 "
    "吗? 一下 一个 一些 个 上 下 中 里 时 后 前 等 如 被 并 且 但 而 所 以 之 其 该 各 每 请问 请 问 "
    "一 不 没 没有 多少 几 多 很 太 又 再 着 过 得 地 用 呃 嗯 哦 呗 啦 哈 滴 诶 咋 咋办 咱 咱们 俺".split()
)


def _ensure_jieba():
    global _ready
    if _ready:
        return
    with _lock:
        if _ready:
            return
        import jieba

        jieba.setLogLevel(logging.WARNING)
        userdict = settings.SM_CORPUS_DIR / "userdict.txt"
        if userdict.exists():
            jieba.load_userdict(str(userdict))
        jieba.initialize()
        _ready = True


def tokenize(text: str) -> list[str]:
    """Search-mode tokens: 「青岛啤酒」 yields 青岛, 啤酒 and 青岛啤酒, so colloquial
    queries still meet the documents' wording."""
    _ensure_jieba()
    return list(_tokens((text or "").lower()))


# A chat tokenises the same chunk texts and sentences over and over (the judge's overlap, the
# extractive answer's key sentences): jieba is deterministic once its dictionary is loaded,
# so the tokens of a text are computed once per process. Short texts only: no corpus-sized keys.
@lru_cache(maxsize=8192)
def _tokens_cached(text: str) -> tuple[str, ...]:
    return _tokens_uncached(text)


def _tokens(text: str) -> tuple[str, ...]:
    return _tokens_cached(text) if len(text) <= 4000 else _tokens_uncached(text)


def _tokens_uncached(text: str) -> tuple[str, ...]:
    import jieba

    tokens = []
    for tok in jieba.cut_for_search(text):
        tok = tok.strip()
        if not tok or tok in STOPWORDS or not _TOKEN_OK.search(tok) or len(tok) > 64:
            continue
        tokens.append(tok)
    return tuple(tokens)


def _corpus_list(name: str) -> list[str]:
    """The lines of a list kept beside the documents (corpus/synonyms.txt, uncovered.txt), with
    comments (# …) and blank lines dropped."""
    path = settings.SM_CORPUS_DIR / name
    lines = (line.split("#", 1)[0].strip() for line in path.read_text("utf-8").splitlines()) if path.exists() else ()
    return [line for line in lines if line]


_synonyms: list[tuple[list[str], list[str]]] | None = None


def _load_synonyms() -> list[tuple[list[str], list[str]]]:
    global _synonyms
    if _synonyms is None:
        pairs = [line.split("<=", 1) for line in _corpus_list("synonyms.txt") if "<=" in line]
        _synonyms = [(left.split(), right.split()) for left, right in pairs]
    return _synonyms


@dataclass(frozen=True)
class UncoveredTopic:
    """A topic the SOPs leave to someone else (corpus/uncovered.txt): 人事与薪酬 → 店长或公司人事部门."""

    topic: str
    ask: str
    words: tuple[str, ...]


_uncovered: list[UncoveredTopic] | None = None


def uncovered_topics() -> list[UncoveredTopic]:
    """corpus/uncovered.txt, read once per process (like the synonyms): 「话题 | 去问谁 | words」 per line."""
    global _uncovered
    if _uncovered is None:
        rows = [[p.strip() for p in line.split("|")] for line in _corpus_list("uncovered.txt")]
        _uncovered = [UncoveredTopic(r[0], r[1], tuple(w.lower() for w in r[2].split())) for r in rows if len(r) == 3 and all(r)]
    return _uncovered


# One-character modals and negations jieba joins to the next character (能带, 不带, 要带).
_GLUED_MODALS = frozenset("能会要想可没不别")


def contains_word(text: str, word: str) -> bool:
    """Does `text` say `word` as a word: each occurrence must start and end where jieba cuts the
    text, or lie inside one of its words. 「数字人民币」 (数字|人民币) and 「月工资」 (one word) say 工资
    and 数字人民币; 「这个税号」 (这个|税号) does not say 个税, nor 「中奖金额」 (中奖|金额) 奖金."""
    text, word = (text or "").lower(), word.lower()
    if word not in text:
        return False
    _ensure_jieba()
    import jieba

    spans = [(start, end) for _, start, end in jieba.tokenize(text)]
    cuts = {b for span in spans for b in span}
    at = text.find(word)
    while at >= 0:
        end = at + len(word)
        # jieba glues a modal to the verb after it (「客人能带狗进来吗」: 能带|狗), which hid 带狗.
        glued = at - 1 in cuts and text[at - 1] in _GLUED_MODALS
        if ((at in cuts or glued) and end in cuts) or any(s <= at and end <= e for s, e in spans):
            return True
        at = text.find(word, at + 1)
    return False


def query_terms(query: str) -> list[str]:
    """Tokens of a question plus the corpus terms its colloquial words stand for (the corpus's
    synonyms.txt, the domain lexicon): 「喝多了」 also searches 醉酒."""
    terms = tokenize(query)
    for canonical in dict.fromkeys(tuple(c) for _, c in _synonyms_in(query)):
        terms.extend(t for term in canonical for t in tokenize(term) if t not in terms)
    return terms


def _synonyms_in(query: str) -> list[tuple[str, list[str]]]:
    """(variant, corpus terms) for every colloquial variant the question contains: by the corpus's
    own synonym file, by the shipped domain lexicon for words the corpus does not use, and for a
    non-word typed by ear (「退宽」), the corpus word it sounds like (退款)."""
    from .lexicon import corpus_homophones_for, corpus_words_for
    from .selectors import read_once

    text = (query or "").lower()

    def find():
        found = [(v, canonical) for canonical, variants in _load_synonyms() for v in variants if v in text]
        return found + corpus_words_for(text) + corpus_homophones_for(text)

    # Asked for three times a question (its search terms, the judge's meanings): found once.
    return [(v, list(c)) for v, c in read_once(("synonyms_in", text), find)]


def synonym_meanings(query: str, words) -> dict[str, list[str]]:
    """For each of `words` that is (part of) a colloquial variant found in the question, the
    corpus tokens it stands for: 「锁门」 → 闭店. The answerability signals count such a word as
    known, and as present where its corpus term is."""
    found = _synonyms_in(query)
    out: dict[str, list[str]] = {}
    for w in words:
        for v, canonical in found:
            if len(w) >= 2 and (w in v or v in w):
                out.setdefault(w, [])
                out[w].extend(t for term in canonical for t in tokenize(term) if t not in out[w])
    return out


def term_counts(text: str) -> Counter:
    return Counter(tokenize(text))


def overlap_ratio(query: str, text: str, *, expand: bool = False) -> float:
    """Share of the query's distinct terms that appear in `text` (the judge's lexical signal);
    with expand, the corpus words its colloquial terms stand for count too."""
    terms = set(query_terms(query) if expand else tokenize(query))
    # Single characters (块, 来, 说 …) are mostly grammar in a Chinese question: they would
    # dilute the ratio, so only words of two or more characters count when there are any.
    q = {t for t in terms if len(t) >= 2} or terms
    if not q:
        return 0.0
    t = set(tokenize(text))
    return len(q & t) / len(q)


# --- character bigrams (the second lexical channel) ------------------------------------------

_RUN = re.compile(r"[0-9a-z\u4e00-\u9fff]+")
# Function characters: a bigram made only of these (怎么, 可以, 什么, 能不…) says nothing
# about the topic and would favour every chunk that lists colloquial questions.
_FUNCTION_CHARS = frozenset("的了吗呢吧啊呀么嘛是在有就都也还要会能可以把被给让对从到我你他她它们这那个什怎办如何为哪几多少请问一下咋整啥样不没该得")


def grams(text: str) -> list[str]:
    """Overlapping character bigrams inside runs of Chinese characters, letters and digits."""
    out = []
    for run in _RUN.findall((text or "").lower()):
        if len(run) == 1:
            continue
        for i in range(len(run) - 1):
            g = run[i : i + 2]
            if not (g[0] in _FUNCTION_CHARS and g[1] in _FUNCTION_CHARS):
                out.append(g)
    return out


def gram_counts(text: str) -> Counter:
    return Counter(grams(text))
