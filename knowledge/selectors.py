"""Hybrid retrieval: five channels fused by weighted reciprocal rank fusion, then a light rerank.

- vector: pgvector HNSW (cosine) over chunk vectors;
- sentence: the best single sentence / list item of each chunk (its own vector);
- alias: the best of the section's question aliases (常见问法), embedded as questions;
- lexical: Okapi BM25 over jieba words, computed inside PostgreSQL;
- gram: Okapi BM25 over character bigrams (segmentation errors can't hide a match).

The fusion parameters (channel weights, RRF k, candidates per channel, heading boost) come
from `eval tune-fusion` on the tuning set, stored in the index metadata; settings otherwise.

Both channels read committed rows, so every web and worker process sees an ingest the
moment it commits. Visibility is enforced here: manager-only documents never come back
for a staff user. Query terms reach SQL only as bound parameters.
"""
from __future__ import annotations

import contextvars
import copy
import json
import math
import re
import threading
import time
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import connection
from django.utils.module_loading import import_string

from core.memo import remembered
from core.pools import can_share_work, submit, thread_pool

from .embedders import Embedder, get_embedder
from .models import Document, IndexMeta
from .text import grams, query_terms, tokenize

BM25_K1 = 1.5
BM25_B = 0.75
BM25_EPSILON = 0.25


class IndexNotReady(RuntimeError):
    """No index yet, or it was built with another embedder: run `manage.py ingest`."""


@dataclass
class Hit:
    chunk_id: int
    document_id: int
    document: str
    path: str
    section_path: str
    text: str
    audience: str
    version: int = 1
    page: int | None = None
    score: float = 0.0
    vector_rank: int | None = None
    vector_score: float | None = None
    lexical_rank: int | None = None
    lexical_score: float | None = None
    sentence_rank: int | None = None
    sentence_score: float | None = None
    sentence_text: str = ""
    alias_rank: int | None = None
    alias_score: float | None = None
    alias_text: str = ""
    taught: bool = False  # a question a manager linked to this section (learning loop)
    gram_rank: int | None = None
    gram_score: float | None = None

    @property
    def heading(self) -> str:
        return self.section_path.split(" > ")[-1]

    def as_dict(self) -> dict:
        return asdict(self)


CHANNELS = ("vector", "sentence", "alias", "lexical", "gram")


@dataclass
class SearchResult:
    query: str
    hits: list[Hit]
    terms: list[str]
    timings_ms: dict = field(default_factory=dict)
    rankings: dict[str, list[Hit]] = field(default_factory=dict)
    qvec: object = None

    @property
    def vector_ranking(self) -> list[Hit]:
        return self.rankings.get("vector", [])

    @property
    def lexical_ranking(self) -> list[Hit]:
        return self.rankings.get("lexical", [])

    @property
    def top(self) -> Hit | None:
        return self.hits[0] if self.hits else None


@dataclass(frozen=True)
class Visibility:
    """Who is reading: the audiences they may see, and the scope tokens of their stores
    ('store:3', 'city:深圳'; None: every document whatever its scope). Every channel filters by it
    inside its query, before any candidate is cut."""

    audiences: tuple[str, ...]
    scope: tuple[str, ...] | None

    @classmethod
    def everything(cls) -> Visibility:
        """An operator at the command line, an evaluation: every document."""
        return cls(tuple(Document.Audience.values), None)

    def params(self) -> dict:
        """The named parameters of _VISIBLE."""
        return {"audiences": list(self.audiences), "scope_all": self.scope is None, "scope": list(self.scope or ())}


def visibility_for(user) -> Visibility:
    """A user's view: their role's audiences and their stores' scope (head office: every store).
    No user fails closed: staff documents that reach every store, nothing scoped."""
    if user is None:
        return Visibility(("staff",), ())
    from core.scoping import ALL, store_ids_for
    from ops.models import Store

    audiences = tuple(visible_audiences(user))
    ids = store_ids_for(user, "ops.view_store")
    if ids is ALL:
        return Visibility(audiences, None)
    stores = Store.objects.filter(pk__in=ids).values_list("pk", "city")
    return Visibility(audiences, tuple([f"store:{pk}" for pk, _ in stores] + sorted({f"city:{city}" for _, city in stores})))


def as_visibility(viewer) -> Visibility:
    """A Visibility, a user, None (fails closed) or a list of audiences (an operator's search:
    those audiences, every scope)."""
    if isinstance(viewer, Visibility):
        return viewer
    if isinstance(viewer, (list, tuple)):
        return Visibility(tuple(viewer), None)
    return visibility_for(viewer)


def visible_audiences(user) -> list[str]:
    """Holders of knowledge.view_manager_document (managers, head office, superusers) see
    manager-only documents; everyone else sees staff ones.
    `None` is an operator at the command line and sees everything."""
    if user is None:
        return list(Document.Audience.values)
    return ["staff", "manager"] if user.has_perm("knowledge.view_manager_document") else ["staff"]


_INDEX_MEMO: contextvars.ContextVar[dict | None] = contextvars.ContextVar("index_memo", default=None)


@contextmanager
def index_read_once():
    """Within this block (one question, its guard threads included when they run in a copy of
    this context), the index metadata row is read once: search() in every round, the judge,
    and the per-index caches' version checks all see that one read."""
    token = _INDEX_MEMO.set({})
    try:
        yield
    finally:
        _INDEX_MEMO.reset(token)


