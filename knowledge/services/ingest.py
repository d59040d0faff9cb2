"""Incremental ingestion of the corpus folder.

Unchanged documents (same content hash) are skipped; all changes of one run commit in one
transaction, so concurrent readers see the old index or the new one, never a mix. When the
embedder signature changes, everything is rebuilt and the embedding column is retyped to
the new dimension. Bulk loads create the HNSW index after the rows are in. No HTTP
endpoint calls this without an authenticated manager (admin action) or an operator (CLI)."""
from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import connection, transaction

from core.audit import audit_record
from core.models import AuditLog

from ..chunking import chunk_sections, sentence_units
from ..embedders import Embedder, get_embedder
from ..models import Chunk, Document, IndexMeta, Sentence
from ..questions import FORMS_VERSION, section_question_forms
from .publish import _prepare_version
from .schema import VECTOR_TABLES, _column_dimension, create_hnsw, drop_hnsw, retype_embedding
from .vectors import BUNDLED_VECTORS, _read_bundled, embed_cached, embedding_digest
from .writing import (
    _doc_fields,
    _prepare,
    _record_version,
    _scope_from_meta,
    _write_document,
    current_meta,
    refresh_index_stats,
    sections_markdown,
    write_scope,
)

log = logging.getLogger(__name__)


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


# What `ingest PATH` reads: every format an upload takes. The lists beside the bundled corpus
# (synonyms.txt, userdict.txt, uncovered.txt) are aids, not documents.
CORPUS_SUFFIXES = (".md", ".markdown", ".txt", ".docx", ".pdf", ".xlsx", ".csv", ".pptx", ".html", ".htm")


CORPUS_LISTS = ("synonyms.txt", "userdict.txt", "uncovered.txt")


def corpus_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in CORPUS_SUFFIXES
                  and not p.name.startswith(".") and p.name not in CORPUS_LISTS)


def _parse_corpus_file(root: Path, file: Path):
    """(title, front matter, parsed file, chunk drafts) of one file of a corpus folder."""
    from ..parsing import FileRejected, parse_file

    rel = str(file.relative_to(root))
    try:
        parsed = parse_file(file.name, file.read_bytes())
    except FileRejected as exc:
        raise ValueError(f"{rel}: {exc.message}") from None
    title = str(parsed.meta.get("title") or parsed.title or file.stem)
    return title, parsed.meta, parsed, chunk_sections(title, parsed.sections)


def _must_rebuild(meta: IndexMeta | None, embedder: Embedder, report: IngestReport) -> bool:
    """The whole index is written again when the embedder changed, a vector column has another
    dimension, or the index predates sentence vectors and aliases."""
    # The signature of HTTP embedders includes a dimension only known after a first call.
    if embedder.dimension == 0:
        embedder.embed_passages(["dimension probe"])
    rebuild = False
    if meta and meta.signature != embedder.signature and (meta.n_chunks or Chunk.objects.exists()):
        report.warning = (
            f"!! embedder changed ({meta.signature} -> {embedder.signature}): rebuilding the whole index; "
            "vectors of different embedders are never mixed"
        )
        log.warning(report.warning)
        rebuild = True
    if any(_column_dimension(table) not in (None, embedder.dimension) for table in VECTOR_TABLES):
        rebuild = True
    if Chunk.objects.exists() and not Sentence.objects.exists():
        # An index built before sentence vectors and aliases existed: every document needs them.
        rebuild = True
    return rebuild


def _reset_index(rebuild: bool, embedder: Embedder) -> None:
    if rebuild:
        drop_hnsw()
        with connection.cursor() as cur:
            # Documents, their versions and the aliases added in the admin are kept; the index is written again.
            cur.execute("TRUNCATE knowledge_term, knowledge_termstat, knowledge_gram, knowledge_gramstat, knowledge_sentence, "
                        "knowledge_chunk")
        retype_embedding(embedder.dimension)
    elif any(_column_dimension(table) is None for table in VECTOR_TABLES):
        retype_embedding(embedder.dimension)


