"""The retrieval channels added for questions nobody tuned for: sentence vectors, question
aliases (常见问法), the character-bigram channel, and the fusion chosen on data."""
import pytest

from knowledge.embedders import HashingEmbedder
from knowledge.models import Chunk, IndexMeta, SectionAlias, Sentence
from knowledge.selectors import fusion_params, index_meta, lexical_channel, nearest_sentence_channel, search
from knowledge.services import corpus_ingest, section_alias_add
from knowledge.text import grams, tokenize
from ops.tests.factories import make_user

pytestmark = pytest.mark.django_db

HEAD = "---\ntitle: {title}\ndoc_type: sop\naudience: staff\n---\n# {title}\n\n"


def write(folder, name, title, sections: dict[str, str]):
    body = "".join(f"## {h}\n\n{t}\n\n" for h, t in sections.items())
    (folder / name).write_text(HEAD.format(title=title) + body, encoding="utf-8")


@pytest.fixture
def emb():
    return HashingEmbedder(256)


@pytest.fixture
def corpus(tmp_path, emb):
    write(tmp_path, "rooms.md", "包厢规定", {
        "包厢收费": "包厢低消按时段计算，周末上浮两成。\n\n常见问法：订包厢要花多少钱；包厢周末贵不贵",
        "包厢装修": "包厢的墙面每年检查一次，地毯每季度更换。",
        "包厢清洁": "每场结束后清理桌面。包厢的沙发每天用湿布擦拭。麦克风每场结束后用酒精棉片消毒。音响遥控器放回充电座。",
    })
    corpus_ingest(path=tmp_path, embedder=emb, rebuild=True)
    return tmp_path


def test_alias_lines_leave_the_section_text_and_point_at_their_section(corpus):
    chunk = Chunk.objects.get(section_path="包厢规定 > 包厢收费")
    assert "常见问法" not in chunk.text and "订包厢" not in chunk.text
    aliases = Sentence.objects.filter(kind=Sentence.Kind.ALIAS, generated=False)
    assert sorted(aliases.values_list("text", flat=True)) == ["包厢周末贵不贵", "订包厢要花多少钱"]
    assert {a.chunk_id for a in aliases} == {chunk.id}
    assert SectionAlias.objects.filter(source="corpus", section_path="包厢规定 > 包厢收费").count() == 2


def test_alias_channel_finds_the_section_by_the_way_staff_ask(corpus, emb):
    ranked = nearest_sentence_channel(emb.embed_query("订包厢要花多少钱"), ["staff"], 5, kind="alias")
    assert ranked[0].section_path == "包厢规定 > 包厢收费"
    assert ranked[0].alias_text == "订包厢要花多少钱" and ranked[0].alias_score == pytest.approx(1.0, abs=1e-4)


def test_sentence_channel_scores_a_chunk_by_its_best_sentence(corpus, emb):
    question = "麦克风每场结束后用酒精棉片消毒"
    best = nearest_sentence_channel(emb.embed_query(question), ["staff"], 5, kind="sentence")[0]
    assert best.section_path == "包厢规定 > 包厢清洁"
    assert best.sentence_text == "麦克风每场结束后用酒精棉片消毒。"
    # Each sentence has its own vector; the chunk's own vector mixes four of them.
    assert Sentence.objects.filter(chunk__section_path="包厢规定 > 包厢清洁", kind="sentence").count() == 4


def test_bigram_channel_matches_what_word_segmentation_splits_apart(tmp_path, emb):
    write(tmp_path, "rooms.md", "包厢规定", {
        "包厢收费": "包厢低消按时段计算，周末和节假日另行上浮两成，以前台公示为准。",
        "包厢装修": "包厢墙面每年检查一次。",
        "包厢清洁": "包厢桌面每场清理一次。",
    })
    corpus_ingest(path=tmp_path, embedder=emb, rebuild=True)
    question = "包厢最低消费是多少"
    # jieba reads 最低消费 while the section says 低消: the word channel sees only 包厢,
    # which every section shares, and ranks the right section last.
    assert "低消" not in tokenize(question)
    words = lexical_channel(tokenize(question), index_meta(), ["staff"], 5)
    assert words[0].section_path != "包厢规定 > 包厢收费"
    bigrams = lexical_channel(grams(question), index_meta(), ["staff"], 5, channel="gram")
    assert bigrams[0].section_path == "包厢规定 > 包厢收费"
    assert bigrams[0].gram_score > bigrams[1].gram_score