def within_one_read():
    """index_read_once() unless the caller already holds one (a chat question holds it for all
    its rounds): a search reads the index metadata once, not again in the rerank and the caches."""
    return index_read_once() if _INDEX_MEMO.get() is None else nullcontext()


def current_index() -> IndexMeta | None:
    """The index metadata row (None before the first ingest); read once per question inside
    `index_read_once()`, read afresh outside it."""
    memo = _INDEX_MEMO.get()
    if memo is None:
        return IndexMeta.objects.order_by("pk").first()
    if "meta" not in memo:
        memo["meta"] = IndexMeta.objects.order_by("pk").first()
    return memo["meta"]


def read_once(key, read):
    """`read()`, remembered under `key` for the rest of the question inside `index_read_once()`
    (the judge's corpus statistics for the same words, round after round)."""
    return remembered(_INDEX_MEMO, key, read)


def index_meta() -> IndexMeta:
    meta = current_index()
    if meta is None or not meta.n_chunks:
        raise IndexNotReady("知识库索引还没有建立，请先运行 python manage.py ingest。")
    return meta


def check_signature(meta: IndexMeta, embedder: Embedder, dimension: int) -> None:
    if (meta.backend, meta.model) != (embedder.backend, embedder.model) or meta.dimension != dimension:
        raise IndexNotReady(
            f"索引是用 {meta.signature} 建的，当前嵌入器是 {embedder.backend}:{embedder.model}:{dimension}；"
            "请运行 python manage.py ingest 重建索引。"
        )


def _vector_literal(vec) -> str:
    return "[" + ",".join(f"{float(x):.6f}" for x in vec) + "]"


def _fetch_prepared(sql: str, params) -> list[tuple]:
    """Run one of the retrieval queries as a server-side prepared statement. They are the same
    text on every question, and at 100k chunks planning one took as long as running it
    (1–2.5 ms each, six per question); prepared, PostgreSQL plans each once per connection."""
    import psycopg

    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cur:
        cur.execute(sql, params, prepare=True)
        return cur.fetchall()


def _set_ef_search(value: int) -> None:
    """`SET hnsw.ef_search` when this connection's value differs (a round trip saved on most
    searches). Remembered only in autocommit outside transactions (a rollback undoes a SET made
    inside one), and per raw connection object (a reconnect sets it again). Assumes one raw
    connection is one PostgreSQL session: behind a transaction-mode pooler (pgbouncer) it is not."""
    connection.ensure_connection()
    raw = connection.connection
    settled = connection.get_autocommit() and not connection.in_atomic_block
    known = getattr(connection, "_sm_ef_search", None)  # (raw connection, value): the object, so a new one never matches
    if settled and known is not None and known[0] is raw and known[1] == value:
        return
    with connection.cursor() as cur:
        cur.execute("SET hnsw.ef_search = %s", [value])
    connection._sm_ef_search = (raw, value) if settled else None


def _row_hit(row) -> Hit:
    chunk_id, doc_id, title, path, section_path, text, audience, version, page = row[:_N_HIT_COLUMNS]
    return Hit(chunk_id, doc_id, title, path, section_path, text, audience, version, page)


_HIT_COLUMNS = "c.id, d.id, d.title, d.path, c.section_path, c.text, c.audience, c.version, c.page"
_N_HIT_COLUMNS = 9
# Who may read a row: its audience, and its scope (empty: every store) against the reader's
# stores; named params Visibility.params() (audiences, every-scope flag, the reader's scope tokens).
_VISIBLE = "{t}.audience = ANY(%(audiences)s) AND (%(scope_all)s OR {t}.scope = '{{}}' OR {t}.scope && %(scope)s::varchar[])"


def _hit_columns(chunk_ids) -> dict[int, tuple]:
    """Each chunk's hit columns (document, heading, text …), read once for every channel's
    candidates together: the channel queries return chunk ids and scores only, so a chunk that
    three channels find is read once, not joined to its document by each of them."""
    if not chunk_ids:
        return {}
    rows = _fetch_prepared(f"SELECT {_HIT_COLUMNS} FROM knowledge_chunk c JOIN knowledge_document d ON d.id = c.document_id "
                           "WHERE c.id = ANY(%s)", [sorted(set(chunk_ids))])
    return {row[0]: row for row in rows}


# Sentences and question aliases: several rows of one chunk can come back, the best per chunk is kept.
PER_CHUNK = ("sentence", "alias")


def _as_hits(channel: str, rows, columns: dict[int, tuple], limit: int | None = None) -> list[Hit]:
    """A channel's (chunk_id, score, matched text) rows, best first → ranked hits; for sentences
    and aliases one per chunk, at most `limit` chunks."""
    hits, seen = [], set()
    per_chunk = channel in PER_CHUNK
    for chunk_id, score_, text in rows:
        if chunk_id not in columns or (per_chunk and (chunk_id in seen or len(hits) >= limit)):
            continue
        seen.add(chunk_id)
        hit = _row_hit(columns[chunk_id])
        setattr(hit, f"{channel}_rank", len(hits) + 1)
        setattr(hit, f"{channel}_score", float(score_))
        if per_chunk:
            setattr(hit, f"{channel}_text", text)
        hits.append(hit)
    return hits


