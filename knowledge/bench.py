"""`manage.py bench retrieval`: retrieval latency at 100,000 chunks and ingest throughput.

The synthetic corpus lives in the bench database, never in the real index. Its vectors
are random unit vectors (embedding 100k passages on 2 CPU cores would take hours) and its
text is drawn from the real corpus's vocabulary with the real term frequencies, so the
lexical channel sees realistic posting-list lengths. Queries are the golden questions,
embedded for real with the configured embedder.
"""
from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from tqdm import tqdm

from core.bench import percentile, use_bench_database

from .embedders import get_embedder
from .evaluation import load_golden
from .models import Chunk, Gram, IndexMeta, Sentence, Term, TermStat
from .selectors import current_index, expanded_query, fusion_params, index_meta, index_read_once, retrieve, search
from .services import HNSW_INDEX, corpus_ingest, create_hnsw, drop_hnsw, refresh_index_stats, retype_embedding
from .text import gram_counts, query_terms

SENTENCES_PER_CHUNK = 3  # sentence vectors per chunk, plus one question alias for every other chunk


def _real_corpus_figures(cmd) -> dict:
    """Unchanged re-ingest time and e5 embedding throughput, on the real corpus."""
    corpus_ingest()  # bring the real index up to date first
    t = time.perf_counter()
    report = corpus_ingest()
    reingest_s = time.perf_counter() - t
    texts = [f"{c.section_path}\n{c.text}" for c in Chunk.objects.all()[:160]]
    embedder = get_embedder()
    t = time.perf_counter()
    embedder.embed_passages(texts)
    embed_rate = len(texts) / (time.perf_counter() - t)
    cmd.stdout.write(f"real corpus: unchanged re-ingest {reingest_s:.2f} s ({report.unchanged} docs), "
                     f"{embedder.signature} embeds {embed_rate:.1f} chunks/s")
    vocabulary = list(Term.objects.values_list("term", "tf"))
    return {"reingest_unchanged_s": round(reingest_s, 3), "embed_chunks_per_s": round(embed_rate, 1), "_vocabulary": vocabulary}


BULK_TABLES = ("knowledge_chunk", "knowledge_term", "knowledge_gram", "knowledge_sentence")


def _suspend_indexes(cur, tables) -> list[str]:
    """Drop the tables' secondary B-tree indexes and switch off foreign-key triggers for a bulk COPY.

    Maintaining a (chunk, term) and a (term) index row by row over ~10M posting rows takes
    most of a load; one sorted build afterwards is several times faster. The synthetic rows
    are consistent by construction, so the per-row foreign-key checks are skipped too
    (`session_replication_role = replica`, reset by the caller). Returns the statements that
    put every index and unique constraint back, in order. HNSW indexes are left to
    `drop_hnsw`/`create_hnsw`.
    """
    cur.execute(
        """
        SELECT i.relname, pg_get_indexdef(i.oid), con.conname, t.relname
        FROM pg_index x
        JOIN pg_class i ON i.oid = x.indexrelid
        JOIN pg_class t ON t.oid = x.indrelid
        JOIN pg_am am ON am.oid = i.relam
        LEFT JOIN pg_constraint con ON con.conindid = i.oid AND con.contype = 'u'
        WHERE t.relname = ANY(%s) AND NOT x.indisprimary AND am.amname = 'btree'
        """,
        [list(tables)],
    )
    rebuild = []
    for index, definition, constraint, table in cur.fetchall():
        if constraint:
            cur.execute(f"ALTER TABLE {table} DROP CONSTRAINT {constraint}")
            rebuild += [definition, f"ALTER TABLE {table} ADD CONSTRAINT {constraint} UNIQUE USING INDEX {index}"]
        else:
            cur.execute(f"DROP INDEX {index}")
            rebuild.append(definition)
    cur.execute("SET LOCAL session_replication_role = replica")
    return rebuild


