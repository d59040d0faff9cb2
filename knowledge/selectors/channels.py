"""The five retrieval channels, each one ranking of chunk ids: vector (pgvector HNSW over chunk vectors),
sentence and alias (the best sentence or question alias of a chunk), lexical and gram (Okapi BM25 over
jieba words and character bigrams, inside PostgreSQL). Query terms reach SQL only as bound parameters;
visibility is one clause (`_VISIBLE`) in every channel."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from django.db import connection

from ..models import IndexMeta
from .index import as_visibility

BM25_K1 = 1.5


BM25_B = 0.75


BM25_EPSILON = 0.25


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
    scope: tuple[str, ...] = ()  # the stores or cities its document is limited to ('store:3', 'city:深圳'); () for every store

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
    chunk_id, doc_id, title, path, section_path, text, audience, version, page, scope = row[:_N_HIT_COLUMNS]
    return Hit(chunk_id, doc_id, title, path, section_path, text, audience, version, page, scope=tuple(scope or ()))


_HIT_COLUMNS = "c.id, d.id, d.title, d.path, c.section_path, c.text, c.audience, c.version, c.page, c.scope"


_N_HIT_COLUMNS = 10


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
              f"WHERE s.kind = '{kind}' AND " + _VISIBLE.format(t="s") + " ORDER BY s.embedding <=> %(q)s::vector LIMIT %(limit)s")
       for kind in PER_CHUNK},
}


# The walk's candidate list (hnsw.ef_search), which is also the most rows an HNSW scan returns:
# `limit` rows per index, at least 40. A sentence or alias walk returns rows, not chunks, so one
# chunk's several sentences leave its channel fewer than `limit` chunks. Fetching twice the rows
# (ef_search 80) cost 5.5 ms more at 100k chunks (14.5 → 9 ms for the three walks) and moved no
# corpus's tuning R@1 by more than 0.004 (mean −0.0003 over six): fusion reads ranks, and at
# RRF k = 3 the 40th rank adds a tenth of what the first does.
MIN_EF_SEARCH = 40


def _nearest_rows(qvec, audiences, limit: int, kinds: tuple[str, ...]) -> dict[str, list[tuple]]:
    """(chunk_id, cosine, sentence text) rows per kind, best first (ties by chunk id, as before)."""
    _set_ef_search(max(MIN_EF_SEARCH, limit))
    sql = " UNION ALL ".join(f"({_NEAREST_SQL[kind]})" for kind in kinds)
    params = {"q": _vector_literal(qvec), **as_visibility(audiences).params(), "limit": limit}
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
# (df ≤ max(MIN_RARE_DF, 1% of N); failing any, the least frequent term alone), the best
# max(CANDIDATE_POOL, POOL_PER_RESULT × wanted) kept. Then each candidate is scored
# exactly with every query term (Okapi BM25 as rank_bm25 computes it). Very common words
# (low idf) can't lift a chunk with none of the selective terms into the top results, and
# skipping their posting lists keeps the channel to milliseconds at 100k chunks. On a corpus
# the size of ours every term is selective and the ranking is exact.
RARE_DF_FRACTION = 0.01


MIN_RARE_DF = 50


CANDIDATE_POOL = 50


# Candidates rescored per result wanted. Three cost 1.3 ms more than two for words and bigrams at
# 100k chunks, and gave every evaluation corpus the same figures (at their size every term is selective).
POOL_PER_RESULT = 2


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
        "pool": max(CANDIDATE_POOL, limit * POOL_PER_RESULT), **as_visibility(audiences).params(),
    }
    return _fetch_prepared(BM25_SQL.format(table=table, tf=_TF, visible=_VISIBLE.format(t="r")), params)


def lexical_channel(terms: list[str], meta: IndexMeta, audiences, limit: int, *, channel: str = "lexical") -> list[Hit]:
    """Okapi BM25 over jieba words (`lexical`) or character bigrams (`gram`)."""
    if not terms:
        return []
    df = document_frequencies(terms if channel == "lexical" else [], terms if channel == "gram" else [])[channel]
    return _filled({channel: _bm25_rows(terms, df, meta, audiences, limit, channel)}, limit)[channel]