def _filled(rows: dict[str, list], limit: int) -> dict[str, list[Hit]]:
    columns = _hit_columns([r[0] for channel_rows in rows.values() for r in channel_rows])
    return {channel: _as_hits(channel, channel_rows, columns, limit) for channel, channel_rows in rows.items()}


# The nearest chunks (`vector`), question aliases and sentences, each through its own HNSW index
# (a partial one per sentence kind: the literal kind in the WHERE clause is what lets the planner
# use it), in one statement: one round trip and one query vector for the three walks.
_NEAREST_SQL = {
    "vector": ("SELECT 'vector' AS channel, c.id, 1 - (c.embedding <=> %(q)s::vector) AS sim, NULL::text AS text "
               "FROM knowledge_chunk c WHERE " + _VISIBLE.format(t="c") + " ORDER BY c.embedding <=> %(q)s::vector LIMIT %(limit)s"),
    **{kind: (f"SELECT '{kind}', s.chunk_id, 1 - (s.embedding <=> %(q)s::vector), s.text FROM knowledge_sentence s "
              f"WHERE s.kind = '{kind}' AND " + _VISIBLE.format(t="s") + " ORDER BY s.embedding <=> %(q)s::vector LIMIT %(rows)s")
       for kind in PER_CHUNK},
}
ROWS_PER_CHUNK = 2  # sentences or aliases fetched per wanted chunk (several of one chunk come back)


def _nearest_rows(qvec, audiences, limit: int, kinds: tuple[str, ...]) -> dict[str, list[tuple]]:
    """(chunk_id, cosine, sentence text) rows per kind, best first (ties by chunk id, as before)."""
    _set_ef_search(max(40, limit * 2, limit * ROWS_PER_CHUNK))
    sql = " UNION ALL ".join(f"({_NEAREST_SQL[kind]})" for kind in kinds)
    params = {"q": _vector_literal(qvec), **as_visibility(audiences).params(), "limit": limit, "rows": limit * ROWS_PER_CHUNK}
    out: dict[str, list[tuple]] = {kind: [] for kind in kinds}
    for channel, chunk_id, sim, text in _fetch_prepared(sql, params):
        out[channel].append((chunk_id, sim, text))
    for kind in kinds:
        if kind in PER_CHUNK:  # the index's order, made exact where two rows tie
            out[kind].sort(key=lambda r: (-r[1], r[0]))
    return out


def vector_channel(qvec, audiences, limit: int) -> list[Hit]:
    return _filled(_nearest_rows(qvec, audiences, limit, ("vector",)), limit)["vector"]


def nearest_sentence_channel(qvec, audiences, limit: int, *, kind: str) -> list[Hit]:
    """Chunks ranked by their best sentence (`kind="sentence"`) or question alias (`"alias"`)."""
    if kind not in PER_CHUNK:  # formatted into the SQL: only these two
        raise ValueError(f"unknown sentence kind {kind!r}")
    return _filled(_nearest_rows(qvec, audiences, limit, (kind,)), limit)[kind]


# The best sentence of each given chunk, exactly (no index: a few hundred distances).
_BEST_SENTENCE_OF_SQL = """
SELECT DISTINCT ON (s.chunk_id) s.chunk_id, 1 - (s.embedding <=> %(q)s::vector) AS sim, s.text
FROM knowledge_sentence s
WHERE s.kind = 'sentence' AND s.chunk_id = ANY(%(ids)s) AND {visible}
ORDER BY s.chunk_id, s.embedding <=> %(q)s::vector
"""


def best_sentence_of(qvec, chunk_ids: list[int], audiences, limit: int) -> list[Hit]:
    """The sentence channel restricted to `chunk_ids`: each chunk scored by its best sentence."""
    if not chunk_ids:
        return []
    rows = sorted(_fetch_prepared(_BEST_SENTENCE_OF_SQL.format(visible=_VISIBLE.format(t="s")),
                                  {"q": _vector_literal(qvec), "ids": list(chunk_ids), **as_visibility(audiences).params()}),
                  key=lambda r: (-r[1], r[0]))
    return _filled({"sentence": rows}, limit)["sentence"]


# Two phases, as search engines do. Candidates: chunks scored on the query's selective terms
# (df ≤ max(MIN_RARE_DF, 1% of N); failing any, the least frequent term alone), best CANDIDATE_POOL kept. Then each candidate is scored
# exactly with every query term (Okapi BM25 as rank_bm25 computes it). Very common words
# (low idf) can't lift a chunk with none of the selective terms into the top results, and
# skipping their posting lists keeps the channel to milliseconds at 100k chunks. On a corpus
# the size of ours every term is selective and the ranking is exact.
RARE_DF_FRACTION = 0.01
MIN_RARE_DF = 50
CANDIDATE_POOL = 50
_TF = "t.tf * (%(k1)s::float8 + 1) / (t.tf + %(k1)s::float8 * (1 - %(b)s::float8 + %(b)s::float8 * t.n_terms / %(avgdl)s::float8))"

