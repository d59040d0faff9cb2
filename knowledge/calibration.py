"""What the product knows about questions no corpus answers, shipped with it: a bank of
restaurant-world questions store SOPs rarely cover (pay day, 社保, a guest's dog, the WiFi
password …) and of questions with nothing to do with work (knowledge/negatives.jsonl), each
with the words that name its subject.

A bank question counts against a corpus only while the corpus never uses its words: once a
chain's SOPs cover 宠物, the pet question is no longer a negative for that corpus. Used to
calibrate a newly ingested corpus's refusal threshold without labelled questions, and as one
answerability signal (how close a question comes to a question the corpus does not cover).

Reads the index; the only writes are embedding-cache rows for the bank's vectors.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

NEGATIVES_PATH = Path(__file__).with_name("negatives.jsonl")


@dataclass(frozen=True)
class BankQuestion:
    q: str
    scope: str  # "near" (the store's world) | "far" (not work at all)
    topic: str
    words: tuple[str, ...]


@lru_cache(maxsize=2)
def negative_bank(path: str = str(NEGATIVES_PATH)) -> tuple[BankQuestion, ...]:
    rows = []
    for line in Path(path).read_text("utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            rows.append(BankQuestion(r["q"], r["scope"], r.get("topic", ""), tuple(w for w in r.get("words", []) if w)))
    return tuple(rows)


def applicable_negatives() -> list[BankQuestion]:
    """The bank questions the indexed corpus does not cover by its words."""
    from .selectors import words_the_corpus_uses

    bank = negative_bank()
    used = words_the_corpus_uses(tuple(sorted({w for b in bank for w in b.words})))
    return [b for b in bank if not any(w in used for w in b.words)]


def bank_vectors(embedder=None) -> tuple[list[BankQuestion], np.ndarray]:
    """The applicable bank questions and their query vectors (unit length), kept per process
    until the next ingest; vectors come from the embedding cache (embedded once per embedder)."""
    from .embedders import get_embedder
    from .selectors import index_cached
    from .services import embed_cached

    embedder = embedder or get_embedder()

    def build():
        questions = applicable_negatives()
        vectors = embed_cached(embedder, [b.q for b in questions], kind="query")
        matrix = np.asarray(vectors, dtype=np.float32).reshape(len(questions), -1)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return questions, matrix / norms

    return index_cached(("negative_bank", embedder.signature), build)


SAME_QUESTION = 0.995  # a bank question itself (calibration asks them): its own entry does not count


def nearest_negative(qvec, embedder=None) -> tuple[float, BankQuestion | None]:
    """The cosine of the question to the closest applicable bank question (itself excluded,
    when it is one), and that question."""
    questions, matrix = bank_vectors(embedder)
    if not questions:
        return 0.0, None
    q = np.asarray(qvec, dtype=np.float32)
    sims = matrix @ (q / (np.linalg.norm(q) or 1.0))
    sims[sims >= SAME_QUESTION] = -1.0
    i = int(sims.argmax())
    return (float(sims[i]), questions[i]) if sims[i] > -1.0 else (0.0, None)