def _load_synthetic(cmd, n_chunks: int, dimension: int, vocabulary: list[tuple[str, int]]) -> float:
    from pgvector.psycopg import register_vector

    rng = random.Random(11)
    np_rng = np.random.default_rng(11)
    freq: dict[str, int] = {}
    for term, tf in vocabulary:
        freq[term] = freq.get(term, 0) + tf
    terms, weights = zip(*freq.items())
    headings = [t for t in terms if len(t) >= 2][:400]
    t0 = time.perf_counter()
    # One transaction: a load that fails half-way leaves the previous corpus and every index as they were.
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cur.execute("TRUNCATE knowledge_term, knowledge_gram, knowledge_sentence, knowledge_chunk, knowledge_document CASCADE")
        drop_hnsw()
        retype_embedding(dimension)
        register_vector(cur.cursor.connection)
        raw = cur.cursor.connection.cursor()  # a cursor made after registration knows the vector type
        n_docs = max(1, n_chunks // 100)
        with raw.copy("COPY knowledge_document (id, path, title, doc_type, audience, version, content_hash, body, meta, ingested_at) FROM STDIN") as cp:
            for d in range(n_docs):
                cp.write_row((d + 1, f"synthetic/{d:05d}.md", f"合成文档{d}", "sop", "staff", "1", "x", "", "{}", "2026-01-01T00:00:00Z"))
        chunk_rows, term_rows, gram_rows, sentence_rows = [], [], [], []

        def unit_vector():
            v = np_rng.standard_normal(dimension).astype(np.float32)
            return v / np.linalg.norm(v)

        for cid in tqdm(range(1, n_chunks + 1), desc="synthesise", file=cmd.stderr):
            words = rng.choices(terms, weights=weights, k=rng.randint(30, 90))
            counts: dict[str, int] = {}
            for w in words:
                counts[w] = counts.get(w, 0) + 1
            vec = np_rng.standard_normal(dimension).astype(np.float32)
            vec /= np.linalg.norm(vec)
            doc = (cid - 1) // 100 + 1
            chunk_rows.append((cid, doc, (cid - 1) % 100, f"合成文档{doc - 1} > {rng.choice(headings)}", "".join(words),
                               "manager" if cid % 50 == 0 else "staff", vec, len(words)))
            term_rows.extend((cid, t, n, len(words)) for t, n in counts.items())
            grams = gram_counts("".join(words))
            gram_rows.extend((cid, g, n, sum(grams.values())) for g, n in grams.items())
            audience = "manager" if cid % 50 == 0 else "staff"
            sentence_rows.extend((cid, "sentence", "".join(words[i::SENTENCES_PER_CHUNK]), audience, unit_vector())
                                 for i in range(SENTENCES_PER_CHUNK))
            if cid % 2 == 0:
                sentence_rows.append((cid, "alias", "".join(words[:6]), audience, unit_vector()))
        cmd.stderr.write("copying rows (secondary indexes and foreign-key checks off) …")
        rebuild = _suspend_indexes(cur, BULK_TABLES)
        with raw.copy("COPY knowledge_chunk (id, document_id, ordinal, section_path, text, audience, embedding, n_terms) FROM STDIN WITH (FORMAT BINARY)") as cp:
            cp.set_types(["int8", "int8", "int4", "varchar", "text", "varchar", "vector", "int4"])
            for row in chunk_rows:
                cp.write_row(row)
        with raw.copy("COPY knowledge_term (chunk_id, term, tf, n_terms) FROM STDIN") as cp:
            for row in term_rows:
                cp.write_row(row)
        with raw.copy("COPY knowledge_gram (chunk_id, term, tf, n_terms) FROM STDIN") as cp:
            for row in gram_rows:
                cp.write_row(row)
        # `generated` has no database default: a COPY that leaves it out writes NULL and fails. The
        # synthetic question aliases stand for the forms the product writes at ingest.
        with raw.copy("COPY knowledge_sentence (chunk_id, kind, text, audience, embedding, generated) FROM STDIN WITH (FORMAT BINARY)") as cp:
            cp.set_types(["int8", "varchar", "text", "varchar", "vector", "bool"])
            for row in sentence_rows:
                cp.write_row((*row, row[1] == "alias"))
        cur.execute("SELECT setval(pg_get_serial_sequence('knowledge_chunk', 'id'), %s)", [n_chunks])
        cur.execute("SET maintenance_work_mem = '1GB'")
        for statement in tqdm(rebuild, desc="rebuild indexes", file=cmd.stderr):
            cur.execute(statement)
        cur.execute("SET LOCAL session_replication_role = DEFAULT")
        cmd.stderr.write("building HNSW index …")
        create_hnsw()
    with connection.cursor() as cur:  # VACUUM cannot run inside a transaction
        for table in ("knowledge_term", "knowledge_gram", "knowledge_sentence", "knowledge_chunk"):
            cur.execute(f"VACUUM ANALYZE {table}")
    embedder = get_embedder()
    meta = IndexMeta.objects.first() or IndexMeta(signature=embedder.signature, backend=embedder.backend, model=embedder.model, dimension=dimension)
    meta.signature, meta.backend, meta.model, meta.dimension = embedder.signature, embedder.backend, embedder.model, dimension
    refresh_index_stats(meta)
    return time.perf_counter() - t0


def bench_retrieval(cmd, opts) -> dict:
    n_chunks = opts["chunks"]
    real = _real_corpus_figures(cmd)
    vocabulary = real.pop("_vocabulary")
    embedder = get_embedder()
    db = use_bench_database("retrieval")
    cmd.stdout.write(f"bench retrieval: database {db}, {n_chunks:,} synthetic chunks")
    existing = Chunk.objects.count()
    load_s = None
    # Loaded before term lengths were stored, or before the sentence and bigram channels existed.
    stale = Term.objects.filter(n_terms=0).exists() or not Sentence.objects.exists() or not Gram.objects.exists()
    record = Path(settings.BASE_DIR) / "var" / "bench" / f"retrieval_load_{n_chunks}.json"
    if opts.get("reload") or existing != n_chunks or stale or (IndexMeta.objects.first() or IndexMeta(dimension=0)).dimension != embedder.dimension:
        load_s = _load_synthetic(cmd, n_chunks, embedder.dimension, vocabulary)
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps({"chunks": n_chunks, "seconds": load_s}))
    elif record.exists():
        # The synthetic corpus is reused between runs; its load throughput was measured when it was built.
        load_s = json.loads(record.read_text())["seconds"]
    elif not TermStat.objects.exists():
        refresh_index_stats(IndexMeta.objects.first())
    with connection.cursor() as cur:  # a corpus loaded before the per-kind sentence indexes gets them now
        cur.execute("SET maintenance_work_mem = '1GB'")
    create_hnsw()
    meta = index_meta()

    questions = [q["query"] for q in load_golden() if q.get("kind", "policy") == "policy"]
    n_queries = max(opts["queries"], len(questions))
    timings = {k: [] for k in ("embed_query", "vector", "lexical", "fusion", "retrieval")}
    audiences = ["staff"]
    params = fusion_params(meta)
    embedder.embed_query(expanded_query(questions[0], query_terms(questions[0])))  # warm: model and jieba loaded once
    for i in tqdm(range(n_queries), desc="queries", file=cmd.stderr):
        q = questions[i % len(questions)]
        t = time.perf_counter()
        terms = query_terms(q)
        embedder.query_cache.clear()  # the questions repeat: time the model, not the query cache
        qvec = embedder.embed_query(expanded_query(q, terms))
        timings["embed_query"].append((time.perf_counter() - t) * 1000)
        spans: dict = {}
        with index_read_once():  # as in search() and a chat question: the index metadata read once, like `meta` here
            current_index()
            t1 = time.perf_counter()
            retrieve(q, terms, qvec, meta, audiences, params, spans)  # search()'s own path after the embedding
            timings["retrieval"].append((time.perf_counter() - t1) * 1000)
        for key in ("vector", "lexical", "fusion"):
            timings[key].append(spans[key])

    with connection.cursor() as cur:
        literal = "[" + ",".join(f"{x:.6f}" for x in embedder.embed_query(questions[0])) + "]"
        cur.execute(
            "EXPLAIN SELECT c.id FROM knowledge_chunk c WHERE c.audience = ANY(%s) ORDER BY c.embedding <=> %s::vector LIMIT 30",
            [audiences, literal],
        )
        plan = "\n".join(r[0] for r in cur.fetchall())
        plan = re.sub(r"'\[[-0-9.,e]+\]'", "'[…query vector…]'", plan)
    hnsw_used = HNSW_INDEX in plan
    figures = {
        "chunks": Chunk.objects.count(),
        "embed_query_p50_ms": round(percentile(timings["embed_query"], 50), 2),
        "vector_p50_ms": round(percentile(timings["vector"], 50), 2),
        "lexical_p50_ms": round(percentile(timings["lexical"], 50), 2),
        "fusion_p50_ms": round(percentile(timings["fusion"], 50), 2),
        "retrieval_p50_ms": round(percentile(timings["retrieval"], 50), 2),
        "retrieval_p95_ms": round(percentile(timings["retrieval"], 95), 2),
        "vector_p95_ms": round(percentile(timings["vector"], 95), 2),
        "lexical_p95_ms": round(percentile(timings["lexical"], 95), 2),
        "embed_query_p95_ms": round(percentile(timings["embed_query"], 95), 2),
        "ingest_chunks_per_s": round(n_chunks / load_s, 1) if load_s else None,
        "hnsw_used": hnsw_used,
        **real,
    }
    cmd.stdout.write("EXPLAIN (vector channel):\n" + plan)
    cmd.stdout.write(
        f"bench retrieval: {figures['chunks']:,} chunks · p50/p95 ms: embed {figures['embed_query_p50_ms']}/{figures['embed_query_p95_ms']} · "
        f"vector {figures['vector_p50_ms']}/{figures['vector_p95_ms']} · lexical {figures['lexical_p50_ms']}/{figures['lexical_p95_ms']} · "
        f"fusion {figures['fusion_p50_ms']} · retrieval (excl. embedding) {figures['retrieval_p50_ms']}/{figures['retrieval_p95_ms']} · "
        f"bulk ingest (COPY + HNSW build) {figures['ingest_chunks_per_s'] or 'n/a: run with --reload'} chunks/s · HNSW used: {'yes' if hnsw_used else 'NO'} · "
        f"unchanged re-ingest {figures['reingest_unchanged_s']} s · embedding {figures['embed_chunks_per_s']} chunks/s"
    )
    return figures