BM25_SQL = """
WITH w AS (SELECT * FROM unnest(%(w_terms)s::text[], %(w_idf)s::float8[]) AS w(term, idf)),
-- The chunks hidden from this reader, read from the small partial index of restricted chunks
-- (manager-only or scoped; chunk_restricted_idx): every other chunk is visible to everyone.
hidden AS MATERIALIZED (
    SELECT r.id FROM knowledge_chunk r
    WHERE (r.audience <> 'staff' OR r.scope <> '{{}}')
      AND NOT ({visible})
),
partial AS (
    -- Only chunks the reader may see compete for the pool: a pool cut first and filtered after
    -- left a staff member with fewer candidates wherever manager-only or scoped chunks led.
    SELECT t.chunk_id, SUM(w.idf * {tf}) AS score
    FROM w JOIN {table} t ON t.term = w.term
    WHERE w.term = ANY(%(cand_terms)s) AND t.chunk_id NOT IN (SELECT id FROM hidden)
    GROUP BY t.chunk_id ORDER BY score DESC, t.chunk_id LIMIT %(pool)s
),
scored AS (
    -- Each candidate's postings of the query's terms, looked up in the (chunk, term) index:
    -- a few probes per candidate, however long a common term's posting list is. (Written as
    -- a join, the planner — blind to the terms inside the CTE — read whole posting lists of
    -- words like 客人 and hashed them against the candidates: 90,000 rows at 100k chunks.)
    SELECT p.chunk_id, s.score FROM partial p CROSS JOIN LATERAL (
        SELECT SUM(w.idf * {tf}) AS score FROM {table} t JOIN w ON w.term = t.term
        WHERE t.chunk_id = p.chunk_id AND t.term = ANY(%(w_terms)s)
    ) s
)
-- The best `limit` candidates (their text and document are read once for every channel: _hit_columns).
SELECT s.chunk_id, s.score, NULL::text FROM scored s ORDER BY s.score DESC, s.chunk_id LIMIT %(limit)s
"""


def bm25_scores(terms: list[str], meta: IndexMeta, audiences, limit: int) -> list[tuple[int, float]]:
    """(chunk_id, Okapi BM25 score) over the whole corpus's statistics, best first."""
    return [(h.chunk_id, h.lexical_score) for h in lexical_channel(terms, meta, audiences, limit)]


_LEXICAL_TABLES = {"lexical": ("knowledge_term", "knowledge_termstat"), "gram": ("knowledge_gram", "knowledge_gramstat")}


def document_frequencies(words: list[str], bigrams: list[str]) -> dict[str, dict[str, int]]:
    """The corpus's document frequency of each query word and bigram, in one round trip."""
    rows = _fetch_prepared("SELECT 'lexical', term, df FROM knowledge_termstat WHERE term = ANY(%s) "
                           "UNION ALL SELECT 'gram', term, df FROM knowledge_gramstat WHERE term = ANY(%s)",
                           [sorted(set(words)), sorted(set(bigrams))])
    out: dict[str, dict[str, int]] = {"lexical": {}, "gram": {}}
    for channel, term, df in rows:
        out[channel][term] = df
    return out


def _bm25_rows(terms: list[str], df: dict[str, int], meta: IndexMeta, audiences, limit: int, channel: str) -> list[tuple]:
    """(chunk_id, Okapi BM25 score, None) rows, best first."""
    if not terms or not df:
        return []
    table, _ = _LEXICAL_TABLES[channel]
    avg_idf, avgdl = (meta.avg_idf, meta.avg_terms) if channel == "lexical" else (meta.avg_gram_idf, meta.avg_grams)
    n = float(meta.n_chunks)
    idf = {}
    for term, d in df.items():
        raw = math.log((n - d + 0.5) / (d + 0.5))
        idf[term] = raw if raw >= 0 else BM25_EPSILON * avg_idf
    max_df = max(MIN_RARE_DF, int(n * RARE_DF_FRACTION))
    rare = [t for t in df if df[t] <= max_df] or sorted(df, key=df.get)[:1]
    weighted = [t for t in terms if t in idf]  # duplicates kept: each query occurrence counts
    params = {
        "w_terms": weighted, "w_idf": [idf[t] for t in weighted], "cand_terms": rare,
        "avgdl": float(avgdl or 1.0), "k1": BM25_K1, "b": BM25_B, "limit": limit,
        "pool": max(CANDIDATE_POOL, limit * 3), **as_visibility(audiences).params(),
    }
    return _fetch_prepared(BM25_SQL.format(table=table, tf=_TF, visible=_VISIBLE.format(t="r")), params)


def lexical_channel(terms: list[str], meta: IndexMeta, audiences, limit: int, *, channel: str = "lexical") -> list[Hit]:
    """Okapi BM25 over jieba words (`lexical`) or character bigrams (`gram`)."""
    if not terms:
        return []
    df = document_frequencies(terms if channel == "lexical" else [], terms if channel == "gram" else [])[channel]
    return _filled({channel: _bm25_rows(terms, df, meta, audiences, limit, channel)}, limit)[channel]