def test_grams_skip_function_word_pairs():
    assert "能不" not in grams("能不能退") and "不能" not in grams("能不能退")
    assert grams("扎啤管路") == ["扎啤", "啤管", "管路"]


def test_admin_alias_is_embedded_at_once_and_survives_reingest_and_rebuild(corpus, emb):
    manager = make_user("alias_mgr", role="manager")
    alias = section_alias_add(document_path="rooms.md", section_path="包厢规定 > 包厢装修", question="墙皮掉了多久修一次",
                              user=manager, embedder=emb)
    hit = nearest_sentence_channel(emb.embed_query("墙皮掉了多久修一次"), ["staff"], 3, kind="alias")[0]
    assert hit.section_path == "包厢规定 > 包厢装修"
    # Re-ingest after a change, then a full rebuild: the alias is attached again each time.
    write(corpus, "rooms.md", "包厢规定", {"包厢收费": "包厢低消按时段计算。", "包厢装修": "包厢的墙面每半年检查一次。"})
    corpus_ingest(path=corpus, embedder=emb)
    corpus_ingest(path=corpus, embedder=emb, rebuild=True)
    assert Sentence.objects.filter(kind="alias", text=alias.question, chunk__section_path="包厢规定 > 包厢装修").count() == 1
    # Its section removed: the alias stays, as an orphan, and points at nothing.
    write(corpus, "rooms.md", "包厢规定", {"包厢收费": "包厢低消按时段计算。"})
    corpus_ingest(path=corpus, embedder=emb)
    assert SectionAlias.objects.filter(pk=alias.pk).exists()
    assert not Sentence.objects.filter(kind="alias", text=alias.question).exists()


def test_fusion_stored_with_the_index_wins_over_settings(settings):
    meta = IndexMeta.objects.get()
    settings.SM_RRF_K = 60
    assert fusion_params(meta)["k"] == 60
    meta.fusion = {"k": 3, "weights": {"vector": 1.0, "alias": 2.0}}
    assert fusion_params(meta)["k"] == 3 and fusion_params(meta)["weights"]["alias"] == 2.0


def test_search_reports_every_channel(corpus):
    result = search("订包厢要花多少钱", audiences=["staff"], k=3)
    assert set(result.rankings) == {"vector", "sentence", "alias", "lexical", "gram"}
    assert result.hits[0].section_path == "包厢规定 > 包厢收费"


def test_an_index_built_before_sentence_vectors_is_rebuilt_on_the_next_ingest(corpus, emb):
    from django.db import connection

    from knowledge.services import HNSW_INDEXES

    # What an upgraded database looks like: chunks, no sentence rows, an untyped vector column.
    with connection.cursor() as cur:
        for _, index, predicate in HNSW_INDEXES:
            if predicate:
                cur.execute(f"DROP INDEX IF EXISTS {index}")
        cur.execute("DELETE FROM knowledge_sentence")
        cur.execute("ALTER TABLE knowledge_sentence ALTER COLUMN embedding TYPE vector")
    report = corpus_ingest(path=corpus, embedder=emb)
    assert report.rebuilt and Sentence.objects.filter(kind="sentence").exists() and Sentence.objects.filter(kind="alias").exists()


