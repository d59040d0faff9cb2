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
from functools import lru_cache
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import connection, transaction

from core.audit import audit_record
from core.roles import require

from .chunking import parse_markdown, sentence_units
from .embedders import Embedder, get_embedder
from .models import Chunk, Document, EmbeddingCache, Gram, IndexMeta, SectionAlias, Sentence, Term
from .questions import FORMS_VERSION, section_question_forms
from .text import gram_counts, term_counts

log = logging.getLogger(__name__)
HNSW_INDEX = "knowledge_chunk_embedding_hnsw"
# Sentences and question aliases share a table but are searched apart, each through its own
# partial index: the alias channel walks a graph of aliases only (a few per section), not one
# ten times its size where most neighbours are sentences it would throw away.
HNSW_INDEXES = (
    ("knowledge_chunk", HNSW_INDEX, ""),
    ("knowledge_sentence", "knowledge_sentence_sentence_hnsw", "kind = 'sentence'"),
    ("knowledge_sentence", "knowledge_sentence_alias_hnsw", "kind = 'alias'"),
)
RETIRED_INDEXES = ("knowledge_sentence_embedding_hnsw",)  # one index over both kinds (before 0009)
VECTOR_TABLES = ("knowledge_chunk", "knowledge_sentence")
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


def current_meta() -> IndexMeta | None:
    return IndexMeta.objects.order_by("pk").first()


def _column_dimension(table: str = "knowledge_chunk") -> int | None:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = %s::regclass AND attname = 'embedding'", [table]
        )
        row = cur.fetchone()
    return row[0] if row and row[0] > 0 else None


def _drop_hnsw() -> None:
    with connection.cursor() as cur:
        for index in (*(i for _, i, _ in HNSW_INDEXES), *RETIRED_INDEXES):
            cur.execute(f"DROP INDEX IF EXISTS {index}")


def _create_hnsw() -> None:
    with connection.cursor() as cur:
        for index in RETIRED_INDEXES:
            cur.execute(f"DROP INDEX IF EXISTS {index}")
        for table, index, predicate in HNSW_INDEXES:
            cur.execute(
                f"CREATE INDEX IF NOT EXISTS {index} ON {table} USING hnsw (embedding vector_cosine_ops) "
                f"WITH (m = 16, ef_construction = 64){f' WHERE {predicate}' if predicate else ''}"
            )


