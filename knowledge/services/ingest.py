"""Incremental ingestion of the corpus and publishing of uploaded versions.

Unchanged documents (same content hash) are skipped; all changes of one run commit in one
transaction, so concurrent readers see the old index or the new one, never a mix. When the
embedder signature changes, everything is rebuilt and the embedding column is retyped to
the new dimension. Bulk loads create the HNSW index after the rows are in. No HTTP
endpoint calls this without an authenticated manager (admin action) or an operator (CLI)."""
from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from core.audit import audit_record
from core.models import AuditLog

from ..chunking import chunk_sections, sentence_units
from ..embedders import Embedder, get_embedder
from ..models import Chunk, Document, DocumentFile, DocumentVersion, Gram, IndexMeta, SectionAlias, Sentence, Term
from ..questions import FORMS_VERSION, section_question_forms
from ..text import gram_counts, term_counts
from .schema import VECTOR_TABLES, _column_dimension, create_hnsw, drop_hnsw, retype_embedding
from .vectors import BUNDLED_VECTORS, _read_bundled, embed_cached, embedding_digest

log = logging.getLogger(__name__)


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
    sentences: list  # per draft: [(text, vector)]
    aliases: dict  # section_path -> [(question, source, vector)]
    fields: dict = field(default_factory=dict)  # Document fields (doc_type, audience, version label, updated)
    scope: list = field(default_factory=list)  # scope tokens every chunk carries ('city:深圳', 'store:3'; empty: everyone)
    version: int = 1  # the DocumentVersion number the chunks belong to
    page_of: dict = field(default_factory=dict)


def current_meta() -> IndexMeta | None:
    return IndexMeta.objects.order_by("pk").first()


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


def lexical_text(draft) -> str:
    """What the lexical channels index for a chunk: heading path, text, and its section's
    question aliases (staff wording the SOP itself does not use)."""
    return draft.embed_text + ("\n" + "\n".join(draft.aliases) if draft.aliases else "")


# What `ingest PATH` reads: every format an upload takes. The lists beside the bundled corpus
# (synonyms.txt, userdict.txt, uncovered.txt) are aids, not documents.
CORPUS_SUFFIXES = (".md", ".markdown", ".txt", ".docx", ".pdf", ".xlsx", ".csv", ".pptx", ".html", ".htm")


CORPUS_LISTS = ("synonyms.txt", "userdict.txt", "uncovered.txt")


def corpus_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in CORPUS_SUFFIXES
                  and not p.name.startswith(".") and p.name not in CORPUS_LISTS)


def sections_markdown(sections) -> str:
    """A parsed file's sections as one Markdown body (what the admin and the MCP resources show)."""
    parts = []
    for s in sections:
        if s.path:
            parts.append(f"{'#' * min(6, len(s.path) + 1)} {s.path[-1]}")
        if s.text:
            parts.append(s.text)
    return "\n\n".join(parts)


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


def _prepare(rel: str, digest: str, title: str, meta: dict, body: str, drafts: list, embedder: Embedder) -> _Prepared:
    """Everything a document's chunks need, embedded (outside any transaction: the slow part)."""
    vectors = embed_cached(embedder, [d.embed_text for d in drafts])
    units = [sentence_units(d.text) for d in drafts]
    flat = embed_cached(embedder, [u for us in units for u in us])
    sentences, i = [], 0
    for us in units:
        sentences.append(list(zip(us, flat[i : i + len(us)])))
        i += len(us)
    # Aliases: the document's own, those managers added in the admin for this document, and the
    # question forms the product writes for each section (but those a manager deleted).
    questions = [(d.section_path[:512], q, SectionAlias.Source.CORPUS) for d in drafts for q in d.aliases]
    questions += [(a.section_path, a.question, a.source) for a in SectionAlias.objects.filter(document_path=rel, source=SectionAlias.Source.ADMIN)]
    deleted = set(SectionAlias.objects.filter(document_path=rel, source=SectionAlias.Source.GENERATED, active=False)
                  .values_list("section_path", "question"))
    written = {(section, q) for section, q, _ in questions}
    questions += [(section, q, SectionAlias.Source.GENERATED) for section, q in section_question_forms(title, drafts)
                  if (section, q) not in deleted and (section, q) not in written]
    alias_vectors = embed_cached(embedder, [q for _, q, _ in questions], kind="query")
    aliases: dict[str, list] = {}
    for (section, q, src), v in zip(questions, alias_vectors):
        aliases.setdefault(section, []).append((q, src, v))
    meta = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in meta.items()}
    return _Prepared(rel, digest, title, meta, body, drafts, vectors, sentences, aliases)