def rrf_fuse(rankings: dict[str, list[Hit]], weights: dict[str, float], k: int) -> list[Hit]:
    """Weighted reciprocal rank fusion: score = Σ w_c / (k + rank_c). Ranks only, so the
    unbounded BM25 scale and the bounded cosine scale never have to be compared."""
    merged: dict[int, Hit] = {}
    for channel, hits in rankings.items():
        w = weights.get(channel, 1.0)
        if not w:
            continue
        for rank, hit in enumerate(hits, start=1):
            target = merged.get(hit.chunk_id)
            if target is None:
                target = merged[hit.chunk_id] = copy.copy(hit)
                target.score = 0.0
            for attr in (f"{channel}_rank", f"{channel}_score", f"{channel}_text"):
                if hasattr(hit, attr):
                    setattr(target, attr, getattr(hit, attr))
            setattr(target, f"{channel}_rank", rank)
            target.score += w / (k + rank)
    return sorted(merged.values(), key=lambda h: (-h.score, h.chunk_id))


def title_boost_rerank(query: str, hits: list[Hit], terms: list[str] | None = None, *, boost: float | None = None) -> list[Hit]:
    """Boost hits whose section headings contain query terms (headings are human labels).
    Swap for a cross-encoder by pointing SM_RERANKER at a callable with this signature."""
    terms = set(terms if terms is not None else tokenize(query))
    if not terms:
        return hits
    boost = default_fusion()["title_boost"] if boost is None else boost
    for hit in hits:
        headings = hit.section_path.split(" > ", 1)[-1]
        matched = sum(1 for t in terms if t in headings)
        if matched:
            hit.score *= 1 + boost * matched / len(terms)
    return sorted(hits, key=lambda h: (-h.score, h.chunk_id))


def expanded_query(query: str, terms: list[str]) -> str:
    """The question plus the corpus terms its colloquial words stand for, for embedding:
    「客人喝多了还要酒」 is embedded with 醉酒 appended (the original words stay first)."""
    extra = [t for t in terms if t not in set(tokenize(query))]
    return f"{query} {' '.join(extra)}" if extra else query


# What `eval tune-fusion --across` chose over every evaluation corpus, per embedder backend
# ("chosen"), and the choice each corpus's held-out figures are reported with ("loco": chosen
# without that corpus). Before any such choice: these constants.
FUSION_CHOICE_PATH = Path(__file__).with_name("fusion_e5.json")
_BUILT_IN_FUSION = {"weights": {"vector": 1.0, "sentence": 0.0, "alias": 1.0, "lexical": 1.0, "gram": 1.0},
                    "k": 3, "candidates": 20, "title_boost": 0.0}
_FUSION_SETTINGS = {"k": "SM_RRF_K", "candidates": "SM_RETRIEVAL_CANDIDATES", "title_boost": "SM_TITLE_BOOST"}
_WEIGHT_SETTINGS = {"vector": "SM_RRF_VECTOR_WEIGHT", "sentence": "SM_RRF_SENTENCE_WEIGHT", "alias": "SM_RRF_ALIAS_WEIGHT",
                    "lexical": "SM_RRF_LEXICAL_WEIGHT", "gram": "SM_RRF_GRAM_WEIGHT"}


@lru_cache(maxsize=4)
def shipped_fusion_choice(path: str = str(FUSION_CHOICE_PATH)) -> dict:
    p = Path(path)
    return json.loads(p.read_text("utf-8")) if p.exists() else {}


_FUSION_IN_FORCE: list[dict | None] = [None]


def use_fusion(params: dict | None) -> None:
    """This process fuses with `params` (an evaluation corpus's choice made without it) when the
    index stores no choice of its own."""
    _FUSION_IN_FORCE[0] = params


def default_fusion() -> dict:
    """The fusion when the index stores none: a setting given in the environment, else the
    choice shipped for the e5 embedder, else the built-in constants."""
    if _FUSION_IN_FORCE[0] is not None:
        return copy.deepcopy(_FUSION_IN_FORCE[0])
    shipped = shipped_fusion_choice().get("chosen") if settings.SM_EMBED_BACKEND == "e5" else None
    base = copy.deepcopy(shipped or _BUILT_IN_FUSION)
    for key, name in _FUSION_SETTINGS.items():
        if getattr(settings, name, None) is not None:
            base[key] = getattr(settings, name)
    for channel, name in _WEIGHT_SETTINGS.items():
        if getattr(settings, name, None) is not None:
            base["weights"][channel] = getattr(settings, name)
    return base


def fusion_params(meta: IndexMeta | None = None) -> dict:
    """What `eval tune-fusion` chose (stored with the index), over the settings' defaults."""
    params = default_fusion()
    stored = (meta.fusion if meta is not None else {}) or {}
    params.update({k: v for k, v in stored.items() if k in params})
    return params


def _vector_half(qvec, audiences, depth: int, sentence_index: bool) -> tuple[dict[str, list[tuple]], float]:
    t = time.perf_counter()
    rows = _nearest_rows(qvec, audiences, depth, ("vector", "alias", "sentence") if sentence_index else ("vector", "alias"))
    return rows, (time.perf_counter() - t) * 1000


def _lexical_half(query: str, terms: list[str], meta: IndexMeta, audiences, depth: int) -> tuple[dict[str, list[tuple]], float]:
    t = time.perf_counter()
    bigrams = grams(query)
    df = document_frequencies(terms, bigrams) if terms or bigrams else {"lexical": {}, "gram": {}}
    rows = {"lexical": _bm25_rows(terms, df["lexical"], meta, audiences, depth, "lexical"),
            "gram": _bm25_rows(bigrams, df["gram"], meta, audiences, depth, "gram")}
    return rows, (time.perf_counter() - t) * 1000


