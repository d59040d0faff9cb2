"""search(): the channels fused by weighted reciprocal rank fusion, then a light rerank. The fusion
parameters (channel weights, RRF k, candidates per channel, heading boost) come from `eval
tune-fusion`, stored in the index metadata; the shipped choice or settings otherwise."""
from __future__ import annotations

import copy
import dataclasses
import json
import time
from functools import lru_cache
from pathlib import Path

import numpy as np
from django.conf import settings
from django.utils.module_loading import import_string

from core.pools import can_share_work, submit, thread_pool

from ..embedders import Embedder, get_embedder
from ..models import IndexMeta
from ..text import grams, query_terms, tokenize
from .channels import Hit, SearchResult, _bm25_rows, _filled, _nearest_rows, best_sentence_of, document_frequencies, vector_channel
from .index import as_visibility, check_signature, index_meta, within_one_read


def rrf_fuse(rankings: dict[str, list[Hit]], weights: dict[str, float], k: int) -> list[Hit]:
    """Weighted reciprocal rank fusion: score = Σ w_c / (k + rank_c). Ranks only, so the
    unbounded BM25 scale and the bounded cosine scale never have to be compared."""
    merged: dict[int, Hit] = {}
    for channel, hits in rankings.items():
        w = weights.get(channel, 1.0)
        if not w:
            continue
        carried = [a for a in (f"{channel}_rank", f"{channel}_score", f"{channel}_text") if a in _HIT_FIELDS]
        for rank, hit in enumerate(hits, start=1):
            target = merged.get(hit.chunk_id)
            if target is None:  # a shallow copy (copy.copy took most of fusion's time at 200 hits)
                target = merged[hit.chunk_id] = object.__new__(Hit)
                target.__dict__.update(hit.__dict__)
                target.score = 0.0
            for attr in carried:
                setattr(target, attr, getattr(hit, attr))
            setattr(target, f"{channel}_rank", rank)
            target.score += w / (k + rank)
    return sorted(merged.values(), key=lambda h: (-h.score, h.chunk_id))


_HIT_FIELDS = frozenset(f.name for f in dataclasses.fields(Hit))


def title_boost_rerank(query: str, hits: list[Hit], terms: list[str] | None = None, *, boost: float | None = None) -> list[Hit]:
    """Boost hits whose section headings contain query terms (headings are human labels).
    Swap for a cross-encoder by pointing SM_RERANKER at a callable with this signature."""
    terms = set(terms if terms is not None else tokenize(query))
    if not terms:
        return hits
    boost = default_fusion()["title_boost"] if boost is None else boost
    for hit in hits:
        headings = hit.section_path.split(" > ", 1)[-1]
        matched = sum(1 for t in terms if t in headings)
        if matched:
            hit.score *= 1 + boost * matched / len(terms)
    return sorted(hits, key=lambda h: (-h.score, h.chunk_id))


def expanded_query(query: str, terms: list[str]) -> str:
    """The question plus the corpus terms its colloquial words stand for, for embedding:
    「客人喝多了还要酒」 is embedded with 醉酒 appended (the original words stay first)."""
    extra = [t for t in terms if t not in set(tokenize(query))]
    return f"{query} {' '.join(extra)}" if extra else query


# What `eval tune-fusion --across` chose over every evaluation corpus, per embedder backend
# ("chosen"), and the choice each corpus's held-out figures are reported with ("loco": chosen
# without that corpus). Before any such choice: these constants.
FUSION_CHOICE_PATH = Path(__file__).parent.parent / "fusion_e5.json"


_BUILT_IN_FUSION = {"weights": {"vector": 1.0, "sentence": 0.0, "alias": 1.0, "lexical": 1.0, "gram": 1.0},
                    "k": 3, "candidates": 20, "title_boost": 0.0}


_FUSION_SETTINGS = {"k": "SM_RRF_K", "candidates": "SM_RETRIEVAL_CANDIDATES", "title_boost": "SM_TITLE_BOOST"}


_WEIGHT_SETTINGS = {"vector": "SM_RRF_VECTOR_WEIGHT", "sentence": "SM_RRF_SENTENCE_WEIGHT", "alias": "SM_RRF_ALIAS_WEIGHT",
                    "lexical": "SM_RRF_LEXICAL_WEIGHT", "gram": "SM_RRF_GRAM_WEIGHT"}


@lru_cache(maxsize=4)
def shipped_fusion_choice(path: str = str(FUSION_CHOICE_PATH)) -> dict:
    p = Path(path)
    return json.loads(p.read_text("utf-8")) if p.exists() else {}