# --- bench ingest: the knowledge owner's upload and publish at scale ---------------------------

def _synthetic_docx(n: int, sentences: list[str], sections: int, *, changed_section: int | None = None) -> bytes:
    """Generated SOP number n in Word (the same n, the same document): numbered headings, steps, now
    and then a table; its sentences drawn from the bundled corpus with their figures changed, so
    no two documents embed alike. `changed_section`: that section rewritten, the rest as before."""
    import io

    import docx

    rng = random.Random(n)

    def vary(text: str) -> str:
        return re.sub(r"\d+", lambda m: str(max(1, int(m.group()) + rng.randint(-3, 9))), text)

    d = docx.Document()
    d.core_properties.title = f"合成制度{n:04d}"
    numerals = "一二三四五六七八九十"
    for i in range(sections):
        d.add_heading(f"{numerals[i % 10]}、第{n}号制度的第{i + 1}部分", level=1)
        picked = rng.sample(sentences, k=rng.randint(2, 5))
        if i == changed_section:
            picked = [f"本节于修订版重写：{s}" for s in picked[:2]]
        for s in picked:
            d.add_paragraph(f"{vary(s)}（制度{n}-{i + 1}）", style="List Number" if rng.random() < 0.4 else None)
        if rng.random() < 0.25:
            table = d.add_table(rows=3, cols=3)
            for r, row in enumerate((("项目", "标准", "负责人"), (f"检查{n}-{i}", f"{rng.randint(2, 30)} 分钟", "值班经理"),
                                     (f"记录{n}-{i}", f"{rng.randint(1, 7)} 天", "店长"))):
                for c, value in enumerate(row):
                    table.cell(r, c).text = value
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


