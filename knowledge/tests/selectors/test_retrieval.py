"""Hybrid retrieval: BM25 against rank_bm25, RRF, visibility by role, the search API."""
import numpy as np
import pytest
from rank_bm25 import BM25Okapi
from rest_framework.test import APIClient

from knowledge.embedders import HashingEmbedder, OllamaEmbedder, OpenAIEmbedder
from knowledge.models import Chunk, Term
from knowledge.selectors import Hit, index_meta, lexical_channel, rrf_fuse, search, title_boost_rerank
from knowledge.text import query_terms, tokenize
from ops.tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("query", ["满减和折扣券能一起用吗", "会员卡能跨店用吗", "客人喝多了还要酒", "扎啤机管路清洗"])
def test_bm25_scores_match_rank_bm25_on_the_same_tokens(query):
    ids = list(Chunk.objects.order_by("id").values_list("id", flat=True))
    tokens = {cid: [] for cid in ids}
    for cid, term, tf in Term.objects.values_list("chunk_id", "term", "tf"):
        tokens[cid].extend([term] * tf)
    reference = BM25Okapi([tokens[cid] for cid in ids])
    terms = query_terms(query)
    expected = dict(zip(ids, reference.get_scores(terms)))
    hits = lexical_channel(terms, index_meta(), ["staff", "manager"], limit=len(ids))
    assert hits, query
    for hit in hits:
        assert hit.lexical_score == pytest.approx(expected[hit.chunk_id], rel=1e-6, abs=1e-9)
    best = max(expected, key=expected.get)
    assert hits[0].chunk_id == best


def _hit(cid, path="文档 > 节"):
    return Hit(cid, 1, "文档", "x.md", path, "", "staff")


def test_rrf_rewards_agreement_and_respects_weights():
    vector = [_hit(1), _hit(2), _hit(3)]
    lexical = [_hit(3), _hit(2), _hit(4)]
    fused = rrf_fuse({"vector": vector, "lexical": lexical}, {"vector": 1.0, "lexical": 1.0}, k=60)
    scores = {h.chunk_id: h.score for h in fused}
    assert scores[2] == pytest.approx(1 / 62 + 1 / 62)
    assert scores[3] == pytest.approx(1 / 63 + 1 / 61)
    assert [h.chunk_id for h in fused][:2] == [3, 2]
    assert fused[0].vector_rank == 3 and fused[0].lexical_rank == 1
    only_vector = rrf_fuse({"vector": [_hit(1), _hit(2)], "lexical": [_hit(2), _hit(1)]}, {"vector": 1.0, "lexical": 0.0}, k=10)
    assert [h.chunk_id for h in only_vector] == [1, 2]


def test_title_boost_prefers_sections_named_by_the_query(settings):
    settings.SM_TITLE_BOOST = 0.3
    a, b = _hit(1, "活动核销规则 > 跨店核销"), _hit(2, "活动核销规则 > 叠加规则")
    a.score = b.score = 0.05
    ranked = title_boost_rerank("满减和折扣券能叠加吗", [a, b], ["满减", "折扣券", "叠加"])
    assert ranked[0].chunk_id == 2


def test_query_terms_add_corpus_words_for_colloquial_ones():
    terms = query_terms("客人喝多了还要酒")
    assert "醉酒" in terms and terms[: len(tokenize("客人喝多了还要酒"))] == tokenize("客人喝多了还要酒")


def test_staff_never_see_manager_only_documents():
    staff = make_user("staff_v", role="staff")
    manager = make_user("manager_v", role="manager")
    query = "店长的免单权限和报损审批"
    for k in (5, 30):
        staff_hits = search(query, user=staff, k=k).hits
        assert staff_hits and all(h.audience == "staff" for h in staff_hits)
    manager_hits = search(query, user=manager, k=5).hits
    assert any(h.document == "店长手册" for h in manager_hits)


def test_hits_carry_channel_ranks_and_scores():
    result = search("会员卡能跨店用吗", k=5)
    top = result.top
    assert top.section_path.count(" > ") >= 1 and top.score > 0
    assert top.vector_rank is not None or top.lexical_rank is not None
    assert set(result.timings_ms) >= {"embed_query", "vector", "lexical", "fusion", "retrieval"}