def _write_corpus_documents(prepared: list, known: dict, rebuild: bool, report: IngestReport, actor) -> None:
    """Each prepared file into its document; a new or changed file is the published version n+1."""
    for p, parsed, raw in prepared:
        existing = known.get(p.path)
        new_content = existing is None or existing.content_hash != p.digest or not existing.current_version_id
        if existing is None or rebuild:
            report.added += 1  # a rebuild writes every document into the index anew
        elif existing.content_hash != p.digest:
            report.changed += 1
        else:
            report.unchanged += 1  # written again (a rebuild, new question forms): same content
        doc, _ = Document.objects.update_or_create(
            path=p.path, defaults={**p.fields, "content_hash": p.digest, "body": p.body, "meta": p.meta, "source": Document.Source.CORPUS,
                                   "archived_at": None})
        p.scope = write_scope(doc, *_scope_from_meta(p.meta))
        current = doc.current_version
        p.version = (current.number + 1 if current else 1) if new_content else current.number
        n = _write_document(p, doc)
        if new_content:
            _record_version(doc, kind=parsed.kind, name=p.path, raw=raw, digest=p.digest, title=p.title,
                            sections=[sec.as_dict() for sec in parsed.sections], warnings=parsed.warnings, meta=p.meta, actor=actor, chunks=n)


def _version_unversioned(root: Path, files: list[Path], todo: list[Path], known: dict, raws: dict, digests: dict, actor) -> None:
    """Documents indexed before versions existed: their file becomes version 1, nothing re-embedded."""
    for f in files:
        rel = str(f.relative_to(root))
        doc = known.get(rel)
        if doc is not None and not doc.current_version_id and f not in todo:
            title, front, parsed, _ = _parse_corpus_file(root, f)
            _record_version(doc, kind=parsed.kind, name=rel, raw=raws[rel], digest=digests[rel], title=title,
                            sections=[sec.as_dict() for sec in parsed.sections], warnings=parsed.warnings, meta=doc.meta, actor=actor,
                            chunks=doc.chunks.count())


def _meta_for(meta: IndexMeta | None, embedder: Embedder) -> IndexMeta:
    """The index metadata signed by this embedder (a new one's thresholds and fits start empty)."""
    if meta is None:
        meta = IndexMeta(signature=embedder.signature, backend=embedder.backend, model=embedder.model, dimension=embedder.dimension)
    if meta.signature != embedder.signature:
        meta.refusal_threshold = meta.judge_threshold = None  # calibrated for another embedder
        meta.fusion, meta.answerability = {}, {}
    meta.signature, meta.backend, meta.model, meta.dimension = embedder.signature, embedder.backend, embedder.model, embedder.dimension
    meta.forms_version = FORMS_VERSION
    return meta


def corpus_ingest(
    *,
    path: Path | str | None = None,
    rebuild: bool = False,
    embedder: Embedder | None = None,
    progress: Callable[[str], None] | None = None,
    actor=None,
) -> IngestReport:
    """Bring the index in line with the files under `path` (default: the corpus folder): every
    format an upload takes. A new or changed file becomes the published version n+1 of its
    document; documents uploaded in the admin are never touched by it. One transaction."""
    started = time.perf_counter()
    root = Path(path or settings.SM_CORPUS_DIR).resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"corpus folder not found: {root}")
    embedder = embedder or get_embedder()
    report = IngestReport()
    meta = current_meta()
    scan = _scan_corpus(root)
    rebuild = _must_rebuild(meta, embedder, report) or rebuild
    report.rebuilt = rebuild or not scan.known
    # Question forms written by an older template version: every document is prepared again.
    rewrite_forms = meta is not None and meta.forms_version != FORMS_VERSION
    todo = [f for f in scan.files if rebuild or rewrite_forms or scan.changed(f)]
    prepared = _prepare_corpus_files(root, scan, todo, embedder, progress)
    # Uploaded documents keep their published version through a rebuild: it is embedded again.
    uploads = _reembedded_uploads(embedder) if rebuild or rewrite_forms else []
    meta = _write_corpus(root, scan, todo, prepared, uploads, meta, embedder, rebuild, report, actor)
    report.chunks = meta.n_chunks
    report.seconds = time.perf_counter() - started
    return report


@dataclass
class _CorpusScan:
    """The corpus folder's files, their bytes and digests, and the corpus documents already indexed."""

    root: Path
    files: list[Path]
    known: dict[str, Document]
    raws: dict[str, bytes]
    digests: dict[str, str]

    def changed(self, f: Path) -> bool:
        rel = str(f.relative_to(self.root))
        return self.known.get(rel) is None or self.known[rel].content_hash != self.digests[rel]

    @property
    def removed_paths(self) -> list[str]:
        return [p for p in self.known if p not in self.digests]


def _scan_corpus(root: Path) -> _CorpusScan:
    files = corpus_files(root)
    known = {d.path: d for d in Document.objects.filter(source=Document.Source.CORPUS, archived_at__isnull=True)
             .only("id", "path", "content_hash", "current_version")}
    raws = {str(f.relative_to(root)): f.read_bytes() for f in files}
    return _CorpusScan(root, files, known, raws, {rel: hashlib.sha256(raw).hexdigest() for rel, raw in raws.items()})


