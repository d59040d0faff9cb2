"""What an answer is built from: a cited section unit by unit (each with its own vector), the words
of each section, and facts about the corpus as a whole (the words it uses, the prices it states,
its mandatory clauses) — kept per process until the next ingest."""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from django.db import connection

from ..models import Document
from .channels import Hit, _fetch_prepared
from .index import as_visibility, index_cache_keep, index_cache_read, index_cached


@dataclass
class SectionUnit:
    """One sentence, list item or table of a section, with its similarity to the question."""

    kind: str  # "sentence" | "item" | "table"
    text: str
    block: int  # units of one list or paragraph share a block number
    similarity: float = 0.0


@dataclass(frozen=True)
class SectionSnapshot:
    """What one section is made of, as the current index holds it: its chunks and their
    vectors, its units in document order with each unit's sentence vector (None: no vector,
    e.g. a table), and the words it contains. Fixed between ingests, so each process keeps
    one per section and scores a question against it in numpy instead of asking the
    database every time (three queries per candidate section per chat, before)."""

    chunk_ids: tuple[int, ...]
    chunk_vectors: np.ndarray  # (chunks, dim), unit length
    units: tuple[tuple[str, str, int], ...]  # (kind, text, block)
    unit_vectors: np.ndarray  # (units, dim); rows of units without a vector are zero
    has_vector: np.ndarray  # (units,) bool
    sentence_vectors: np.ndarray  # (sentences, dim): every sentence vector of the section
    terms: frozenset[str]
    form_vectors: np.ndarray = None  # (forms, dim): the question forms the product wrote for it at ingest


def _matrix(vectors: list, dim: int) -> np.ndarray:
    if not vectors:
        return np.zeros((0, dim), dtype=np.float32)
    return np.array([np.asarray(v, dtype=np.float32) for v in vectors], dtype=np.float32)


def _build_snapshot(document_id: int, section_path: str) -> SectionSnapshot:
    from ..models import Chunk, Sentence, Term

    chunks = list(Chunk.objects.filter(document_id=document_id, section_path=section_path).order_by("ordinal")
                  .values_list("id", "text", "embedding"))
    ids = [c for c, _, _ in chunks]
    vectors = dict(Sentence.objects.filter(chunk_id__in=ids, kind=Sentence.Kind.SENTENCE).values_list("text", "embedding"))
    forms = list(Sentence.objects.filter(chunk_id__in=ids, kind=Sentence.Kind.ALIAS, generated=True).values_list("embedding", flat=True))
    terms = frozenset(Term.objects.filter(chunk_id__in=ids).values_list("term", flat=True).distinct())
    return _snapshot_of(chunks, vectors, terms, forms)


def _snapshot_of(chunks: list[tuple], vectors: dict, terms: frozenset[str], forms: list | None = None) -> SectionSnapshot:
    """A section's snapshot from its chunks (id, text, vector) in order, its sentence vectors
    by text, its words and its generated question forms' vectors."""
    from ..chunking import _blocks, split_sentences

    units: list[tuple[str, str, int]] = []
    seen: set[str] = set()
    block = 0
    for _, text, _ in chunks:
        for kind, body in _blocks(text.split("\n")):
            block += 1
            if kind == "table":
                parts = [("table", body)]
            elif kind == "list":
                parts = [("item", item) for item in body.split("\n") if item.strip()]
            else:
                parts = [("sentence", s) for s in split_sentences(body)]
            for unit_kind, unit in parts:
                if unit in seen:  # the overlap a long section carries into its next chunk
                    continue
                seen.add(unit)
                units.append((unit_kind, unit, block))
    ids = [c for c, _, _ in chunks]
    dim = len(chunks[0][2]) if chunks and chunks[0][2] is not None else 0
    unit_vectors = np.zeros((len(units), dim), dtype=np.float32)
    has_vector = np.zeros(len(units), dtype=bool)
    for i, (_, text, _) in enumerate(units):
        if text in vectors:
            unit_vectors[i], has_vector[i] = np.asarray(vectors[text], dtype=np.float32), True
    chunk_vectors = _matrix([v for _, _, v in chunks if v is not None], dim)
    sentence_vectors = _matrix(list(vectors.values()), dim)
    return SectionSnapshot(tuple(ids), chunk_vectors, tuple(units), unit_vectors, has_vector, sentence_vectors, terms,
                           _matrix(list(forms or []), dim))