def test_search_api_requires_auth_and_filters_by_role():
    assert APIClient().get("/api/v1/knowledge/search", {"q": "会员"}).status_code in (401, 403)
    staff = make_user("staff_api", role="staff")
    c = APIClient()
    c.force_authenticate(staff)
    r = c.get("/api/v1/knowledge/search", {"q": "店长最多能免单多少"})
    assert r.status_code == 200
    body = r.json()
    assert body["hits"] and all(h["document"] != "店长手册" for h in body["hits"])
    assert {"section_path", "score", "text", "vector_rank", "lexical_rank"} <= set(body["hits"][0])
    assert c.get("/api/v1/knowledge/search", {"q": "  "}).status_code == 400
    # The one parameter search needs, given empty, is not told to be left out.
    assert c.get("/api/v1/knowledge/search", {"q": ""}).json()["q"] == ["参数值不能为空。"]
    assert "q" in c.get("/api/v1/knowledge/search", {"q": "x" * 501}).json()
    assert "k" in c.get("/api/v1/knowledge/search", {"q": "会员", "k": "99"}).json()


def test_search_command_explain(capsys):
    from django.core.management import call_command

    call_command("search", "会员卡能跨店用吗", "--explain")
    out = capsys.readouterr().out
    assert "vector (cosine)" in out and "lexical (BM25)" in out and "会员与储值规则" in out


def test_hashing_embedder_is_deterministic_and_normalised():
    emb = HashingEmbedder(128)
    a, b = emb.embed_query("黑牌多少钱"), emb.embed_query("黑牌多少钱")
    assert np.allclose(a, b) and np.linalg.norm(a) == pytest.approx(1.0, abs=1e-5)
    assert emb.signature == "hashing:char1-3:128"


@pytest.mark.e5
def test_e5_embedder_uses_bundled_model_and_prefixes():
    from knowledge.embedders import E5Embedder

    emb = E5Embedder()
    assert emb.signature == "e5:multilingual-e5-small-q4:384"
    q = emb.embed_query("酒变质了怎么办")
    p = emb.embed_passages(["酒水异味或品质问题处理：先道歉并更换酒水。", "包厢最低消费：小包 800 元。"])
    assert p.shape == (2, 384)
    assert float(p[0] @ q) > float(p[1] @ q)


def test_ollama_embedder_against_the_real_api_shape(fake_http):
    fake_http.routes["/api/embed"] = lambda body: (200, {
        "model": body["model"], "embeddings": [[1.0, float(i), 0.0] for i, _ in enumerate(body["input"])],
        "total_duration": 1000, "load_duration": 10, "prompt_eval_count": 3,
    })
    emb = OllamaEmbedder(fake_http.url, "bge-m3")
    emb.batch_size = 2
    vecs = emb.embed_passages(["甲", "乙", "丙"])
    assert vecs.shape == (3, 3) and emb.signature == "ollama:bge-m3:3"
    assert [len(b["input"]) for _, b, _ in fake_http.requests] == [2, 1]
    assert fake_http.requests[0][1]["keep_alive"] == "30m"
    assert emb._client._trust_env is False  # a system proxy must not hijack localhost


def test_openai_embedder_against_the_real_api_shape(fake_http):
    def embeddings(body):
        data = [{"object": "embedding", "index": i, "embedding": [0.0, 1.0, float(i)]} for i, _ in enumerate(body["input"])]
        return 200, {"object": "list", "data": list(reversed(data)), "model": body["model"], "usage": {"prompt_tokens": 4, "total_tokens": 4}}

    fake_http.routes["/v1/embeddings"] = embeddings
    emb = OpenAIEmbedder(fake_http.url + "/v1", "text-embedding-3-small", api_key="sk-test")
    vecs = emb.embed_passages(["甲", "乙"])
    assert vecs.shape == (2, 3) and vecs[1][2] > vecs[0][2]  # re-ordered by index
    assert fake_http.requests[0][2]["Authorization"] == "Bearer sk-test"


def test_http_embedder_failure_is_a_clear_error(fake_http):
    from knowledge.embedders import EmbedderError

    fake_http.routes["/api/embed"] = lambda body: (500, {"error": "model not found"})
    with pytest.raises(EmbedderError, match="ollama embeddings"):
        OllamaEmbedder(fake_http.url, "nope").embed_passages(["甲"])