def _retype_embedding(dimension: int) -> None:
    with connection.cursor() as cur:
        for table in VECTOR_TABLES:
            cur.execute(f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector({int(dimension)})")


def _digest(kind: str, text: str) -> str:
    return hashlib.sha1(f"{kind}\x00{text}".encode()).hexdigest()


def _ensure_cache_column(dimension: int) -> None:
    """The cache holds vectors of one dimension at a time (another embedder's are dropped)."""
    if _column_dimension("knowledge_embeddingcache") != dimension:
        with connection.cursor() as cur:
            cur.execute("TRUNCATE knowledge_embeddingcache")
            cur.execute(f"ALTER TABLE knowledge_embeddingcache ALTER COLUMN embedding TYPE vector({int(dimension)})")


def embed_cached(embedder: Embedder, texts: list[str], *, kind: str = "passage") -> list:
    """Vectors for `texts` (passages, or questions embedded as queries), computed once per
    embedder signature and text: re-ingests and rebuilds only embed what is new."""
    if not texts:
        return []
    keys = [_digest(kind, t) for t in texts]
    if embedder.dimension == 0:
        embedder.embed_passages(["dimension probe"])
    _ensure_cache_column(embedder.dimension)
    cached = {
            d: v for d, v in EmbeddingCache.objects.filter(signature=embedder.signature, digest__in=set(keys)).values_list("digest", "embedding")
        }
    missing = list(dict.fromkeys(t for t, k in zip(texts, keys) if k not in cached))
    if missing:
        shipped = bundled_vectors(embedder.signature)  # the bundled corpus's vectors, shipped with the code
        new = {_digest(kind, t): shipped[_digest(kind, t)] for t in missing if _digest(kind, t) in shipped}
        to_embed = [t for t in missing if _digest(kind, t) not in new]
        if to_embed:
            fresh = [embedder.embed_query(t) for t in to_embed] if kind == "query" else list(embedder.embed_passages(to_embed))
            new.update((_digest(kind, t), v) for t, v in zip(to_embed, fresh))
        cached.update(new)
        EmbeddingCache.objects.bulk_create(
            [EmbeddingCache(signature=embedder.signature, digest=d, embedding=list(map(float, v))) for d, v in new.items()],
            ignore_conflicts=True, batch_size=500,
        )
    return [cached[k] for k in keys]


# The vectors of the bundled corpus for the default embedder (e5), keyed like the embedding
# cache (signature, kind and text): the first ingest of a fresh clone reads them instead of
# embedding ~1,900 texts (63 s on a 2-core machine where e5 costs 2 ms a token; 32 s on a
# faster one). A text that changed is simply not in it and is embedded. Written by
# `manage.py ingest --export-vectors` after an ingest of the bundled corpus.
BUNDLED_VECTORS = Path(__file__).with_name("bundled_vectors.npz")


def bundled_vectors(signature: str) -> dict[str, np.ndarray]:
    found, vectors = _read_bundled(str(BUNDLED_VECTORS))
    return vectors if found == signature else {}


@lru_cache(maxsize=2)
def _read_bundled(path: str) -> tuple[str, dict[str, np.ndarray]]:
    if not Path(path).exists():
        return "", {}
    with np.load(path) as z:
        return str(z["signature"]), dict(zip(z["digests"].tolist(), z["vectors"]))


def corpus_embedded_texts(root: Path | None = None) -> list[tuple[str, str]]:
    """(kind, text) of everything an ingest of the corpus embeds: chunks and their sentences as
    passages, the sections' question aliases as queries (the admin's own are not included)."""
    root = Path(root or settings.SM_CORPUS_DIR)
    out: list[tuple[str, str]] = []
    for file in sorted(p for p in root.rglob("*.md") if p.is_file() and not p.name.startswith(".")):
        parsed = parse_markdown(file.read_text("utf-8"), fallback_title=file.stem)
        for d in parsed.chunks:
            out.append(("passage", d.embed_text))
            out += [("passage", u) for u in sentence_units(d.text)]
            out += [("query", q) for q in d.aliases]
        out += [("query", q) for _, q in section_question_forms(parsed.title, parsed.chunks)]
    return list(dict.fromkeys(out))


def export_bundled_vectors(embedder: Embedder, path: Path = BUNDLED_VECTORS) -> int:
    """Write the cached vectors of every text the corpus embeds (run after an ingest with
    `embedder`); texts not cached yet are embedded first. Returns how many were written."""
    texts = corpus_embedded_texts()
    digests, vectors = [], []
    for kind in ("passage", "query"):
        batch = [t for k, t in texts if k == kind]
        digests += [_digest(kind, t) for t in batch]
        vectors += embed_cached(embedder, batch, kind=kind)
    np.savez_compressed(path, signature=np.array(embedder.signature), digests=np.array(digests),
                        vectors=np.asarray(vectors, dtype=np.float32))
    _read_bundled.cache_clear()
    return len(digests)


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


def _prepare(root: Path, file: Path, embedder: Embedder) -> _Prepared:
    raw = file.read_bytes()
    source = raw.decode("utf-8")
    parsed = parse_markdown(source, fallback_title=file.stem)
    rel = str(file.relative_to(root))
    vectors = embed_cached(embedder, [d.embed_text for d in parsed.chunks])
    units = [sentence_units(d.text) for d in parsed.chunks]
    flat = embed_cached(embedder, [u for us in units for u in us])
    sentences, i = [], 0
    for us in units:
        sentences.append(list(zip(us, flat[i : i + len(us)])))
        i += len(us)
    # Aliases: the corpus's own, those managers added in the admin for this document, and the
    # question forms the product writes for each section (but those a manager deleted).
    questions = [(d.section_path[:512], q, SectionAlias.Source.CORPUS) for d in parsed.chunks for q in d.aliases]
    questions += [(a.section_path, a.question, a.source) for a in SectionAlias.objects.filter(document_path=rel, source=SectionAlias.Source.ADMIN)]
    deleted = set(SectionAlias.objects.filter(document_path=rel, source=SectionAlias.Source.GENERATED, active=False)
                  .values_list("section_path", "question"))
    written = {(section, q) for section, q, _ in questions}
    questions += [(section, q, SectionAlias.Source.GENERATED) for section, q in section_question_forms(parsed.title, parsed.chunks)
                  if (section, q) not in deleted and (section, q) not in written]
    alias_vectors = embed_cached(embedder, [q for _, q, _ in questions], kind="query")
    aliases: dict[str, list] = {}
    for (section, q, src), v in zip(questions, alias_vectors):
        aliases.setdefault(section, []).append((q, src, v))
    meta = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in parsed.meta.items()}
    return _Prepared(rel, hashlib.sha256(raw).hexdigest(), parsed.title, meta, parsed.body, parsed.chunks, vectors, sentences, aliases)


