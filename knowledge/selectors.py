"""Hybrid retrieval: pgvector HNSW (cosine) + BM25 computed inside PostgreSQL, fused by
weighted reciprocal rank fusion, then a light rerank.

Both channels read committed rows, so every web and worker process sees an ingest the
moment it commits. Visibility is enforced here: manager-only documents never come back
for a staff user. Query terms reach SQL only as bound parameters.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

from django.conf import settings
from django.db import connection
from django.utils.module_loading import import_string

from .embedders import Embedder, get_embedder
from .models import Document, IndexMeta
from .text import query_terms, tokenize

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
    score: float = 0.0
    vector_rank: int | None = None
    vector_score: float | None = None
    lexical_rank: int | None = None
    lexical_score: float | None = None

    @property
    def heading(self) -> str:
        return self.section_path.split(" > ")[-1]

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class SearchResult:
    query: str
    hits: list[Hit]
    terms: list[str]
    timings_ms: dict = field(default_factory=dict)
    vector_ranking: list[Hit] = field(default_factory=list)
    lexical_ranking: list[Hit] = field(default_factory=list)

    @property
    def top(self) -> Hit | None:
        return self.hits[0] if self.hits else None


def visible_audiences(user) -> list[str]:
    """Holders of knowledge.view_manager_document (managers, head office, superusers) see
    manager-only documents; everyone else sees staff ones.
    `None` is an operator at the command line and sees everything."""
    if user is None:
        return list(Document.Audience.values)
    return ["staff", "manager"] if user.has_perm("knowledge.view_manager_document") else ["staff"]


def index_meta() -> IndexMeta:
    meta = IndexMeta.objects.order_by("pk").first()
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


def _row_hit(row) -> Hit:
    chunk_id, doc_id, title, path, section_path, text, audience = row[:7]
    return Hit(chunk_id, doc_id, title, path, section_path, text, audience)


_HIT_COLUMNS = "c.id, d.id, d.title, d.path, c.section_path, c.text, c.audience"


def _ranked(rows, channel: str) -> list[Hit]:
    """Rows of (_HIT_COLUMNS…, score) in rank order → hits carrying that channel's rank and score."""
    hits = []
    for rank, row in enumerate(rows, start=1):
        hit = _row_hit(row)
        setattr(hit, f"{channel}_rank", rank)
        setattr(hit, f"{channel}_score", float(row[7]))
        hits.append(hit)
    return hits


def vector_channel(qvec, audiences: list[str], limit: int) -> list[Hit]:
    literal = _vector_literal(qvec)
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT {_HIT_COLUMNS}, 1 - (c.embedding <=> %s::vector) AS sim FROM knowledge_chunk c "
            "JOIN knowledge_document d ON d.id = c.document_id WHERE c.audience = ANY(%s) "
            "ORDER BY c.embedding <=> %s::vector LIMIT %s",
            [literal, audiences, literal, limit],
        )
        return _ranked(cur.fetchall(), "vector")


# Two phases, as search engines do. Candidates: chunks scored on the query's selective terms
# (df ≤ max(MIN_RARE_DF, 1% of N); failing any, the two least frequent terms), best CANDIDATE_POOL kept. Then each candidate is scored
# exactly with every query term (Okapi BM25 as rank_bm25 computes it). Very common words
# (low idf) can't lift a chunk with none of the selective terms into the top results, and
# skipping their posting lists keeps the channel to milliseconds at 100k chunks. On a corpus
# the size of ours every term is selective and the ranking is exact.
RARE_DF_FRACTION = 0.01
MIN_RARE_DF = 50
CANDIDATE_POOL = 100
_TF = "t.tf * (%(k1)s::float8 + 1) / (t.tf + %(k1)s::float8 * (1 - %(b)s::float8 + %(b)s::float8 * t.n_terms / %(avgdl)s::float8))"

BM25_SQL = f"""
WITH w AS (SELECT * FROM unnest(%(w_terms)s::text[], %(w_idf)s::float8[]) AS w(term, idf)),
partial AS (
    SELECT t.chunk_id, SUM(w.idf * {_TF}) AS score
    FROM w JOIN knowledge_term t ON t.term = w.term
    WHERE w.term = ANY(%(cand_terms)s)
    GROUP BY t.chunk_id ORDER BY score DESC, t.chunk_id LIMIT %(pool)s
),
scored AS (
    SELECT p.chunk_id, SUM(w.idf * {_TF}) AS score
    FROM partial p CROSS JOIN w
    JOIN LATERAL (SELECT tf, n_terms FROM knowledge_term t WHERE t.chunk_id = p.chunk_id AND t.term = w.term LIMIT 1) t ON true
    GROUP BY p.chunk_id
)
SELECT {{columns}}, s.score FROM scored s
JOIN knowledge_chunk c ON c.id = s.chunk_id JOIN knowledge_document d ON d.id = c.document_id
WHERE c.audience = ANY(%(audiences)s)
ORDER BY s.score DESC, c.id
LIMIT %(limit)s
"""


def bm25_scores(terms: list[str], meta: IndexMeta, audiences: list[str], limit: int) -> list[tuple[int, float]]:
    """(chunk_id, Okapi BM25 score) over the whole corpus's statistics, best first."""
    return [(h.chunk_id, h.lexical_score) for h in lexical_channel(terms, meta, audiences, limit)]


