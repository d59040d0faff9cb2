"""Helpers the pipeline tests share: a state routed as a question would be, rounds and hits by hand,
answerability models written by hand."""


from agent import compose, pipeline
from agent.pipeline import Round, start
from knowledge.models import IndexMeta
from knowledge.selectors import Hit, SearchResult
from ops.tools import local_today, run_tool


def state_for(question, user, **kw):
    state = start(question, user=user, today=local_today(), **kw)
    pipeline.follow_up.resolve_follow_up(state)
    pipeline.routing.route_node(state)
    return state


def _round(hits, attempt=0, query="满减券和折扣券能叠加吗"):
    return Round(attempt, query, SearchResult(query, hits, []))


def _hit(text, path="文档 > 节", vector_score=0.5, cid=1):
    h = Hit(cid, 1, "文档", "x.md", path, text, "staff", score=0.1)
    h.vector_score = vector_score
    return h


def coverage_model(threshold=0.5):
    """A hand-written answerability model: the share of the question's words the corpus uses."""
    from knowledge.answerability import FEATURES

    meta = IndexMeta.objects.get()
    coef = [10.0 if f == "coverage" else 0.0 for f in FEATURES]
    meta.answerability = {"signature": meta.signature, "features": list(FEATURES), "mean": [0.0] * len(FEATURES),
                          "std": [1.0] * len(FEATURES), "coef": coef, "bias": -5.0, "threshold": threshold}
    meta.save(update_fields=["answerability"])
    return meta


def _answers_everything():
    """An answerability model under which every question is enough on its score (0.5 ≥ 0.1)."""
    from knowledge import answerability

    meta = IndexMeta.objects.get()
    n = len(answerability.FEATURES)
    return answerability.scoring_with({"signature": meta.signature, "features": list(answerability.FEATURES),
                                       "mean": [0.0] * n, "std": [1.0] * n, "coef": [0.0] * n, "bias": 0.0, "threshold": 0.1})


def _sources():
    hits = [_hit("满减券和折扣券不能叠加使用。", cid=11), _hit("单品券可以和满减券叠加。", cid=12)]
    tool = run_tool("low_stock", {"store": "天河店"}, user=None)
    return compose.number_sources(hits, tool), tool


def _section_hit(section_path, score):
    from knowledge.models import Chunk

    chunk = Chunk.objects.select_related("document").filter(section_path=section_path).order_by("ordinal").first()
    return Hit(chunk.id, chunk.document_id, chunk.document.title, chunk.document.path, chunk.section_path, chunk.text, "staff", score=score)