def _write_document(p: _Prepared, doc: Document) -> int:
    """Replace `doc`'s chunks, words, bigrams, sentences and aliases with `p`'s (inside the caller's
    transaction: readers see the old version or the new one, never a mix)."""
    doc.chunks.all().delete()
    texts = [lexical_text(d) for d in p.drafts]
    chunks = Chunk.objects.bulk_create(
        [
            Chunk(document=doc, ordinal=d.ordinal, section_path=d.section_path[:512], text=d.text, audience=doc.audience,
                  embedding=list(map(float, v)), n_terms=sum(term_counts(t).values()), version=p.version, page=d.page, scope=p.scope)
            for d, v, t in zip(p.drafts, p.vectors, texts)
        ]
    )
    Term.objects.bulk_create(
        [Term(chunk=c, term=t, tf=n, n_terms=c.n_terms) for c, text in zip(chunks, texts) for t, n in term_counts(text).items()],
        batch_size=5000,
    )
    grams = []
    for c, text in zip(chunks, texts):
        counts = gram_counts(text)
        total = sum(counts.values())
        grams += [Gram(chunk=c, term=g, tf=n, n_terms=total) for g, n in counts.items()]
    Gram.objects.bulk_create(grams, batch_size=5000)
    rows = [Sentence(chunk=c, kind=Sentence.Kind.SENTENCE, text=text, audience=doc.audience, scope=p.scope, embedding=list(map(float, v)))
            for c, pairs in zip(chunks, p.sentences) for text, v in pairs]
    first_chunk = {}
    for c in chunks:
        first_chunk.setdefault(c.section_path, c)
    rewritten = (SectionAlias.Source.CORPUS, SectionAlias.Source.GENERATED)
    SectionAlias.objects.filter(document_path=p.path, source__in=rewritten, active=True).delete()
    SectionAlias.objects.bulk_create(
        [SectionAlias(document_path=p.path, section_path=section, question=q[:200], source=src)
         for section, items in p.aliases.items() for q, src, _ in items if src in rewritten],
        ignore_conflicts=True,
    )
    for section, items in p.aliases.items():
        chunk = first_chunk.get(section)
        if chunk is None:
            continue  # an orphan admin alias: its section is gone (listed in the admin)
        rows += [Sentence(chunk=chunk, kind=Sentence.Kind.ALIAS, text=q, audience=doc.audience, scope=p.scope,
                          embedding=list(map(float, v)), generated=src == SectionAlias.Source.GENERATED)
                 for q, src, v in items]
    Sentence.objects.bulk_create(rows, batch_size=2000)
    return len(chunks)


def _scope_from_meta(meta: dict) -> tuple[list[str], list[int]]:
    """A corpus document's scope from its front matter (`cities: [深圳]`, `stores: [SZ-FT]`)."""
    from ops.models import Store

    cities = [str(c) for c in (meta.get("cities") or [])]
    wanted = [str(x) for x in (meta.get("stores") or [])]
    stores = list(Store.objects.filter(code__in=wanted).values_list("pk", flat=True)) if wanted else []
    return cities, stores


def _set_scope(doc: Document, cities: list[str], store_ids: list[int]) -> list[str]:
    from ..documents import scope_tokens

    doc.scope_cities = list(cities)
    doc.scope = scope_tokens(cities, store_ids)
    doc.save(update_fields=["scope_cities", "scope"])
    doc.scope_stores.set(store_ids)
    return doc.scope


def _record_version(doc: Document, *, kind: str, name: str, raw: bytes | None, digest: str, title: str, sections: list[dict],
                    warnings: list[str], meta: dict, actor, chunks: int) -> DocumentVersion:
    """A corpus file's new content as the published version n+1 (the one before becomes history)."""
    previous = doc.current_version
    number = (doc.versions.order_by("-number").values_list("number", flat=True).first() or 0) + 1
    version = DocumentVersion.objects.create(
        document=doc, number=number, status=DocumentVersion.Status.PUBLISHED, kind=kind, original_name=name[:255],
        size=len(raw or b""), content_hash=digest, title=title[:128], sections=sections, warnings=warnings, meta=meta,
        diff=_sections_diff(previous.sections if previous else [], sections), chunks=chunks, created_by=actor,
        published_by=actor, published_at=timezone.now(), progress=100)
    if raw is not None:
        DocumentFile.objects.create(version=version, data=raw)
    if previous is not None:
        DocumentVersion.objects.filter(pk=previous.pk).update(status=DocumentVersion.Status.SUPERSEDED)
    doc.current_version = version
    doc.save(update_fields=["current_version"])
    return version