def channel_rankings(query: str, terms: list[str], qvec, meta: IndexMeta, audiences, depth: int,
                     timings: dict | None = None, *, sentence_index: bool = True) -> dict[str, list[Hit]]:
    """Every channel's own ranking, `depth` deep (fused afterwards, possibly many ways).

    The vector half (chunk, alias and sentence indexes) and the lexical half (word and bigram
    BM25) are independent queries of about equal cost. With SM_RETRIEVAL_THREADS they run side
    by side, the vector half on a retrieval thread with its own connection, so a question waits
    for the slower half, not the sum (`timings["channels"]`); that pays only with a core to
    spare for the second PostgreSQL backend. Inside a transaction both run here, one after the
    other: another connection could not see its uncommitted rows.

    `sentence_index=False` (search() when fusion gives sentences no weight): the sentence
    channel is left out here; search() scores the best sentence of each fused candidate
    afterwards (`best_sentence_of`), which is what the answerability score reads, without a
    walk through the largest vector index."""
    timings = timings if timings is not None else {}
    t = time.perf_counter()
    if settings.SM_RETRIEVAL_THREADS > 0 and can_share_work():
        vector_future = submit(thread_pool("retrieval", settings.SM_RETRIEVAL_THREADS), _vector_half, qvec, audiences, depth, sentence_index)
        lexical, timings["lexical"] = _lexical_half(query, terms, meta, audiences, depth)
        vector, timings["vector"] = vector_future.result()
    else:
        vector, timings["vector"] = _vector_half(qvec, audiences, depth, sentence_index)
        lexical, timings["lexical"] = _lexical_half(query, terms, meta, audiences, depth)
    rankings = _filled({**vector, **lexical}, depth)
    timings["channels"] = (time.perf_counter() - t) * 1000
    return rankings


def fuse(query: str, terms: list[str], rankings: dict[str, list[Hit]], params: dict) -> list[Hit]:
    n = int(params["candidates"])
    fused = rrf_fuse({c: hits[:n] for c, hits in rankings.items()}, params["weights"], int(params["k"]))
    reranker = import_string(settings.SM_RERANKER)
    return reranker(query, fused, terms, boost=params["title_boost"])


def pin_taught_alias(fused: list[Hit], alias_ranking: list[Hit]) -> list[Hit]:
    """The learning loop: a question a manager linked to a section in the admin, asked again
    verbatim or nearly (cosine ≥ SM_TAUGHT_ALIAS_MIN against the taught question), is answered
    by the section that person chose — its chunk goes first, marked `taught`. Fusion alone
    would let three channels that agree on a wrong section outvote the one that knows."""
    from .models import SectionAlias

    top = alias_ranking[0] if alias_ranking else None
    if top is None or (top.alias_score or 0.0) < settings.SM_TAUGHT_ALIAS_MIN:
        return fused
    if not SectionAlias.objects.filter(question=top.alias_text, section_path=top.section_path, source=SectionAlias.Source.ADMIN).exists():
        return fused
    pinned = next((h for h in fused if h.chunk_id == top.chunk_id), top)
    pinned.taught = True
    return [pinned, *(h for h in fused if h.chunk_id != top.chunk_id)]


def search(query: str, *, user=None, audiences=None, k: int = 5, candidates: int | None = None,
           embedder: Embedder | None = None, weights: dict[str, float] | None = None, qvec=None) -> SearchResult:
    """Hybrid search. `user` decides visibility unless `audiences` (a Visibility, or an operator's
    list of audiences) is given; neither fails closed. `qvec`: the query vector when the caller
    already has one (no model call); else the query is embedded."""
    with within_one_read():
        query = (query or "").strip()
        embedder = embedder or get_embedder()
        audiences = as_visibility(audiences if audiences is not None else user)
        timings = {}
        meta = index_meta()
        params = fusion_params(meta)
        if candidates:
            params["candidates"] = candidates
        if weights:
            params["weights"] = {**params["weights"], **weights}

        t = time.perf_counter()
        terms = query_terms(query)
        if qvec is None:
            qvec = embedder.embed_query(expanded_query(query, terms))
        timings["embed_query"] = (time.perf_counter() - t) * 1000
        check_signature(meta, embedder, len(qvec))

        fused, rankings = retrieve(query, terms, qvec, meta, audiences, params, timings)
        timings["retrieval"] = timings["channels"] + timings["fusion"]
        return SearchResult(query, fused[:k], terms, timings, rankings, qvec)


def retrieve(query: str, terms: list[str], qvec, meta: IndexMeta, audiences, params: dict,
             timings: dict) -> tuple[list[Hit], dict[str, list[Hit]]]:
    """Everything search() does once the question is embedded (bench retrieval times this very
    path): the channels, fusion, the taught-alias pin and, when fusion gives sentences no
    weight, the best sentence of each fused candidate (order unchanged; the answerability score
    reads it). Fills `timings` with vector, lexical and fusion milliseconds."""
    depth, sentence_index = int(params["candidates"]), params["weights"].get("sentence", 0) > 0
    rankings = channel_rankings(query, terms, qvec, meta, audiences, depth, timings, sentence_index=sentence_index)
    t = time.perf_counter()
    fused = pin_taught_alias(fuse(query, terms, rankings, params), rankings.get("alias", []))
    if not sentence_index:
        rankings["sentence"] = best_sentence_of(qvec, [h.chunk_id for h in fused[:depth]], audiences, depth)
    timings["fusion"] = (time.perf_counter() - t) * 1000
    return fused, rankings