def bench_ingest(cmd, opts) -> dict:
    """`bench ingest --documents 500`: generated DOCX documents (~10 sections each) uploaded and
    published through the knowledge owner's services, in a database of its own with an empty
    embedding cache (every text is really embedded); then one document changed and re-uploaded,
    timed from upload to searchable. Prints documents/s, sections/s, peak memory, time until searchable."""
    import resource

    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from core.roles import sync_roles
    from knowledge.chunking import split_sentences
    from knowledge.documents import document_publish_many, document_upload
    from knowledge.embedders import use_every_core_for_a_batch

    threads = use_every_core_for_a_batch()
    n_docs, per_doc = opts["documents"], 10
    db = use_bench_database("ingest")
    sync_roles()
    with connection.cursor() as cur:  # nothing embedded before: every figure pays for the model
        cur.execute("TRUNCATE knowledge_embeddingcache, knowledge_term, knowledge_termstat, knowledge_gram, knowledge_gramstat, "
                    "knowledge_sentence, knowledge_chunk, knowledge_sectionalias, knowledge_indexmeta, knowledge_document CASCADE")
    user, _ = get_user_model().objects.get_or_create(username="bench_ingest_hq", defaults={"is_staff": True})
    user.groups.add(Group.objects.get(name="hq"))
    user = get_user_model().objects.get(pk=user.pk)  # permissions read afresh
    sentences = [s for p in sorted((Path(settings.BASE_DIR) / "corpus").glob("*.md"))
                 for s in split_sentences(re.sub(r"(?m)^(#.*|常见问法.*|---.*|\|.*)$", "", p.read_text("utf-8"))) if 12 <= len(s) <= 80]
    cmd.stdout.write(f"bench ingest: database {db}, {n_docs} documents × {per_doc} sections, embedder {get_embedder().signature}, "
                     f"{threads} embedding threads")
    files = [_synthetic_docx(n, sentences, per_doc) for n in tqdm(range(n_docs), desc="generate docx", file=cmd.stderr)]
    t0 = time.perf_counter()
    versions = [document_upload(user=user, name=f"合成制度{n:04d}.docx", data=data)
                for n, data in enumerate(tqdm(files, desc="upload", file=cmd.stderr))]
    upload_s = time.perf_counter() - t0
    sections = sum(len(v.sections) for v in versions)
    t1 = time.perf_counter()
    bar = tqdm(total=len(versions), desc="publish", unit="doc", file=cmd.stderr)
    document_publish_many(versions=versions, user=user, run_now=True, progress=lambda done, total: bar.update(1))
    bar.close()
    publish_s = time.perf_counter() - t1
    probe_n = min(77, n_docs - 1)
    probe = search(f"第{probe_n}号制度的第3部分", audiences=["staff"], k=3)
    searchable = bool(probe.hits) and probe.top.document == f"合成制度{probe_n:04d}"
    # The same document with one section rewritten, uploaded again: how soon does it answer?
    changed = _synthetic_docx(probe_n, sentences, per_doc, changed_section=3)
    t2 = time.perf_counter()
    version = document_upload(user=user, name=f"合成制度{probe_n:04d}.docx", data=changed)
    document_publish_many(versions=[version], user=user, run_now=True)
    reupload_s = time.perf_counter() - t2
    version.refresh_from_db()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    report = {"documents": n_docs, "sections": sections, "chunks": Chunk.objects.count(), "upload_s": round(upload_s, 1),
              "publish_s": round(publish_s, 1), "documents_per_s": round(n_docs / (upload_s + publish_s), 2),
              "sections_per_s": round(sections / (upload_s + publish_s), 1), "time_until_searchable_s": round(upload_s + publish_s, 1),
              "searchable": searchable, "reupload_searchable_s": round(reupload_s, 2), "reupload_version": version.number,
              "reupload_status": version.status, "peak_memory_mb": round(peak_mb), "embedding_threads": threads}
    cmd.stdout.write(f"  upload {upload_s:.1f} s · publish {publish_s:.1f} s · {report['documents_per_s']} documents/s · "
                     f"{report['sections_per_s']} sections/s · peak memory {report['peak_memory_mb']} MB")
    cmd.stdout.write(f"bench ingest: {n_docs} documents, {sections} sections, {report['chunks']} chunks searchable after "
                     f"{report['time_until_searchable_s']} s; one changed document re-uploaded and searchable in {reupload_s:.2f} s "
                     f"(v{version.number} {version.status})")
    return report