def _write_document(p: _Prepared, raw_meta: dict) -> int:
    fields = _doc_fields(p.path, raw_meta, p.title)
    doc, _ = Document.objects.update_or_create(
        path=p.path, defaults={**fields, "content_hash": p.digest, "body": p.body, "meta": p.meta}
    )
    doc.chunks.all().delete()
    texts = [lexical_text(d) for d in p.drafts]
    chunks = Chunk.objects.bulk_create(
        [
            Chunk(document=doc, ordinal=d.ordinal, section_path=d.section_path[:512], text=d.text,
                  audience=doc.audience, embedding=list(map(float, v)), n_terms=sum(term_counts(t).values()))
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
    rows = [Sentence(chunk=c, kind=Sentence.Kind.SENTENCE, text=text, audience=doc.audience, embedding=list(map(float, v)))
            for c, pairs in zip(chunks, p.sentences) for text, v in pairs]
    first_chunk = {}
    for c in chunks:
        first_chunk.setdefault(c.section_path, c)
    rewritten = (SectionAlias.Source.CORPUS, SectionAlias.Source.GENERATED)
    SectionAlias.objects.filter(document_path=p.path, source__in=rewritten, active=True).delete()
    SectionAlias.objects.bulk_create(
        [SectionAlias(document_path=p.path, section_path=section, question=q, source=src)
         for section, items in p.aliases.items() for q, src, _ in items if src in rewritten],
        ignore_conflicts=True,
    )
    for section, items in p.aliases.items():
        chunk = first_chunk.get(section)
        if chunk is None:
            continue  # an orphan admin alias: its section is gone (listed in the admin)
        rows += [Sentence(chunk=chunk, kind=Sentence.Kind.ALIAS, text=q, audience=doc.audience, embedding=list(map(float, v)),
                          generated=src == SectionAlias.Source.GENERATED)
                 for q, src, v in items]
    Sentence.objects.bulk_create(rows, batch_size=2000)
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
    if any(_column_dimension(table) not in (None, embedder.dimension) for table in VECTOR_TABLES):
        rebuild = True
    if Chunk.objects.exists() and not Sentence.objects.exists():
        # An index built before sentence vectors and aliases existed: every document needs them.
        rebuild = True
    report.rebuilt = rebuild or not known
    # Question forms written by an older template version: every document is prepared again.
    rewrite_forms = meta is not None and meta.forms_version != FORMS_VERSION

    todo = [f for f in files if rebuild or rewrite_forms or known.get(str(f.relative_to(root))) is None
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
                # Aliases added in the admin are kept (they point at sections by path) and re-attached.
                cur.execute("TRUNCATE knowledge_term, knowledge_termstat, knowledge_gram, knowledge_gramstat, knowledge_sentence, "
                            "knowledge_chunk, knowledge_document CASCADE")
            _retype_embedding(embedder.dimension)
        elif any(_column_dimension(table) is None for table in VECTOR_TABLES):
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
            meta.fusion, meta.answerability = {}, {}
        meta.signature, meta.backend, meta.model, meta.dimension = embedder.signature, embedder.backend, embedder.model, embedder.dimension
        meta.forms_version = FORMS_VERSION
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


@transaction.atomic
def section_alias_add(*, document_path: str, section_path: str, question: str, user, embedder: Embedder | None = None) -> SectionAlias:
    """A manager teaches the index a question: it becomes a question alias of the section,
    embedded at once (no re-ingest) and audited. Idempotent for the same question."""
    from django.core.exceptions import ValidationError

    require(user, "knowledge.add_sectionalias", attempt="alias_add", message="只有店长可以为制度章节添加常见问法。")
    question = " ".join((question or "").split())
    if not question or len(question) > 200:
        raise ValidationError({"question": "问法不能为空，且不超过 200 字。"})
    chunk = (Chunk.objects.filter(document__path=document_path, section_path=section_path).order_by("ordinal").first())
    if chunk is None:
        raise ValidationError({"section_path": f"没有这个章节：{document_path} · {section_path}"})
    alias, created = SectionAlias.objects.get_or_create(
        document_path=document_path, section_path=section_path, question=question,
        defaults={"source": SectionAlias.Source.ADMIN, "created_by": user},
    )
    if created:
        embedder = embedder or get_embedder()
        vector = embed_cached(embedder, [question], kind="query")[0]
        Sentence.objects.create(chunk=chunk, kind=Sentence.Kind.ALIAS, text=question, audience=chunk.audience,
                                embedding=list(map(float, vector)))
        audit_record(actor=user, action="alias_added", target=alias,
                     after={"document": document_path, "section": section_path, "question": question})
    return alias


def bm25_idf(n: int, df: int, avg_idf: float, epsilon: float = 0.25) -> float:
    """Okapi BM25 idf as rank_bm25.BM25Okapi computes it (negative idf floored)."""
    idf = math.log((n - df + 0.5) / (df + 0.5))
    return idf if idf >= 0 else epsilon * avg_idf


@transaction.atomic
def generated_alias_delete(*, alias: SectionAlias, user) -> SectionAlias:
    """A knowledge owner deletes a question form the product wrote (自动生成的问法): its vector
    leaves the index at once, and the form is kept inactive so the next ingest does not write it
    again. Audited; idempotent."""
    from django.core.exceptions import ValidationError

    require(user, "knowledge.manage_document", attempt="alias_delete", message="只有店长或总部的知识库管理员可以删除自动生成的问法。")
    if alias.source != SectionAlias.Source.GENERATED:
        raise ValidationError({"alias": "只有自动生成的问法可以在这里删除；手写的常见问法请改制度文档。"})
    alias = SectionAlias.objects.select_for_update().get(pk=alias.pk)
    if not alias.active:
        return alias
    removed, _ = Sentence.objects.filter(chunk__document__path=alias.document_path, chunk__section_path=alias.section_path,
                                         kind=Sentence.Kind.ALIAS, generated=True, text=alias.question).delete()
    alias.active = False
    alias.save(update_fields=["active"])
    meta = current_meta()
    if meta is not None:
        meta.save(update_fields=["updated_at"])  # every process's section snapshots are rebuilt
    audit_record(actor=user, action="alias_deleted", target=alias,
                 before={"document": alias.document_path, "section": alias.section_path, "question": alias.question, "vectors": removed})
    return alias