def query_vector_with(qvec, texts: list[str], *, embedder: Embedder | None = None) -> np.ndarray:
    """`qvec` moved toward `texts` (short section titles): the question's vector plus the mean
    of theirs, unit length. Stands in for embedding 「title title question」 as one text: the
    titles are embedded once each and then come from the query cache, so a rewrite round
    needs no model call for the rewritten text."""
    embedder = embedder or get_embedder()
    v = np.asarray(qvec, dtype=np.float32) + np.mean([embedder.embed_query(t) for t in texts], axis=0)
    return v / (np.linalg.norm(v) or 1.0)


def nearest_section_titles(query: str, *, user=None, n: int = 2, exclude: set[str] | None = None, audiences=None) -> list[str]:
    """Headings of the sections closest to `query` by embedding (used to rewrite a query
    into the corpus's own words when no LLM is configured)."""
    embedder = get_embedder()
    meta = index_meta()
    qvec = embedder.embed_query(query)
    check_signature(meta, embedder, len(qvec))
    titles: list[str] = []
    for hit in vector_channel(qvec, as_visibility(audiences if audiences is not None else user), 20):
        heading = hit.heading
        if heading not in titles and heading not in (exclude or set()):
            titles.append(heading)
        if len(titles) >= n:
            break
    return titles


def documents_visible(user) -> list[Document]:
    return list(Document.objects.visible_to(user).order_by("path"))


def aliases_with_status(*, include_corpus: bool = False) -> list[dict]:
    """Question aliases with whether their section still exists (an orphan otherwise), for
    the admin and `export_aliases`. Ordered by document, section, question."""
    from django.utils import timezone

    from .models import Chunk, Document, SectionAlias

    aliases = SectionAlias.objects.select_related("created_by").order_by("document_path", "section_path", "id")
    if not include_corpus:
        aliases = aliases.filter(source=SectionAlias.Source.ADMIN)
    live = set(Chunk.objects.values_list("document__path", "section_path").distinct())
    titles = dict(Document.objects.values_list("path", "title"))
    return [{
        "id": a.pk, "document_path": a.document_path, "document_title": titles.get(a.document_path, a.document_path),
        "section_path": a.section_path, "question": a.question, "source": a.source,
        "orphan": (a.document_path, a.section_path) not in live,
        "who": a.created_by.username if a.created_by else "制度文档",
        "when": timezone.localtime(a.created_at).strftime("%Y-%m-%d"),
    } for a in aliases]


# --- what the answer is built from -----------------------------------------------------------


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


_SNAPSHOTS: dict = {}
_SNAPSHOT_VERSION: list = [None]
_SNAPSHOT_LOCK = threading.Lock()


def _index_version():
    """Changes with every ingest (the index metadata row is saved)."""
    if _INDEX_MEMO.get() is not None:  # the question's one read of the row
        meta = current_index()
        return (connection.settings_dict["NAME"], (meta.id, meta.updated_at, meta.n_chunks) if meta else None)
    with connection.cursor() as cur:
        cur.execute("SELECT id, updated_at, n_chunks FROM knowledge_indexmeta ORDER BY id LIMIT 1")
        return (connection.settings_dict["NAME"], cur.fetchone())


def _matrix(vectors: list, dim: int) -> np.ndarray:
    if not vectors:
        return np.zeros((0, dim), dtype=np.float32)
    return np.array([np.asarray(v, dtype=np.float32) for v in vectors], dtype=np.float32)


def _build_snapshot(document_id: int, section_path: str) -> SectionSnapshot:
    from .models import Chunk, Sentence, Term

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
    from .chunking import _blocks, split_sentences

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

    from .models import Chunk, Sentence, Term

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
    version = _index_version()
    with _SNAPSHOT_LOCK:
        current = _SNAPSHOT_VERSION[0] == version
        for key in keys:
            held = _SNAPSHOTS.get(("section_words", *key)) if current else None
            snap = _SNAPSHOTS.get(("section", *key)) if current else None
            if held is not None:
                out[key] = held
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
        with _SNAPSHOT_LOCK:  # kept until the next ingest, as index_cached() keeps what it builds
            if _SNAPSHOT_VERSION[0] != version:
                _SNAPSHOTS.clear()
                _SNAPSHOT_VERSION[0] = version
            _SNAPSHOTS.update({("section_words", *key): words for key, words in built.items()})
    for key in keys:
        out.setdefault(key, SectionWords("", frozenset()))
    return out


def index_cached(key, build):
    """`build()`'s value, kept by this process until the index changes (the next ingest).
    For what is derived from the corpus alone: section snapshots, the mandatory clauses."""
    version = _index_version()
    with _SNAPSHOT_LOCK:
        if _SNAPSHOT_VERSION[0] != version:
            _SNAPSHOTS.clear()
            _SNAPSHOT_VERSION[0] = version
        if key in _SNAPSHOTS:
            return _SNAPSHOTS[key]
    value = build()
    with _SNAPSHOT_LOCK:
        if _SNAPSHOT_VERSION[0] == version:
            _SNAPSHOTS[key] = value
    return value


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
        from .models import Chunk

        lines = (line for text in Chunk.objects.values_list("text", flat=True) for line in text.split("\n"))
        return tuple(line.upper() for line in lines if _PRICE.search(line))

    priced = index_cached(("priced_lines",), build)
    return any(w in line for line in priced for w in words)