def _prepare_corpus_files(root: Path, scan: _CorpusScan, todo: list[Path], embedder: Embedder, progress) -> list:
    """Parse, chunk and embed each file to write (outside the transaction); the progress bar
    steps once per file, the unchanged ones at the end."""
    prepared = []
    for f in todo:
        if progress:
            progress(str(f.relative_to(root)))
        rel = str(f.relative_to(root))
        title, front, parsed, drafts = _parse_corpus_file(root, f)
        p = _prepare(rel, scan.digests[rel], title, front, sections_markdown(parsed.sections), drafts, embedder)
        p.fields = _doc_fields(rel, front, title)
        prepared.append((p, parsed, scan.raws[rel]))
    if progress:
        for _ in range(len(scan.files) - len(todo)):
            progress("")
    return prepared


def _reembedded_uploads(embedder: Embedder) -> list:
    return [(doc, _prepare_version(doc.current_version, embedder))
            for doc in Document.objects.filter(source=Document.Source.UPLOAD, archived_at__isnull=True,
                                               current_version__isnull=False).select_related("current_version")]


@transaction.atomic
def _write_corpus(root: Path, scan: _CorpusScan, todo: list[Path], prepared: list, uploads: list, meta: IndexMeta | None,
                  embedder: Embedder, rebuild: bool, report: IngestReport, actor) -> IndexMeta:
    """Every write of an ingest, in one transaction; the index metadata as it ends."""
    # Django's FKs are deferred; pending trigger events would block CREATE INDEX below.
    with connection.cursor() as cur:
        cur.execute("SET CONSTRAINTS ALL IMMEDIATE")
    # Lock the meta row: two ingests (or an ingest and a publish) never interleave their writes.
    if meta:
        meta = IndexMeta.objects.select_for_update().get(pk=meta.pk)
    _reset_index(rebuild, embedder)
    _write_corpus_documents(prepared, scan.known, rebuild, report, actor)
    _version_unversioned(root, scan.files, todo, scan.known, scan.raws, scan.digests, actor)
    for doc, p in uploads:
        _write_document(p, doc)
    if removed := scan.removed_paths:
        Document.objects.filter(path__in=removed, source=Document.Source.CORPUS).delete()
        report.removed = 0 if rebuild else len(removed)
    report.unchanged += len(scan.files) - len(todo)
    meta = _meta_for(meta, embedder)
    if prepared or report.removed or rebuild or uploads:
        refresh_index_stats(meta)
        create_hnsw()
    else:
        meta.save()
    if actor is not None and (prepared or report.removed):
        report.chunks = meta.n_chunks
        _audit_reindex(actor, report)
    return meta


def _audit_reindex(actor, report: IngestReport) -> None:
    """Record who reindexed (in the ingestion's transaction)."""
    audit_record(actor=actor, action=AuditLog.Action.REINDEXED, target=None, after={
        "added": report.added, "changed": report.changed, "removed": report.removed, "chunks": report.chunks,
    })


def corpus_embedded_texts(root: Path | None = None) -> list[tuple[str, str]]:
    """(kind, text) of everything an ingest of the corpus embeds: chunks and their sentences as
    passages, the sections' question aliases as queries (the admin's own are not included)."""
    root = Path(root or settings.SM_CORPUS_DIR)
    out: list[tuple[str, str]] = []
    for file in corpus_files(root):
        title, _, _, drafts = _parse_corpus_file(root, file)
        for d in drafts:
            out.append(("passage", d.embed_text))
            out += [("passage", u) for u in sentence_units(d.text)]
            out += [("query", q) for q in d.aliases]
        out += [("query", q) for _, q in section_question_forms(title, drafts)]
    return list(dict.fromkeys(out))


def export_bundled_vectors(embedder: Embedder, path: Path = BUNDLED_VECTORS) -> int:
    """Write the cached vectors of every text the corpus embeds (run after an ingest with
    `embedder`); texts not cached yet are embedded first. Returns how many were written."""
    texts = corpus_embedded_texts()
    digests, vectors = [], []
    for kind in ("passage", "query"):
        batch = [t for k, t in texts if k == kind]
        digests += [embedding_digest(kind, t) for t in batch]
        vectors += embed_cached(embedder, batch, kind=kind)
    np.savez_compressed(path, signature=np.array(embedder.signature), digests=np.array(digests),
                        vectors=np.asarray(vectors, dtype=np.float32))
    _read_bundled.cache_clear()
    return len(digests)
