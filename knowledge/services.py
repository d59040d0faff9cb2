"""Writes to the knowledge index: incremental ingestion of the corpus.

Unchanged documents (same content hash) are skipped; all changes of one run commit in one
transaction, so concurrent readers see the old index or the new one, never a mix. When the
embedder signature changes, everything is rebuilt and the embedding column is retyped to
the new dimension. Bulk loads create the HNSW index after the rows are in. No HTTP
endpoint calls this without an authenticated manager (admin action) or an operator (CLI).
"""
from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction

from core.audit import audit_record

from .chunking import parse_markdown
from .embedders import Embedder, get_embedder
from .models import Chunk, Document, IndexMeta, Term
from .text import term_counts

log = logging.getLogger(__name__)
HNSW_INDEX = "knowledge_chunk_embedding_hnsw"
VALID_DOC_TYPES = set(Document.DocType.values)
VALID_AUDIENCES = set(Document.Audience.values)


@dataclass
class IngestReport:
    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    chunks: int = 0
    seconds: float = 0.0
    rebuilt: bool = False
    warning: str = ""
    errors: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (
            f"ingest: {self.added} added, {self.changed} changed, {self.removed} removed, {self.unchanged} unchanged; "
            f"{self.chunks} chunks in index; {self.seconds:.2f} s" + (" (full rebuild)" if self.rebuilt else "")
        )


@dataclass
class _Prepared:
    path: str
    digest: str
    title: str
    meta: dict
    body: str
    drafts: list
    vectors: list


def current_meta() -> IndexMeta | None:
    return IndexMeta.objects.order_by("pk").first()


def _column_dimension() -> int | None:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'knowledge_chunk'::regclass AND attname = 'embedding'"
        )
        row = cur.fetchone()
    return row[0] if row and row[0] > 0 else None


def _drop_hnsw() -> None:
    with connection.cursor() as cur:
        cur.execute(f"DROP INDEX IF EXISTS {HNSW_INDEX}")


def _create_hnsw() -> None:
    with connection.cursor() as cur:
        cur.execute(
            f"CREATE INDEX IF NOT EXISTS {HNSW_INDEX} ON knowledge_chunk USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = 16, ef_construction = 64)"
        )


def _retype_embedding(dimension: int) -> None:
    with connection.cursor() as cur:
        cur.execute(f"ALTER TABLE knowledge_chunk ALTER COLUMN embedding TYPE vector({int(dimension)})")


def _doc_fields(rel: str, meta: dict, title: str) -> dict:
    doc_type = str(meta.get("doc_type", "sop"))
    audience = str(meta.get("audience", "staff"))
    if doc_type not in VALID_DOC_TYPES:
        raise ValueError(f"{rel}: doc_type {doc_type!r} is not one of {sorted(VALID_DOC_TYPES)}")
    if audience not in VALID_AUDIENCES:
        raise ValueError(f"{rel}: audience {audience!r} is not one of {sorted(VALID_AUDIENCES)}")
    updated = meta.get("updated")
    return {
        "title": title[:128],
        "doc_type": doc_type,
        "audience": audience,
        "version": str(meta.get("version", ""))[:32],
        "updated": updated if hasattr(updated, "year") else None,
    }


def _prepare(root: Path, file: Path, embedder: Embedder) -> _Prepared:
    raw = file.read_bytes()
    source = raw.decode("utf-8")
    parsed = parse_markdown(source, fallback_title=file.stem)
    vectors = embedder.embed_passages([d.embed_text for d in parsed.chunks]) if parsed.chunks else []
    meta = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in parsed.meta.items()}
    return _Prepared(str(file.relative_to(root)), hashlib.sha256(raw).hexdigest(), parsed.title, meta, parsed.body, parsed.chunks, list(vectors))


def _write_document(p: _Prepared, raw_meta: dict) -> int:
    fields = _doc_fields(p.path, raw_meta, p.title)
    doc, _ = Document.objects.update_or_create(
        path=p.path, defaults={**fields, "content_hash": p.digest, "body": p.body, "meta": p.meta}
    )
    doc.chunks.all().delete()
    chunks = Chunk.objects.bulk_create(
        [
            Chunk(document=doc, ordinal=d.ordinal, section_path=d.section_path[:512], text=d.text,
                  audience=doc.audience, embedding=v.tolist(), n_terms=sum(term_counts(d.embed_text).values()))
            for d, v in zip(p.drafts, p.vectors)
        ]
    )
    Term.objects.bulk_create(
        [Term(chunk=c, term=t, tf=n, n_terms=c.n_terms) for c, d in zip(chunks, p.drafts) for t, n in term_counts(d.embed_text).items()],
        batch_size=5000,
    )
    return len(chunks)


