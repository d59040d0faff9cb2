"""Incremental ingestion: add / change / delete, atomic replacement, signature change."""
import pytest
from django.db import connection

from knowledge.embedders import HashingEmbedder
from knowledge.models import Chunk, Document, IndexMeta
from knowledge.services import corpus_ingest

pytestmark = pytest.mark.django_db

DOC = "---\ntitle: {title}\ndoc_type: sop\naudience: {audience}\nversion: '1'\nupdated: 2026-01-01\n---\n# {title}\n\n## 第一节\n\n{body}\n\n## 第二节\n\n第二节的内容。\n"


def write(folder, name, title, body="第一节的内容。", audience="staff"):
    (folder / name).write_text(DOC.format(title=title, body=body, audience=audience), encoding="utf-8")


@pytest.fixture
def corpus(tmp_path):
    write(tmp_path, "a.md", "文档甲")
    write(tmp_path, "b.md", "文档乙")
    write(tmp_path, "c.md", "文档丙", audience="manager")
    return tmp_path


def column_dim():
    with connection.cursor() as cur:
        cur.execute("SELECT atttypmod FROM pg_attribute WHERE attrelid='knowledge_chunk'::regclass AND attname='embedding'")
        return cur.fetchone()[0]


def test_add_skip_change_delete(corpus):
    emb = HashingEmbedder(256)
    first = corpus_ingest(path=corpus, embedder=emb, rebuild=True)
    assert (first.added, first.changed, first.removed, first.chunks) == (3, 0, 0, 6)
    assert Chunk.objects.filter(audience="manager").count() == 2

    again = corpus_ingest(path=corpus, embedder=emb)
    assert (again.added, again.changed, again.removed, again.unchanged) == (0, 0, 0, 3)

    old_ids = set(Chunk.objects.filter(document__path="a.md").values_list("id", flat=True))
    write(corpus, "a.md", "文档甲", body="改过的第一节。")
    changed = corpus_ingest(path=corpus, embedder=emb)
    assert (changed.changed, changed.unchanged) == (1, 2)
    texts = list(Chunk.objects.filter(document__path="a.md").values_list("text", flat=True))
    assert "改过的第一节。" in texts and "第一节的内容。" not in texts
    assert not old_ids & set(Chunk.objects.filter(document__path="a.md").values_list("id", flat=True))

    (corpus / "b.md").unlink()
    write(corpus, "d.md", "文档丁")
    mixed = corpus_ingest(path=corpus, embedder=emb)
    assert (mixed.added, mixed.removed) == (1, 1)
    assert set(Document.objects.values_list("path", flat=True)) == {"a.md", "c.md", "d.md"}
    assert IndexMeta.objects.get().n_chunks == Chunk.objects.count() == 6
    assert "1 added" in mixed.line() and "1 removed" in mixed.line()


def test_a_bad_document_leaves_the_old_index_untouched(corpus):
    emb = HashingEmbedder(256)
    corpus_ingest(path=corpus, embedder=emb, rebuild=True)
    before = list(Chunk.objects.order_by("id").values_list("id", "text"))
    write(corpus, "a.md", "文档甲", body="新的内容。")
    (corpus / "z.md").write_text("---\ntitle: 坏文档\ndoc_type: nonsense\n---\n# 坏文档\n\n内容。\n", encoding="utf-8")
    with pytest.raises(ValueError, match="doc_type"):
        corpus_ingest(path=corpus, embedder=emb)
    assert list(Chunk.objects.order_by("id").values_list("id", "text")) == before


def test_embedder_signature_change_forces_full_rebuild_and_retypes_the_column(corpus):
    corpus_ingest(path=corpus, embedder=HashingEmbedder(256), rebuild=True)
    assert column_dim() == 256
    meta = IndexMeta.objects.get()
    meta.refusal_threshold = 0.5
    meta.save()
    report = corpus_ingest(path=corpus, embedder=HashingEmbedder(128))
    assert report.rebuilt and report.added == 3 and "embedder changed" in report.warning
    assert column_dim() == 128
    meta = IndexMeta.objects.get()
    assert meta.signature == "hashing:char1-3:128" and meta.refusal_threshold is None
    # PostgreSQL itself now refuses a vector of the old size: mixing is impossible.
    from django.db import transaction
    from django.db.utils import DataError

    with pytest.raises(DataError), transaction.atomic():
        Chunk.objects.filter(pk=Chunk.objects.first().pk).update(embedding=[0.1] * 256)


def test_hnsw_index_exists_after_bulk_load(corpus):
    corpus_ingest(path=corpus, embedder=HashingEmbedder(256), rebuild=True)
    with connection.cursor() as cur:
        cur.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'knowledge_chunk_embedding_hnsw'")
        assert "hnsw" in cur.fetchone()[0]


def test_ingest_command_prints_a_line_of_numbers(corpus):
    import io

    from django.core.management import call_command

    out = io.StringIO()
    call_command("ingest", str(corpus), "--rebuild", stdout=out, stderr=io.StringIO())
    assert "3 added" in out.getvalue() and "chunks in index" in out.getvalue()


def test_the_admin_chunk_list_names_the_audience_in_chinese(client, django_user_model):
    # The 切片 list showed raw 「staff」/「manager」.
    doc = Document.objects.create(path="t/audience.md", title="可见范围测试", doc_type=Document.DocType.values[0],
                                  audience="manager", content_hash="x", body="正文")
    Chunk.objects.create(document=doc, ordinal=0, section_path="可见范围测试 > 一节", text="正文", audience="manager", embedding=[0.1] * 256)
    admin = django_user_model.objects.create_superuser("chunk_admin", password="x")
    client.force_login(admin)
    page = client.get("/admin/knowledge/chunk/?audience__exact=manager").content.decode()
    import re
    cells = re.findall(r"field-audience[^>]*>([^<]*)<", page)
    assert cells and "仅店长" in cells and "manager" not in cells, cells


def test_a_fresh_index_reads_the_bundled_vectors_and_embeds_only_what_changed(corpus, tmp_path, settings, monkeypatch):
    # The first ingest of a fresh clone embedded ~1,900 texts: 63 s on a 2-core machine where e5
    # costs 2 ms a token. It now reads the vectors shipped with the code for the bundled corpus.
    import numpy as np

    from knowledge import services
    from knowledge.models import EmbeddingCache

    settings.SM_CORPUS_DIR = corpus
    emb = HashingEmbedder(256)
    corpus_ingest(path=corpus, embedder=emb, rebuild=True)
    bundle = tmp_path / "bundle" / "vectors.npz"
    bundle.parent.mkdir()
    written = services.export_bundled_vectors(emb, bundle)
    assert written == len(services.corpus_embedded_texts(corpus)) > 0
    monkeypatch.setattr(services.vectors, "BUNDLED_VECTORS", bundle)
    expected = {c.section_path: np.asarray(c.embedding) for c in Chunk.objects.all()}

    EmbeddingCache.objects.all().delete()  # a fresh database
    embedded = []
    real = emb.embed_passages
    monkeypatch.setattr(emb, "embed_passages", lambda texts: embedded.extend(texts) or real(texts))
    write(corpus, "a.md", "文档甲", body="改过的第一节。")
    corpus_ingest(path=corpus, embedder=emb, rebuild=True)
    assert embedded and all("改过的第一节" in t for t in embedded)  # only the changed text
    for c in Chunk.objects.exclude(document__path="a.md"):
        assert np.allclose(np.asarray(c.embedding), expected[c.section_path])
    # Another embedder's bundle is not used.
    assert services.bundled_vectors("e5:other") == {}
