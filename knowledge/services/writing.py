"""Writing one document into the index: its chunks, sentences, question forms and terms (_prepare,
_write_document), its version record and scope, and the index statistics BM25 reads."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from django.db import connection
from django.utils import timezone

from ..chunking import sentence_units
from ..embedders import Embedder
from ..models import Chunk, Document, DocumentFile, DocumentVersion, Gram, IndexMeta, SectionAlias, Sentence, Term
from ..questions import section_question_forms
from ..text import gram_counts, term_counts
from .vectors import embed_cached

VALID_DOC_TYPES = set(Document.DocType.values)


VALID_AUDIENCES = set(Document.Audience.values)


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
    _copy_rows(Term, ("chunk_id", "term", "tf", "n_terms"),
               ((c.pk, t, n, c.n_terms) for c, text in zip(chunks, texts) for t, n in term_counts(text).items()))
    grams = []
    for c, text in zip(chunks, texts):
        counts = gram_counts(text)
        total = sum(counts.values())
        grams += [(c.pk, g, n, total) for g, n in counts.items()]
    _copy_rows(Gram, ("chunk_id", "term", "tf", "n_terms"), grams)
    rows = [(c.pk, Sentence.Kind.SENTENCE.value, False, text, doc.audience, p.scope, np.asarray(v, dtype=np.float32))
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
        rows += [(chunk.pk, Sentence.Kind.ALIAS.value, src == SectionAlias.Source.GENERATED, q, doc.audience, p.scope,
                  np.asarray(v, dtype=np.float32))
                 for q, src, v in items]
    _copy_rows(Sentence, ("chunk_id", "kind", "generated", "text", "audience", "scope", "embedding"), rows)
    return len(chunks)


def _copy_rows(model, columns: tuple[str, ...], rows) -> None:
    """Rows written with one binary COPY on the caller's connection and transaction: a document's
    word and bigram postings and its sentence and question vectors, tens of thousands of rows
    for which an ORM insert built a model instance each and spelt every vector out as decimal
    text (8.4 of a 19-document corpus's 104 s of ingest; the database's constraints still apply)."""
    from pgvector.psycopg.vector import register_vector_info
    from psycopg.types import TypeInfo

    assert connection.in_atomic_block, "a document's rows are written inside the ingest's or the publish's transaction"
    fields = {f.column: f for f in model._meta.concrete_fields}
    types = [_COPY_TYPES[fields[c].get_internal_type()] for c in columns]  # a type not listed fails here, not in the COPY
    raw = connection.connection
    with connection.wrap_database_errors, raw.cursor() as cur:  # a violated constraint is Django's IntegrityError
        if "embedding" in columns:  # the vector type's binary form, known to this cursor only
            register_vector_info(cur, TypeInfo.fetch(raw, "vector"))
        with cur.copy(f"COPY {model._meta.db_table} ({', '.join(columns)}) FROM STDIN WITH (FORMAT BINARY)") as cp:
            cp.set_types(types)
            for row in rows:
                cp.write_row(row)


# The binary COPY types of the columns _copy_rows is given (chunk ids are bigint, scope a varchar array).
_COPY_TYPES = {"ForeignKey": "int8", "CharField": "varchar", "TextField": "text", "PositiveIntegerField": "int4",
               "BooleanField": "bool", "ArrayField": "varchar[]", "VectorField": "vector"}


def _scope_from_meta(meta: dict) -> tuple[list[str], list[int]]:
    """A corpus document's scope from its front matter (`cities: [深圳]`, `stores: [SZ-FT]`)."""
    from ops.models import Store

    cities = [str(c) for c in (meta.get("cities") or [])]
    wanted = [str(x) for x in (meta.get("stores") or [])]
    stores = list(Store.objects.filter(code__in=wanted).values_list("pk", flat=True)) if wanted else []
    return cities, stores


def scope_tokens(cities, store_ids) -> list[str]:
    """What retrieval matches a document's chunks against: 'city:深圳', 'store:3'. Empty: everyone."""
    return [f"city:{c}" for c in cities] + [f"store:{i}" for i in store_ids]


def write_scope(doc: Document, cities: list[str], store_ids: list[int]) -> list[str]:
    """A document's scope columns and the tokens its chunks are matched against."""
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
        diff=sections_diff(previous.sections if previous else [], sections), chunks=chunks, created_by=actor,
        published_by=actor, published_at=timezone.now(), progress=100)
    if raw is not None:
        DocumentFile.objects.create(version=version, data=raw)
    if previous is not None:
        DocumentVersion.objects.filter(pk=previous.pk).update(status=DocumentVersion.Status.SUPERSEDED)
    doc.current_version = version
    doc.save(update_fields=["current_version"])
    return version


def sections_diff(old: list[dict], new: list[dict]) -> dict:
    """Sections added, changed and removed, by heading path (disabled ones count as removed)."""
    def index(sections):
        return {" > ".join(s["path"]) or "（开头）": s.get("text", "") for s in sections if s.get("enabled", True)}

    before, after = index(old), index(new)
    return {"added": [p for p in after if p not in before], "removed": [p for p in before if p not in after],
            "changed": [p for p in after if p in before and after[p] != before[p]]}


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


def sections_markdown(sections) -> str:
    """A parsed file's sections as one Markdown body (what the admin and the MCP resources show)."""
    parts = []
    for s in sections:
        if s.path:
            parts.append(f"{'#' * min(6, len(s.path) + 1)} {s.path[-1]}")
        if s.text:
            parts.append(s.text)
    return "\n\n".join(parts)
