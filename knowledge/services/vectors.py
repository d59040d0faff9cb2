"""Embeddings, computed once: a cache keyed by (kind, text) digest, and the vectors of the bundled
corpus shipped with the product so a fresh clone does not embed it again."""
from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

import numpy as np
from django.db import connection

from ..embedders import Embedder
from ..models import EmbeddingCache
from .schema import _column_dimension


def embedding_digest(kind: str, text: str) -> str:
    return hashlib.sha1(f"{kind}\x00{text}".encode()).hexdigest()


def ensure_cache_column(dimension: int) -> None:
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
    keys = [embedding_digest(kind, t) for t in texts]
    if embedder.dimension == 0:
        embedder.embed_passages(["dimension probe"])
    ensure_cache_column(embedder.dimension)
    cached = {
            d: v for d, v in EmbeddingCache.objects.filter(signature=embedder.signature, digest__in=set(keys)).values_list("digest", "embedding")
        }
    missing = list(dict.fromkeys(t for t, k in zip(texts, keys) if k not in cached))
    if missing:
        shipped = bundled_vectors(embedder.signature)  # the bundled corpus's vectors, shipped with the code
        new = {embedding_digest(kind, t): shipped[embedding_digest(kind, t)] for t in missing if embedding_digest(kind, t) in shipped}
        to_embed = [t for t in missing if embedding_digest(kind, t) not in new]
        if to_embed:
            fresh = embedder.embed_queries(to_embed) if kind == "query" else list(embedder.embed_passages(to_embed))
            new.update((embedding_digest(kind, t), v) for t, v in zip(to_embed, fresh))
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
BUNDLED_VECTORS = Path(__file__).parent.parent / "bundled_vectors.npz"


def bundled_vectors(signature: str) -> dict[str, np.ndarray]:
    found, vectors = _read_bundled(str(BUNDLED_VECTORS))
    return vectors if found == signature else {}


@lru_cache(maxsize=2)
def _read_bundled(path: str) -> tuple[str, dict[str, np.ndarray]]:
    if not Path(path).exists():
        return "", {}
    with np.load(path) as z:
        return str(z["signature"]), dict(zip(z["digests"].tolist(), z["vectors"]))