def lexical_channel(terms: list[str], meta: IndexMeta, audiences: list[str], limit: int) -> list[Hit]:
    if not terms:
        return []
    with connection.cursor() as cur:
        cur.execute("SELECT term, df FROM knowledge_termstat WHERE term = ANY(%s)", [list(set(terms))])
        df = dict(cur.fetchall())
    if not df:
        return []
    n = float(meta.n_chunks)
    idf = {}
    for term, d in df.items():
        raw = math.log((n - d + 0.5) / (d + 0.5))
        idf[term] = raw if raw >= 0 else BM25_EPSILON * meta.avg_idf
    max_df = max(MIN_RARE_DF, int(n * RARE_DF_FRACTION))
    rare = [t for t in df if df[t] <= max_df] or sorted(df, key=df.get)[:2]
    weighted = [t for t in terms if t in idf]  # duplicates kept: each query occurrence counts
    params = {
        "w_terms": weighted, "w_idf": [idf[t] for t in weighted], "cand_terms": rare,
        "avgdl": float(meta.avg_terms or 1.0), "k1": BM25_K1, "b": BM25_B, "audiences": audiences, "limit": limit,
        "pool": max(CANDIDATE_POOL, limit * 5),
    }
    with connection.cursor() as cur:
        cur.execute(BM25_SQL.format(columns=_HIT_COLUMNS), params)
        return _ranked(cur.fetchall(), "lexical")


def rrf_fuse(rankings: dict[str, list[Hit]], weights: dict[str, float], k: int) -> list[Hit]:
    """Weighted reciprocal rank fusion: score = Σ w_c / (k + rank_c). Ranks only, so the
    unbounded BM25 scale and the bounded cosine scale never have to be compared."""
    merged: dict[int, Hit] = {}
    for channel, hits in rankings.items():
        w = weights.get(channel, 1.0)
        for rank, hit in enumerate(hits, start=1):
            target = merged.setdefault(hit.chunk_id, hit)
            if target is not hit and getattr(hit, f"{channel}_score", None) is not None:
                setattr(target, f"{channel}_score", getattr(hit, f"{channel}_score"))
            if hasattr(target, f"{channel}_rank"):
                setattr(target, f"{channel}_rank", rank)
            target.score += w / (k + rank)
    return sorted(merged.values(), key=lambda h: (-h.score, h.chunk_id))


def title_boost_rerank(query: str, hits: list[Hit], terms: list[str] | None = None) -> list[Hit]:
    """Boost hits whose section headings contain query terms (headings are human labels).
    Swap for a cross-encoder by pointing SM_RERANKER at a callable with this signature."""
    terms = set(terms if terms is not None else tokenize(query))
    if not terms:
        return hits
    boost = settings.SM_TITLE_BOOST
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


def search(query: str, *, user=None, audiences: list[str] | None = None, k: int = 5, candidates: int | None = None,
           embedder: Embedder | None = None, weights: dict[str, float] | None = None) -> SearchResult:
    """Hybrid search. `user` decides visibility unless `audiences` is given."""
    query = (query or "").strip()
    embedder = embedder or get_embedder()
    candidates = candidates or settings.SM_RETRIEVAL_CANDIDATES
    audiences = audiences or visible_audiences(user)
    timings = {}
    meta = index_meta()

    t = time.perf_counter()
    terms = query_terms(query)
    qvec = embedder.embed_query(expanded_query(query, terms))
    timings["embed_query"] = (time.perf_counter() - t) * 1000
    check_signature(meta, embedder, len(qvec))

    t = time.perf_counter()
    vector_hits = vector_channel(qvec, audiences, candidates)
    timings["vector"] = (time.perf_counter() - t) * 1000

    t = time.perf_counter()
    lexical_hits = lexical_channel(terms, meta, audiences, candidates)
    timings["lexical"] = (time.perf_counter() - t) * 1000

    t = time.perf_counter()
    weights = weights or {"vector": settings.SM_RRF_VECTOR_WEIGHT, "lexical": settings.SM_RRF_LEXICAL_WEIGHT}
    import copy

    fused = rrf_fuse({"vector": copy.deepcopy(vector_hits), "lexical": copy.deepcopy(lexical_hits)}, weights, settings.SM_RRF_K)
    reranker = import_string(settings.SM_RERANKER)
    fused = reranker(query, fused, terms)
    timings["fusion"] = (time.perf_counter() - t) * 1000
    timings["retrieval"] = timings["vector"] + timings["lexical"] + timings["fusion"]
    return SearchResult(query, fused[:k], terms, timings, vector_hits, lexical_hits)


def nearest_section_titles(query: str, *, user=None, n: int = 2, exclude: set[str] | None = None) -> list[str]:
    """Headings of the sections closest to `query` by embedding (used to rewrite a query
    into the corpus's own words when no LLM is configured)."""
    embedder = get_embedder()
    meta = index_meta()
    qvec = embedder.embed_query(query)
    check_signature(meta, embedder, len(qvec))
    titles: list[str] = []
    for hit in vector_channel(qvec, visible_audiences(user), 20):
        heading = hit.heading
        if heading not in titles and heading not in (exclude or set()):
            titles.append(heading)
        if len(titles) >= n:
            break
    return titles


def documents_visible(user) -> list[Document]:
    return list(Document.objects.filter(audience__in=visible_audiences(user)).order_by("path"))