_FUSION_IN_FORCE: list[dict | None] = [None]


def use_fusion(params: dict | None) -> None:
    """This process fuses with `params` (an evaluation corpus's choice made without it) when the
    index stores no choice of its own."""
    _FUSION_IN_FORCE[0] = params


def default_fusion() -> dict:
    """The fusion when the index stores none: a setting given in the environment, else the
    choice shipped for the e5 embedder, else the built-in constants."""
    if _FUSION_IN_FORCE[0] is not None:
        return copy.deepcopy(_FUSION_IN_FORCE[0])
    shipped = shipped_fusion_choice().get("chosen") if settings.SM_EMBED_BACKEND == "e5" else None
    base = copy.deepcopy(shipped or _BUILT_IN_FUSION)
    for key, name in _FUSION_SETTINGS.items():
        if getattr(settings, name, None) is not None:
            base[key] = getattr(settings, name)
    for channel, name in _WEIGHT_SETTINGS.items():
        if getattr(settings, name, None) is not None:
            base["weights"][channel] = getattr(settings, name)
    return base


def fusion_params(meta: IndexMeta | None = None) -> dict:
    """What `eval tune-fusion` chose (stored with the index), over the settings' defaults."""
    params = default_fusion()
    stored = (meta.fusion if meta is not None else {}) or {}
    params.update({k: v for k, v in stored.items() if k in params})
    return params


def _vector_half(qvec, audiences, depth: int, sentence_index: bool) -> tuple[dict[str, list[tuple]], float]:
    t = time.perf_counter()
    rows = _nearest_rows(qvec, audiences, depth, ("vector", "alias", "sentence") if sentence_index else ("vector", "alias"))
    return rows, (time.perf_counter() - t) * 1000


def _lexical_half(query: str, terms: list[str], meta: IndexMeta, audiences, depth: int) -> tuple[dict[str, list[tuple]], float]:
    t = time.perf_counter()
    bigrams = grams(query)
    df = document_frequencies(terms, bigrams) if terms or bigrams else {"lexical": {}, "gram": {}}
    rows = {"lexical": _bm25_rows(terms, df["lexical"], meta, audiences, depth, "lexical"),
            "gram": _bm25_rows(bigrams, df["gram"], meta, audiences, depth, "gram")}
    return rows, (time.perf_counter() - t) * 1000


def channel_rankings(query: str, terms: list[str], qvec, meta: IndexMeta, audiences, depth: int,
                     timings: dict | None = None, *, sentence_index: bool = True) -> dict[str, list[Hit]]:
    """Every channel's own ranking, `depth` deep (fused afterwards, possibly many ways).

    The vector half (chunk, alias and sentence indexes) and the lexical half (word and bigram
    BM25) are independent queries of about equal cost. With SM_RETRIEVAL_THREADS they run side
    by side, the vector half on a retrieval thread with its own connection, so a question waits
    for the slower half, not the sum (`timings["channels"]`); that pays only with a core to
    spare for the second PostgreSQL backend. Inside a transaction both run here, one after the
    other: another connection could not see its uncommitted rows.

    `sentence_index=False` (search() when fusion gives sentences no weight): the sentence
    channel is left out here; search() scores the best sentence of each fused candidate
    afterwards (`best_sentence_of`), which is what the answerability score reads, without a
    walk through the largest vector index."""
    timings = timings if timings is not None else {}
    t = time.perf_counter()
    if settings.SM_RETRIEVAL_THREADS > 0 and can_share_work():
        vector_future = submit(thread_pool("retrieval", settings.SM_RETRIEVAL_THREADS), _vector_half, qvec, audiences, depth, sentence_index)
        lexical, timings["lexical"] = _lexical_half(query, terms, meta, audiences, depth)
        vector, timings["vector"] = vector_future.result()
    else:
        vector, timings["vector"] = _vector_half(qvec, audiences, depth, sentence_index)
        lexical, timings["lexical"] = _lexical_half(query, terms, meta, audiences, depth)
    rankings = _filled({**vector, **lexical}, depth)
    timings["channels"] = (time.perf_counter() - t) * 1000
    return rankings


def fuse(query: str, terms: list[str], rankings: dict[str, list[Hit]], params: dict) -> list[Hit]:
    n = int(params["candidates"])
    fused = rrf_fuse({c: hits[:n] for c, hits in rankings.items()}, params["weights"], int(params["k"]))
    reranker = import_string(settings.SM_RERANKER)
    return reranker(query, fused, terms, boost=params["title_boost"])