def section_snapshot(document_id: int, section_path: str) -> SectionSnapshot:
    return index_cached(("section", document_id, section_path), lambda: _build_snapshot(document_id, section_path))


def _cosines(vectors: np.ndarray, qvec) -> np.ndarray:
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
    sims = _cosines(snap.unit_vectors, qvec) if qvec is not None else None
    return [SectionUnit(kind, text, block, float(sims[i]) if sims is not None and snap.has_vector[i] else 0.0)
            for i, (kind, text, block) in enumerate(snap.units)]


# --- documents, for the knowledge owner and for readers ---------------------------------------


def documents_for(user):
    """The documents `user` may read (audience and scope), and those they manage (drafts too)."""
    from .documents import managed_store_ids

    readable = Document.objects.visible_to(user).filter(current_version__isnull=False)
    ids = managed_store_ids(user) if user is not None else []
    if ids is None:  # head office: every document
        managed = Document.objects.filter(archived_at__isnull=True)
    elif ids:
        from ops.models import Store

        cities = set(Store.objects.filter(pk__in=ids).values_list("city", flat=True))
        tokens = [f"store:{i}" for i in ids] + [f"city:{c}" for c in cities]
        managed = Document.objects.filter(archived_at__isnull=True, scope__overlap=tokens).exclude(scope=[])
    else:
        managed = Document.objects.none()
    return (readable | managed).distinct().select_related("current_version").prefetch_related("scope_stores").order_by("title", "pk")


def _status_of(document: Document) -> str:
    if document.current_version is not None:
        return document.current_version.status
    latest = document.versions.order_by("-number").first()
    return latest.status if latest else "draft"


def document_summary(document: Document, user) -> dict:
    from .documents import may_manage

    return {
        "id": document.pk, "title": document.title, "status": _status_of(document),
        "version": document.current_version.number if document.current_version else None,
        "audience": document.audience, "cities": list(document.scope_cities or []),
        "stores": [s.code for s in document.scope_stores.all()], "source": document.source,
        "chunks": document.chunks.count(), "can_manage": bool(user is not None and may_manage(user, document)),
    }


def _version_summary(v) -> dict:
    return {"version": v.number, "status": v.status, "status_label": v.get_status_display(), "file": v.original_name, "kind": v.kind,
            "sections": sum(1 for s in v.sections if s.get("enabled", True)), "chunks": v.chunks, "progress": v.progress,
            "error": v.error, "uploaded_at": v.created_at, "published_at": v.published_at, "diff": v.diff}


def _readable_or_not_found(user, pk: int) -> Document:
    """The document, when the user may read or manage it; else "not found", exactly like one that
    does not exist, with a refusal on the audit log when it does (another store's document)."""
    from core.audit import audit_denial
    from core.errors import NotFound

    document = documents_for(user).filter(pk=pk).first()
    if document is None:
        other = Document.objects.filter(pk=pk, archived_at__isnull=True).first()
        if other is not None and user is not None and getattr(user, "is_authenticated", False):
            audit_denial(actor=user, attempt="document_read", reason="document outside the user's audience or stores", target=other)
        raise NotFound("没有这篇文档。")
    return document


def document_detail(pk: int, user) -> dict:
    """A document the user may read or manage (else not found, like one that does not exist)."""

    from .documents import may_manage

    document = _readable_or_not_found(user, pk)
    manages = may_manage(user, document)
    versions = list(document.versions.order_by("-number"))
    if not manages:
        versions = [v for v in versions if v.status in ("published", "superseded")]
    shown = versions[0] if manages and versions else document.current_version
    return {**document_summary(document, user), "versions": [_version_summary(v) for v in versions],
            "sections": [{"index": i, **s} for i, s in enumerate(shown.sections)] if shown else []}


def document_file_for(user, pk: int, number: int | None):
    """(version, bytes) of a document's original file, for someone who may read or manage it."""
    from core.errors import NotFound

    from .documents import may_manage

    document = _readable_or_not_found(user, pk)
    versions = document.versions.all()
    if not may_manage(user, document):
        versions = versions.filter(status__in=("published", "superseded"))
    version = versions.filter(number=number).first() if number else (document.current_version or versions.order_by("-number").first())
    if version is None or not hasattr(version, "file"):
        raise NotFound("没有这个版本的原文件。")
    return version, bytes(version.file.data)


def neighbour_sections(document_id: int, section_path: str) -> list[str]:
    """The section paths just before and after `section_path` in its document (reading order):
    what a reader of one section is likely to ask next."""
    from .models import Chunk

    def read():
        return tuple(dict.fromkeys(Chunk.objects.filter(document_id=document_id).order_by("ordinal").values_list("section_path", flat=True)))

    paths = list(index_cached(("section_order", document_id), read))  # read once per process and ingest
    if section_path not in paths:
        return []
    i = paths.index(section_path)
    return [p for p in (paths[i + 1] if i + 1 < len(paths) else None, paths[i - 1] if i > 0 else None) if p]