def refresh_index_stats(meta: IndexMeta) -> None:
    """Corpus statistics BM25 needs (N, average length, df per term, average idf), kept with the index."""
    with connection.cursor() as cur:
        cur.execute("SELECT COUNT(*), COALESCE(AVG(n_terms), 0) FROM knowledge_chunk")
        n, avg_terms = cur.fetchone()
        cur.execute("DELETE FROM knowledge_termstat")
        cur.execute("INSERT INTO knowledge_termstat (term, df) SELECT term, COUNT(*) FROM knowledge_term GROUP BY term")
        # rank_bm25's BM25Okapi floors negative idf at epsilon × the mean idf over the vocabulary.
        cur.execute("SELECT COALESCE(AVG(LN((%s - df + 0.5) / (df + 0.5))), 0) FROM knowledge_termstat", [n])
        avg_idf = cur.fetchone()[0]
        cur.execute("ANALYZE knowledge_termstat")
    meta.n_chunks, meta.avg_terms, meta.avg_idf = n, float(avg_terms), float(avg_idf)
    meta.save()


def corpus_ingest(
    *,
    path: Path | str | None = None,
    rebuild: bool = False,
    embedder: Embedder | None = None,
    progress: Callable[[str], None] | None = None,
    actor=None,
) -> IngestReport:
    """Bring the index in line with the Markdown files under `path` (default: the corpus)."""
    started = time.perf_counter()
    root = Path(path or settings.SM_CORPUS_DIR).resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"corpus folder not found: {root}")
    embedder = embedder or get_embedder()
    report = IngestReport()
    meta = current_meta()

    files = sorted(p for p in root.rglob("*.md") if p.is_file() and not p.name.startswith("."))
    known = {d.path: d for d in Document.objects.only("id", "path", "content_hash")}
    digests = {str(f.relative_to(root)): hashlib.sha256(f.read_bytes()).hexdigest() for f in files}

    # The signature of HTTP embedders includes a dimension only known after a first call.
    if embedder.dimension == 0:
        embedder.embed_passages(["dimension probe"])
    if meta and meta.signature != embedder.signature and (meta.n_chunks or Chunk.objects.exists()):
        report.warning = (
            f"!! embedder changed ({meta.signature} -> {embedder.signature}): rebuilding the whole index; "
            "vectors of different embedders are never mixed"
        )
        log.warning(report.warning)
        rebuild = True
    if _column_dimension() not in (None, embedder.dimension):
        rebuild = True
    report.rebuilt = rebuild or not known

    todo = [f for f in files if rebuild or known.get(str(f.relative_to(root))) is None
            or known[str(f.relative_to(root))].content_hash != digests[str(f.relative_to(root))]]
    removed_paths = [p for p in known if p not in digests]
    prepared: list[tuple[_Prepared, dict]] = []
    for f in todo:
        if progress:
            progress(str(f.relative_to(root)))
        prepared.append((_prepare(root, f, embedder), parse_markdown(f.read_text("utf-8")).meta))
    if progress:
        for _ in range(len(files) - len(todo)):
            progress("")

    with transaction.atomic():
        # Django's FKs are deferred; pending trigger events would block CREATE INDEX below.
        with connection.cursor() as cur:
            cur.execute("SET CONSTRAINTS ALL IMMEDIATE")
        # Lock the meta row: two ingests never interleave their writes.
        if meta:
            meta = IndexMeta.objects.select_for_update().get(pk=meta.pk)
        if rebuild:
            _drop_hnsw()
            with connection.cursor() as cur:
                cur.execute("TRUNCATE knowledge_term, knowledge_termstat, knowledge_chunk, knowledge_document CASCADE")
            _retype_embedding(embedder.dimension)
        elif _column_dimension() is None:
            _retype_embedding(embedder.dimension)
        for p, raw_meta in prepared:
            if rebuild or p.path not in known:
                report.added += 1
            else:
                report.changed += 1
            _write_document(p, raw_meta)
        if removed_paths and not rebuild:
            Document.objects.filter(path__in=removed_paths).delete()
            report.removed = len(removed_paths)
        report.unchanged = len(files) - len(todo)
        if meta is None:
            meta = IndexMeta(signature=embedder.signature, backend=embedder.backend, model=embedder.model, dimension=embedder.dimension)
        if meta.signature != embedder.signature:
            meta.refusal_threshold = meta.judge_threshold = None  # calibrated for another embedder
        meta.signature, meta.backend, meta.model, meta.dimension = embedder.signature, embedder.backend, embedder.model, embedder.dimension
        if prepared or report.removed or rebuild:
            refresh_index_stats(meta)
            _create_hnsw()
        else:
            meta.save()
        if actor is not None and (prepared or report.removed):
            _audit_reindex(actor, report)
    report.chunks = meta.n_chunks
    report.seconds = time.perf_counter() - started
    return report


def _audit_reindex(actor, report: IngestReport) -> None:
    """Record who reindexed (in the ingestion's transaction)."""
    audit_record(actor=actor, action="reindexed", target=None, after={
        "added": report.added, "changed": report.changed, "removed": report.removed, "chunks": report.chunks,
    })


def bm25_idf(n: int, df: int, avg_idf: float, epsilon: float = 0.25) -> float:
    """Okapi BM25 idf as rank_bm25.BM25Okapi computes it (negative idf floored)."""
    idf = math.log((n - df + 0.5) / (df + 0.5))
    return idf if idf >= 0 else epsilon * avg_idf
