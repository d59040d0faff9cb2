"""Publishing uploaded versions into the index, changing a document's scope, removing documents."""
from __future__ import annotations

from django.db import connection, transaction
from django.utils import timezone

from core.audit import audit_record
from core.models import AuditLog

from ..chunking import chunk_sections
from ..embedders import Embedder, get_embedder
from ..models import Chunk, Document, DocumentVersion, IndexMeta, Sentence
from ..questions import FORMS_VERSION
from .schema import VECTOR_TABLES, _column_dimension, create_hnsw, retype_embedding
from .writing import _prepare, _Prepared, _write_document, current_meta, refresh_index_stats, sections_markdown, write_scope


def _prepare_version(version: DocumentVersion, embedder: Embedder) -> _Prepared:
    """A version's enabled sections, chunked and embedded, with its document's fields and scope."""
    from ..parsing import Section

    doc = version.document
    drafts = chunk_sections(version.title, [Section.from_dict(x) for x in version.sections])
    body = sections_markdown([Section.from_dict(x) for x in version.sections if x.get("enabled", True)])
    p = _prepare(doc.path, version.content_hash, version.title, dict(version.meta or {}), body, drafts, embedder)
    p.version = version.number
    return p


def _switch_in(version: DocumentVersion, p, actor) -> int:
    """One version's chunks replace its document's; the version in use before becomes history.
    Returns the chunks written (0 when it was discarded or published meanwhile)."""
    version = DocumentVersion.objects.select_for_update().select_related("document").get(pk=version.pk)
    if version.status != DocumentVersion.Status.INDEXING:
        return 0  # discarded or published meanwhile: nothing to switch
    doc = Document.objects.select_for_update().get(pk=version.document_id)
    scope = (version.meta or {}).get("scope") or {}
    doc.title, doc.audience = version.title, scope.get("audience", doc.audience)
    doc.content_hash, doc.body, doc.meta = version.content_hash, p.body, {k: v for k, v in p.meta.items() if k != "scope"}
    doc.archived_at = None
    doc.save(update_fields=["title", "audience", "content_hash", "body", "meta", "archived_at"])
    p.scope = write_scope(doc, scope.get("cities", doc.scope_cities or []),
                         scope.get("stores", list(doc.scope_stores.values_list("pk", flat=True))))
    n = _write_document(p, doc)
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
    return n


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
            written += _switch_in(version, p, actor)
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
    tokens = write_scope(document, list(scope.cities), list(scope.stores))
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