def _sections_diff(old: list[dict], new: list[dict]) -> dict:
    from ..documents import _diff

    return _diff(old, new)


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
        # The same statistics for the character-bigram channel.
        cur.execute("SELECT COALESCE(AVG(n), 0) FROM (SELECT MAX(n_terms) AS n FROM knowledge_gram GROUP BY chunk_id) g")
        avg_grams = cur.fetchone()[0]
        cur.execute("DELETE FROM knowledge_gramstat")
        cur.execute("INSERT INTO knowledge_gramstat (term, df) SELECT term, COUNT(*) FROM knowledge_gram GROUP BY term")
        cur.execute("SELECT COALESCE(AVG(LN((%s - df + 0.5) / (df + 0.5))), 0) FROM knowledge_gramstat", [n])
        avg_gram_idf = cur.fetchone()[0]
        cur.execute("ANALYZE knowledge_gramstat")
    meta.n_chunks, meta.avg_terms, meta.avg_idf = n, float(avg_terms), float(avg_idf)
    meta.avg_grams, meta.avg_gram_idf = float(avg_grams), float(avg_gram_idf)
    meta.save()


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
        p.scope = _set_scope(doc, *_scope_from_meta(p.meta))
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

    files = corpus_files(root)
    known = {d.path: d for d in Document.objects.filter(source=Document.Source.CORPUS, archived_at__isnull=True)
             .only("id", "path", "content_hash", "current_version")}
    raws = {str(f.relative_to(root)): f.read_bytes() for f in files}
    digests = {rel: hashlib.sha256(raw).hexdigest() for rel, raw in raws.items()}
    rebuild = _must_rebuild(meta, embedder, report) or rebuild
    report.rebuilt = rebuild or not known
    # Question forms written by an older template version: every document is prepared again.
    rewrite_forms = meta is not None and meta.forms_version != FORMS_VERSION

    todo = [f for f in files if rebuild or rewrite_forms or known.get(str(f.relative_to(root))) is None
            or known[str(f.relative_to(root))].content_hash != digests[str(f.relative_to(root))]]
    removed_paths = [p for p in known if p not in digests]
    prepared = []
    for f in todo:
        if progress:
            progress(str(f.relative_to(root)))
        rel = str(f.relative_to(root))
        title, front, parsed, drafts = _parse_corpus_file(root, f)
        p = _prepare(rel, digests[rel], title, front, sections_markdown(parsed.sections), drafts, embedder)
        p.fields = _doc_fields(rel, front, title)
        prepared.append((p, parsed, raws[rel]))
    if progress:
        for _ in range(len(files) - len(todo)):
            progress("")
    # Uploaded documents keep their published version through a rebuild: it is embedded again.
    uploads = []
    if rebuild or rewrite_forms:
        for doc in Document.objects.filter(source=Document.Source.UPLOAD, archived_at__isnull=True, current_version__isnull=False) \
                .select_related("current_version"):
            uploads.append((doc, _prepare_version(doc.current_version, embedder)))

    with transaction.atomic():
        # Django's FKs are deferred; pending trigger events would block CREATE INDEX below.
        with connection.cursor() as cur:
            cur.execute("SET CONSTRAINTS ALL IMMEDIATE")
        # Lock the meta row: two ingests (or an ingest and a publish) never interleave their writes.
        if meta:
            meta = IndexMeta.objects.select_for_update().get(pk=meta.pk)
        _reset_index(rebuild, embedder)
        _write_corpus_documents(prepared, known, rebuild, report, actor)
        _version_unversioned(root, files, todo, known, raws, digests, actor)
        for doc, p in uploads:
            _write_document(p, doc)
        if removed_paths:
            Document.objects.filter(path__in=removed_paths, source=Document.Source.CORPUS).delete()
            report.removed = 0 if rebuild else len(removed_paths)
        report.unchanged += len(files) - len(todo)
        meta = _meta_for(meta, embedder)
        if prepared or report.removed or rebuild or uploads:
            refresh_index_stats(meta)
            create_hnsw()
        else:
            meta.save()
        if actor is not None and (prepared or report.removed):
            report.chunks = meta.n_chunks
            _audit_reindex(actor, report)
    report.chunks = meta.n_chunks
    report.seconds = time.perf_counter() - started
    return report


def _prepare_version(version: DocumentVersion, embedder: Embedder) -> _Prepared:
    """A version's enabled sections, chunked and embedded, with its document's fields and scope."""
    from ..parsing import Section

    doc = version.document
    drafts = chunk_sections(version.title, [Section.from_dict(x) for x in version.sections])
    body = sections_markdown([Section.from_dict(x) for x in version.sections if x.get("enabled", True)])
    p = _prepare(doc.path, version.content_hash, version.title, dict(version.meta or {}), body, drafts, embedder)
    p.version = version.number
    return p