def _build_snapshots(sections: list[tuple[int, str]] | None) -> dict[tuple[int, str], SectionSnapshot]:
    """The snapshots of `sections` (every section when None) in four queries, however many
    there are: a question's ten rerank candidates at 100k chunks cost forty round trips one by one."""
    from collections import defaultdict

    from django.db.models import Q

    from ..models import Chunk, Sentence, Term

    rows = Chunk.objects.order_by("document_id", "section_path", "ordinal")
    if sections is not None:
        if not sections:
            return {}
        wanted = Q()
        for doc, path in sections:
            wanted |= Q(document_id=doc, section_path=path)
        rows = rows.filter(wanted)
    chunks: dict[tuple[int, str], list[tuple]] = defaultdict(list)
    section_of: dict[int, tuple[int, str]] = {}
    for cid, doc, path, text, vec in rows.values_list("id", "document_id", "section_path", "text", "embedding"):
        chunks[(doc, path)].append((cid, text, vec))
        section_of[cid] = (doc, path)
    ids = list(section_of) if sections is not None else None

    def of(queryset):
        return queryset.filter(chunk_id__in=ids) if ids is not None else queryset

    vectors: dict[tuple[int, str], dict] = defaultdict(dict)
    for cid, text, vec in of(Sentence.objects.filter(kind=Sentence.Kind.SENTENCE)).order_by("chunk_id", "id").values_list("chunk_id", "text", "embedding"):
        if cid in section_of:
            vectors[section_of[cid]].setdefault(text, vec)
    forms: dict[tuple[int, str], list] = defaultdict(list)
    for cid, vec in of(Sentence.objects.filter(kind=Sentence.Kind.ALIAS, generated=True)).order_by("chunk_id", "id").values_list("chunk_id", "embedding"):
        if cid in section_of:
            forms[section_of[cid]].append(vec)
    terms: dict[tuple[int, str], set[str]] = defaultdict(set)
    for cid, term in of(Term.objects).values_list("chunk_id", "term"):
        if cid in section_of:
            terms[section_of[cid]].add(term)
    return {key: _snapshot_of(found, vectors[key], frozenset(terms[key]), forms[key]) for key, found in chunks.items()}


def snapshot_every_section() -> int:
    """Every section's snapshot into this process's cache, in four queries instead of four per
    section (a worker's warm-up: ~150 sections, 1 s → a fraction). Returns how many."""
    built = _build_snapshots(None)
    for (doc, path), snap in built.items():
        index_cached(("section", doc, path), lambda snap=snap: snap)
    return len(built)


@dataclass(frozen=True)
class SectionWords:
    """What the rerank reads of a candidate section: its text (units joined, overlaps removed,
    as the snapshot has them) and its words. No vectors: two queries for all ten candidates."""

    text: str
    terms: frozenset[str]


_SECTION_WORDS_SQL = """
SELECT c.document_id, c.section_path, c.id, c.text, ARRAY(SELECT t.term FROM knowledge_term t WHERE t.chunk_id = c.id)
FROM knowledge_chunk c JOIN unnest(%s::bigint[], %s::text[]) AS k(doc, path) ON c.document_id = k.doc AND c.section_path = k.path
ORDER BY c.document_id, c.section_path, c.ordinal
"""


def section_words(sections: list[tuple[int, str]]) -> dict[tuple[int, str], SectionWords]:
    """The text and words of each of `sections`: from this process's cache, the rest in one query."""
    from collections import defaultdict

    keys = list(dict.fromkeys(sections))
    out, missing = {}, []
    version, held = index_cache_read([(kind, *key) for key in keys for kind in ("section_words", "section")])
    for key in keys:
        words, snap = held.get(("section_words", *key)), held.get(("section", *key))
        if words is not None:
            out[key] = words
        elif snap is not None:
            out[key] = SectionWords("\n".join(u[1] for u in snap.units), snap.terms)
        else:
            missing.append(key)
    if missing:
        chunks: dict[tuple[int, str], list[tuple]] = defaultdict(list)
        terms: dict[tuple[int, str], set[str]] = defaultdict(set)
        for doc, path, cid, text, words in _fetch_prepared(_SECTION_WORDS_SQL, [[d for d, _ in missing], [p for _, p in missing]]):
            chunks[(doc, path)].append((cid, text, None))
            terms[(doc, path)].update(words)
        built = {key: SectionWords("\n".join(u[1] for u in _snapshot_of(found, {}, frozenset()).units), frozenset(terms[key]))
                 for key, found in chunks.items()}
        out.update(built)
        index_cache_keep(version, {("section_words", *key): words for key, words in built.items()})
    for key in keys:
        out.setdefault(key, SectionWords("", frozenset()))
    return out