def test_each_sentence_kind_is_searched_through_its_own_partial_index(corpus, emb):
    import numpy as np
    from django.db import connection

    from knowledge.selectors.channels import _NEAREST_SQL

    # Enough rows that walking the graph beats sorting them all, as on a real corpus.
    chunk = Chunk.objects.first()
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((4000, 256)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    Sentence.objects.bulk_create(Sentence(chunk=chunk, kind="alias" if i % 4 == 0 else "sentence", text=f"s{i}", audience="staff",
                                          embedding=v.tolist()) for i, v in enumerate(vectors))
    literal = "[" + ",".join(f"{x:.6f}" for x in emb.embed_query("包厢多少钱")) + "]"
    # The three walks are one statement (search's vector half): each through its own index.
    sql = " UNION ALL ".join(f"({_NEAREST_SQL[kind]})" for kind in ("vector", "alias", "sentence"))
    with connection.cursor() as cur:
        cur.execute("ANALYZE knowledge_sentence")
        for scope_all, scope in ((True, []), (False, ["store:1", "city:广州"])):  # every store, or a store's staff
            cur.execute("EXPLAIN " + sql, {"q": literal, "audiences": ["staff"], "scope_all": scope_all, "scope": scope, "limit": 40, "rows": 80})
            plan = "\n".join(r[0] for r in cur.fetchall())
            for kind in ("sentence", "alias"):
                assert f"knowledge_sentence_{kind}_hnsw" in plan, plan


def test_with_no_sentence_weight_the_sentence_ranking_covers_the_other_channels_candidates(corpus, emb):
    # Fusion gives sentences weight 0 by default: search() then skips the walk through the
    # largest vector index and scores the best sentence of every candidate fusion kept,
    # exactly as the full channel would.
    question = "麦克风用什么消毒"
    result = search(question, audiences=["staff"], embedder=emb, weights={"sentence": 0.0})
    others = {h.chunk_id for c, hits in result.rankings.items() if c != "sentence" for h in hits}
    ranked = result.rankings["sentence"]
    assert ranked and {h.chunk_id for h in ranked} <= others
    full = {h.chunk_id: h for h in nearest_sentence_channel(emb.embed_query(question), ["staff"], 10, kind="sentence")}
    for hit in ranked:
        assert hit.sentence_score == pytest.approx(full[hit.chunk_id].sentence_score, abs=1e-5)
        assert hit.sentence_text == full[hit.chunk_id].sentence_text


def test_a_section_snapshot_follows_the_next_ingest(corpus, emb):
    from knowledge.selectors import section_units

    hit = search("麦克风消毒", audiences=["staff"], embedder=emb).rankings["vector"][0]
    hit = next(h for h in search("麦克风消毒", audiences=["staff"], embedder=emb).hits if h.section_path.endswith("包厢清洁"))
    assert any("酒精棉片" in u.text for u in section_units(hit))
    write(corpus, "rooms.md", "包厢规定", {"包厢清洁": "麦克风每场结束后用消毒湿巾擦拭。"})
    corpus_ingest(path=corpus, embedder=emb)
    hit = next(h for h in search("麦克风消毒", audiences=["staff"], embedder=emb).hits if h.section_path.endswith("包厢清洁"))
    assert [u.text for u in section_units(hit)] == ["麦克风每场结束后用消毒湿巾擦拭。"]


def test_snapshotting_every_section_at_once_equals_reading_each_section(corpus):
    # A worker's warm-up reads every section in three queries instead of three per section;
    # what it keeps must be exactly what a question reading one section would build.
    import numpy as np

    from knowledge.selectors.index import _SNAPSHOTS
    from knowledge.selectors.sections import _build_snapshot, snapshot_every_section

    _SNAPSHOTS.clear()
    assert snapshot_every_section() == 3
    kept = {k[1:]: v for k, v in _SNAPSHOTS.items() if k[0] == "section"}
    assert len(kept) == 3
    for (doc, path), snap in kept.items():
        one = _build_snapshot(doc, path)
        assert (snap.chunk_ids, snap.units, snap.terms) == (one.chunk_ids, one.units, one.terms), path
        assert np.allclose(snap.chunk_vectors, one.chunk_vectors) and np.allclose(snap.unit_vectors, one.unit_vectors)
        assert (snap.has_vector == one.has_vector).all()
        assert sorted(map(tuple, snap.sentence_vectors.round(5))) == sorted(map(tuple, one.sentence_vectors.round(5)))