def publish_versions(versions: list[DocumentVersion], *, actor=None, embedder: Embedder | None = None, progress=None) -> int:
    """Index each version (status `indexing`) and switch it in: its chunks replace its document's
    in one transaction with every other version of the batch, the index statistics are brought
    up to date once, the version in use before becomes history. Returns the chunks written.
    `progress(done, total)` is told after each version is embedded."""
    embedder = embedder or get_embedder()
    if embedder.dimension == 0:
        embedder.embed_passages(["dimension probe"])
    prepared = []
    for i, version in enumerate(versions, start=1):
        prepared.append((version, _prepare_version(version, embedder)))
        if progress:
            progress(i, len(versions))
    written = 0
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("SET CONSTRAINTS ALL IMMEDIATE")
        meta = current_meta()
        if meta is not None:
            meta = IndexMeta.objects.select_for_update().get(pk=meta.pk)
            if meta.signature != embedder.signature:
                raise ValueError(f"索引是用 {meta.signature} 建的，当前嵌入器是 {embedder.signature}：请先运行 manage.py ingest --rebuild。")
        elif any(_column_dimension(table) is None for table in VECTOR_TABLES):
            retype_embedding(embedder.dimension)
        for version, p in prepared:
            version = DocumentVersion.objects.select_for_update().select_related("document").get(pk=version.pk)
            if version.status != DocumentVersion.Status.INDEXING:
                continue  # discarded or published meanwhile: nothing to switch
            doc = Document.objects.select_for_update().get(pk=version.document_id)
            scope = (version.meta or {}).get("scope") or {}
            doc.title, doc.audience = version.title, scope.get("audience", doc.audience)
            doc.content_hash, doc.body, doc.meta = version.content_hash, p.body, {k: v for k, v in p.meta.items() if k != "scope"}
            doc.archived_at = None
            doc.save(update_fields=["title", "audience", "content_hash", "body", "meta", "archived_at"])
            p.scope = _set_scope(doc, scope.get("cities", doc.scope_cities or []),
                                 scope.get("stores", list(doc.scope_stores.values_list("pk", flat=True))))
            n = _write_document(p, doc)
            written += n
            previous = doc.current_version_id
            if previous and previous != version.pk:
                DocumentVersion.objects.filter(pk=previous).update(status=DocumentVersion.Status.SUPERSEDED)
            version.status, version.progress, version.error, version.chunks = DocumentVersion.Status.PUBLISHED, 100, "", n
            version.published_by, version.published_at = actor, timezone.now()
            version.save(update_fields=["status", "progress", "error", "chunks", "published_by", "published_at"])
            doc.current_version = version
            doc.save(update_fields=["current_version"])
            audit_record(actor=actor, action=AuditLog.Action.DOCUMENT_PUBLISHED, target=version, after={
                "document": doc.pk, "title": doc.title, "version": version.number, "chunks": n, "previous": previous,
                "audience": doc.audience, "scope": p.scope})
        if meta is None:
            meta = IndexMeta(signature=embedder.signature, backend=embedder.backend, model=embedder.model, dimension=embedder.dimension,
                             forms_version=FORMS_VERSION)
        refresh_index_stats(meta)
        create_hnsw()
    return written


def apply_document_scope(document: Document, scope) -> None:
    """A published document reaches whom `scope` says, at once: its chunks and sentences carry
    the new audience and scope tokens (no embedding)."""
    document.audience = scope.audience
    document.save(update_fields=["audience"])
    tokens = _set_scope(document, list(scope.cities), list(scope.stores))
    Chunk.objects.filter(document=document).update(audience=scope.audience, scope=tokens)
    Sentence.objects.filter(chunk__document=document).update(audience=scope.audience, scope=tokens)
    meta = current_meta()
    if meta is not None:
        meta.save(update_fields=["updated_at"])  # every process's caches of the index start over


def remove_documents(documents) -> None:
    """Take documents out of the index (their versions stay, readable, for the audit trail)."""
    ids = [d.pk for d in documents]
    Chunk.objects.filter(document_id__in=ids).delete()
    Document.objects.filter(pk__in=ids).update(archived_at=timezone.now(), current_version=None)
    DocumentVersion.objects.filter(document_id__in=ids, status=DocumentVersion.Status.PUBLISHED).update(status=DocumentVersion.Status.SUPERSEDED)
    meta = current_meta()
    if meta is not None:
        refresh_index_stats(meta)


def _audit_reindex(actor, report: IngestReport) -> None:
    """Record who reindexed (in the ingestion's transaction)."""
    audit_record(actor=actor, action=AuditLog.Action.REINDEXED, target=None, after={
        "added": report.added, "changed": report.changed, "removed": report.removed, "chunks": report.chunks,
    })


def bm25_idf(n: int, df: int, avg_idf: float, epsilon: float = 0.25) -> float:
    """Okapi BM25 idf as rank_bm25.BM25Okapi computes it (negative idf floored)."""
    idf = math.log((n - df + 0.5) / (df + 0.5))
    return idf if idf >= 0 else epsilon * avg_idf


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