def words_the_corpus_uses(words: tuple[str, ...]) -> frozenset[str]:
    """Those of `words` the indexed corpus uses: as a word of its word index, or with every two
    characters of it in its bigram index (jieba may cut the corpus differently from a question).
    Two index lookups, kept per process until the next ingest."""
    def build():
        wanted = sorted({w.lower() for w in words})
        grams = sorted({w[i : i + 2] for w in wanted for i in range(len(w) - 1)})
        with connection.cursor() as cur:
            cur.execute("SELECT 'w', term FROM knowledge_termstat WHERE term = ANY(%s) "
                        "UNION ALL SELECT 'g', term FROM knowledge_gramstat WHERE term = ANY(%s)", [wanted, grams])
            rows = cur.fetchall()
        terms = {t for kind, t in rows if kind == "w"}
        known_grams = {t for kind, t in rows if kind == "g"}
        return frozenset(w for w in words if w.lower() in terms
                         or (len(w) >= 2 and all(w.lower()[i : i + 2] in known_grams for i in range(len(w) - 1))))

    return index_cached(("words_used", words), build)


_PRICE = re.compile(r"\d+(\.\d+)?\s*元")


def corpus_states_a_price_of(words: list[str]) -> bool:
    """Does any line of the corpus (a sentence run or a table row) give a price in 元 next to one
    of `words` (a product's name and aliases, upper-cased)? Kept per process until the next ingest."""
    def build():
        from ..models import Chunk

        lines = (line for text in Chunk.objects.values_list("text", flat=True) for line in text.split("\n"))
        return tuple(line.upper() for line in lines if _PRICE.search(line))

    priced = index_cached(("priced_lines",), build)
    return any(w in line for line in priced for w in words)


def mandatory_rules(audiences) -> list[dict]:
    """The conditional clauses (front matter `mandatory`) of the documents the reader may see,
    read once per ingest."""
    vis = as_visibility(audiences)

    def read() -> list[dict]:
        rules = []
        for doc in Document.objects.visible_to(vis).exclude(meta__mandatory=None).only("title", "meta"):
            for rule in doc.meta.get("mandatory") or []:
                rules.append({**rule, "document": doc.title, "document_id": doc.id})
        return rules

    return index_cached(("mandatory", vis), read)


def section_chunk(document_id: int, heading: str):
    """The first chunk of the document's section whose path ends with `heading` (a mandatory
    clause's own section), with its document; None when there is none."""
    from ..models import Chunk

    return Chunk.objects.filter(document_id=document_id, section_path__endswith=heading).select_related("document").first()


def section_snapshot(document_id: int, section_path: str) -> SectionSnapshot:
    return index_cached(("section", document_id, section_path), lambda: _build_snapshot(document_id, section_path))


def cosines(vectors: np.ndarray, qvec) -> np.ndarray:
    """Cosine similarity of each row with the question (stored vectors are unit length; the
    norms are divided out anyway, as pgvector's <=> does)."""
    if not len(vectors):
        return np.zeros(0)
    q = np.asarray(qvec, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1) * (np.linalg.norm(q) or 1.0)
    norms[norms == 0] = 1.0
    return (vectors @ q) / norms


def section_units(hit: Hit, qvec=None) -> list[SectionUnit]:
    """The whole section the hit belongs to (every chunk of it, overlaps removed), unit by unit
    in document order, each scored against the question vector with its own stored vector."""
    snap = section_snapshot(hit.document_id, hit.section_path)
    sims = cosines(snap.unit_vectors, qvec) if qvec is not None else None
    return [SectionUnit(kind, text, block, float(sims[i]) if sims is not None and snap.has_vector[i] else 0.0)
            for i, (kind, text, block) in enumerate(snap.units)]
