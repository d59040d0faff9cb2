"""The domain lexicon that ships with the product: everyday words of restaurant, bar, tea-shop
and fast-food staff grouped with the words an SOP uses for the same thing (knowledge/lexicon.txt,
「醉酒 | 醉酒 喝醉 喝多了 喝高了」). It is no list of any one corpus's terms: a question's word
that the loaded corpus never uses is read as the words of its group the corpus *does* use,
whatever corpus that is (「喝多了」 means 醉酒 in one chain's SOPs, 醉酒顾客 in another's, and
nothing in a corpus that uses neither). A chain's own synonym file (synonyms.txt beside its
documents) works alongside.

Reads the index's word statistics; never writes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from django.conf import settings

LEXICON_PATH = Path(__file__).with_name("lexicon.txt")


@dataclass(frozen=True)
class Concept:
    label: str
    words: tuple[str, ...]


@lru_cache(maxsize=4)
def _load(path: str) -> tuple[tuple[Concept, ...], dict[str, tuple[int, ...]]]:
    concepts: list[Concept] = []
    p = Path(path) if path else None
    lines = p.read_text("utf-8").splitlines() if p is not None and p.is_file() else []
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if "|" not in line:
            continue
        label, words = (part.strip() for part in line.split("|", 1))
        members = tuple(dict.fromkeys(w.lower() for w in words.split() if len(w) >= 2))
        if label and len(members) >= 2:
            concepts.append(Concept(label, members))
    by_first_char: dict[str, list[int]] = {}
    for i, c in enumerate(concepts):
        for w in c.words:
            by_first_char.setdefault(w[0], []).append(i)
    return tuple(concepts), {k: tuple(dict.fromkeys(v)) for k, v in by_first_char.items()}


def _path() -> str:
    """SM_LEXICON_PATH, the shipped lexicon when unset; "" turns the lexicon off."""
    return str(LEXICON_PATH) if settings.SM_LEXICON_PATH is None else settings.SM_LEXICON_PATH


def concepts() -> tuple[Concept, ...]:
    return _load(_path())[0]


def concepts_in(text: str) -> list[tuple[str, Concept]]:
    """(the word as the text says it, its concept) for every lexicon word the text contains;
    a word inside a longer one the text also contains is left out (「喝多了」, not 「喝多」)."""
    text = (text or "").lower()
    if not text:
        return []
    all_concepts, index = _load(_path())
    found = []
    for ch in dict.fromkeys(text):
        for i in index.get(ch, ()):
            for w in all_concepts[i].words:
                if w[0] == ch and w in text:
                    found.append((w, all_concepts[i]))
    words = {w for w, _ in found}
    return [(w, c) for w, c in found if not any(w != o and w in o for o in words)]


def corpus_words_for(text: str) -> list[tuple[str, list[str]]]:
    """For each lexicon word in `text` that the corpus does not use, the words of its concept
    the corpus does use: [(「喝多了」, [「醉酒」]), …]."""
    found = concepts_in(text)
    if not found:
        return []
    from .selectors import words_the_corpus_uses

    used = words_the_corpus_uses(tuple(sorted({w for _, c in found for w in c.words})))
    out = []
    for said, concept in found:
        if said in used:
            continue
        targets = [w for w in concept.words if w in used]
        if targets:
            out.append((said, targets))
    return out


# --- typed by ear: 「炸路」 for 炸炉, 「退宽」 for 退款, 「发漂」 for 发票 (pinyin input, voice input) ------

_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")


@lru_cache(maxsize=65536)
def _pinyin(word: str) -> str:
    """Toneless pinyin of a word (the same every time: kept, as the windows of questions repeat)."""
    from pypinyin import lazy_pinyin

    return "".join(lazy_pinyin(word))


def _corpus_pinyin() -> tuple[frozenset[str], dict[str, tuple[str, ...]]]:
    """The corpus's words of 2–4 Chinese characters, and the same by their toneless pinyin; kept
    per process until the next ingest."""
    from django.db import connection

    from .selectors import index_cached

    def build():
        with connection.cursor() as cur:
            cur.execute("SELECT term FROM knowledge_termstat WHERE char_length(term) BETWEEN 2 AND 4 AND term ~ '^[一-龥]+$'")
            terms = [r[0] for r in cur.fetchall()]
        out: dict[str, list[str]] = {}
        for t in terms:
            out.setdefault(_pinyin(t), []).append(t)
        return frozenset(terms), {k: tuple(sorted(v)) for k, v in out.items()}

    return index_cached(("corpus_pinyin",), build)


def non_word_windows(text: str, sizes: tuple[int, ...] = (2, 3, 4)) -> list[str]:
    """Each stretch of `sizes` Chinese characters in `text` that is no word in jieba's dictionary
    and cuts through no word jieba found (「客人一直」 has no 「人一」 in it), once: where a word typed
    by its sound can be (「炸路」 for 炸炉, 「躲少」 for 多少)."""
    import jieba

    from .text import tokenize

    tokenize("")  # jieba and its dictionaries loaded
    known = jieba.dt.FREQ
    windows = []
    for match in _CJK_RUN.finditer(text or ""):
        run = match.group()
        spans = [(s, e) for _, s, e in jieba.tokenize(run) if e - s > 1]
        for n in sizes:
            windows += [run[i : i + n] for i in range(len(run) - n + 1)
                        if not any(s < i + n and e > i and not (i <= s and e <= i + n) for s, e in spans)]
    return [w for w in dict.fromkeys(windows) if not known.get(w)]


def pinyin_of(word: str) -> str:
    """Toneless pinyin, kept per word."""
    return _pinyin(word)


def corpus_homophones_for(text: str) -> list[tuple[str, list[str]]]:
    """For each stretch of 2–4 Chinese characters in `text` that is no word at all (neither the
    corpus's nor jieba's dictionary's) but sounds exactly like a word the corpus uses, that word:
    [(「炸路」, [「炸炉」])]. A real word is never replaced by one that merely sounds like it."""
    candidates = non_word_windows(text)
    if not candidates:
        return []
    corpus_terms, by_sound = _corpus_pinyin()
    out = []
    for w in candidates:
        if w in corpus_terms:
            continue
        targets = [t for t in by_sound.get(_pinyin(w), ()) if t != w]
        if targets:
            out.append((w, targets[:3]))
    return out