def pin_taught_alias(fused: list[Hit], alias_ranking: list[Hit]) -> list[Hit]:
    """The learning loop: a question a manager linked to a section in the admin, asked again
    verbatim or nearly (cosine ≥ SM_TAUGHT_ALIAS_MIN against the taught question), is answered
    by the section that person chose — its chunk goes first, marked `taught`. Fusion alone
    would let three channels that agree on a wrong section outvote the one that knows."""
    from ..models import SectionAlias

    top = alias_ranking[0] if alias_ranking else None
    if top is None or (top.alias_score or 0.0) < settings.SM_TAUGHT_ALIAS_MIN:
        return fused
    if not SectionAlias.objects.filter(question=top.alias_text, section_path=top.section_path, source=SectionAlias.Source.ADMIN).exists():
        return fused
    pinned = next((h for h in fused if h.chunk_id == top.chunk_id), top)
    pinned.taught = True
    return [pinned, *(h for h in fused if h.chunk_id != top.chunk_id)]


def search(query: str, *, user=None, audiences=None, k: int = 5, candidates: int | None = None,
           embedder: Embedder | None = None, weights: dict[str, float] | None = None, qvec=None) -> SearchResult:
    """Hybrid search. `user` decides visibility unless `audiences` (a Visibility, or an operator's
    list of audiences) is given; neither fails closed. `qvec`: the query vector when the caller
    already has one (no model call); else the query is embedded."""
    with within_one_read():
        query = (query or "").strip()
        embedder = embedder or get_embedder()
        audiences = as_visibility(audiences if audiences is not None else user)
        timings = {}
        meta = index_meta()
        params = fusion_params(meta)
        if candidates:
            params["candidates"] = candidates
        if weights:
            params["weights"] = {**params["weights"], **weights}

        t = time.perf_counter()
        terms = query_terms(query)
        if qvec is None:
            qvec = embedder.embed_query(expanded_query(query, terms))
        timings["embed_query"] = (time.perf_counter() - t) * 1000
        check_signature(meta, embedder, len(qvec))

        fused, rankings = retrieve(query, terms, qvec, meta, audiences, params, timings)
        timings["retrieval"] = timings["channels"] + timings["fusion"]
        return SearchResult(query, fused[:k], terms, timings, rankings, qvec)


def retrieve(query: str, terms: list[str], qvec, meta: IndexMeta, audiences, params: dict,
             timings: dict) -> tuple[list[Hit], dict[str, list[Hit]]]:
    """Everything search() does once the question is embedded (bench retrieval times this very
    path): the channels, fusion, the taught-alias pin and, when fusion gives sentences no
    weight, the best sentence of each fused candidate (order unchanged; the answerability score
    reads it). Fills `timings` with vector, lexical and fusion milliseconds."""
    depth, sentence_index = int(params["candidates"]), params["weights"].get("sentence", 0) > 0
    rankings = channel_rankings(query, terms, qvec, meta, audiences, depth, timings, sentence_index=sentence_index)
    t = time.perf_counter()
    fused = pin_taught_alias(fuse(query, terms, rankings, params), rankings.get("alias", []))
    if not sentence_index:
        rankings["sentence"] = best_sentence_of(qvec, [h.chunk_id for h in fused[:depth]], audiences, depth)
    timings["fusion"] = (time.perf_counter() - t) * 1000
    return fused, rankings


def query_vector_with(qvec, texts: list[str], *, embedder: Embedder | None = None) -> np.ndarray:
    """`qvec` moved toward `texts` (short section titles): the question's vector plus the mean
    of theirs, unit length. Stands in for embedding 「title title question」 as one text: the
    titles are embedded once each and then come from the query cache, so a rewrite round
    needs no model call for the rewritten text."""
    embedder = embedder or get_embedder()
    v = np.asarray(qvec, dtype=np.float32) + np.mean([embedder.embed_query(t) for t in texts], axis=0)
    return v / (np.linalg.norm(v) or 1.0)


def nearest_section_titles(query: str, *, user=None, n: int = 2, exclude: set[str] | None = None, audiences=None) -> list[str]:
    """Headings of the sections closest to `query` by embedding (used to rewrite a query
    into the corpus's own words when no LLM is configured)."""
    embedder = get_embedder()
    meta = index_meta()
    qvec = embedder.embed_query(query)
    check_signature(meta, embedder, len(qvec))
    titles: list[str] = []
    for hit in vector_channel(qvec, as_visibility(audiences if audiences is not None else user), 20):
        heading = hit.heading
        if heading not in titles and heading not in (exclude or set()):
            titles.append(heading)
        if len(titles) >= n:
            break
    return titles
