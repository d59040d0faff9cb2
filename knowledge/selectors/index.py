"""What every read of the knowledge index shares: who may read what (Visibility), the index metadata
read once per question, and caches kept until the next ingest."""
from __future__ import annotations

import contextvars
import threading
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

from django.db import connection

from core.memo import remembered

from ..embedders import Embedder
from ..models import Document, IndexMeta


class IndexNotReady(RuntimeError):
    """No index yet, or it was built with another embedder: run `manage.py ingest`."""


@dataclass(frozen=True)
class Visibility:
    """Who is reading: the audiences they may see, and the scope tokens of their stores
    ('store:3', 'city:深圳'; None: every document whatever its scope). Every channel filters by it
    inside its query, before any candidate is cut."""

    audiences: tuple[str, ...]
    scope: tuple[str, ...] | None

    @classmethod
    def everything(cls) -> Visibility:
        """An operator at the command line, an evaluation: every document."""
        return cls(tuple(Document.Audience.values), None)

    def params(self) -> dict:
        """The named parameters of _VISIBLE."""
        return {"audiences": list(self.audiences), "scope_all": self.scope is None, "scope": list(self.scope or ())}


def visibility_for(user) -> Visibility:
    """A user's view: their role's audiences and their stores' scope (head office: every store).
    No user fails closed: staff documents that reach every store, nothing scoped."""
    if user is None:
        return Visibility(("staff",), ())
    from core.scoping import ALL, store_ids_for
    from ops.models import Store

    audiences = tuple(visible_audiences(user))
    ids = store_ids_for(user, "ops.view_store")
    if ids is ALL:
        return Visibility(audiences, None)
    stores = Store.objects.filter(pk__in=ids).values_list("pk", "city")
    return Visibility(audiences, tuple([f"store:{pk}" for pk, _ in stores] + sorted({f"city:{city}" for _, city in stores})))


def as_visibility(viewer) -> Visibility:
    """A Visibility, a user, None (fails closed) or a list of audiences (an operator's search:
    those audiences, every scope)."""
    if isinstance(viewer, Visibility):
        return viewer
    if isinstance(viewer, (list, tuple)):
        return Visibility(tuple(viewer), None)
    return visibility_for(viewer)


def visible_audiences(user) -> list[str]:
    """Holders of knowledge.view_manager_document (managers, head office, superusers) see
    manager-only documents; everyone else sees staff ones.
    `None` is an operator at the command line and sees everything."""
    if user is None:
        return list(Document.Audience.values)
    return ["staff", "manager"] if user.has_perm("knowledge.view_manager_document") else ["staff"]


_INDEX_MEMO: contextvars.ContextVar[dict | None] = contextvars.ContextVar("index_memo", default=None)


@contextmanager
def index_read_once():
    """Within this block (one question, its guard threads included when they run in a copy of
    this context), the index metadata row is read once: search() in every round, the judge,
    and the per-index caches' version checks all see that one read."""
    token = _INDEX_MEMO.set({})
    try:
        yield
    finally:
        _INDEX_MEMO.reset(token)


def within_one_read():
    """index_read_once() unless the caller already holds one (a chat question holds it for all
    its rounds): a search reads the index metadata once, not again in the rerank and the caches."""
    return index_read_once() if _INDEX_MEMO.get() is None else nullcontext()


def current_index() -> IndexMeta | None:
    """The index metadata row (None before the first ingest); read once per question inside
    `index_read_once()`, read afresh outside it."""
    memo = _INDEX_MEMO.get()
    if memo is None:
        return IndexMeta.objects.order_by("pk").first()
    if "meta" not in memo:
        memo["meta"] = IndexMeta.objects.order_by("pk").first()
    return memo["meta"]


def read_once(key, read):
    """`read()`, remembered under `key` for the rest of the question inside `index_read_once()`
    (the judge's corpus statistics for the same words, round after round)."""
    return remembered(_INDEX_MEMO, key, read)


def index_meta() -> IndexMeta:
    meta = current_index()
    if meta is None or not meta.n_chunks:
        raise IndexNotReady("知识库索引还没有建立，请先运行 python manage.py ingest。")
    return meta


def check_signature(meta: IndexMeta, embedder: Embedder, dimension: int) -> None:
    if (meta.backend, meta.model) != (embedder.backend, embedder.model) or meta.dimension != dimension:
        raise IndexNotReady(
            f"索引是用 {meta.signature} 建的，当前嵌入器是 {embedder.backend}:{embedder.model}:{dimension}；"
            "请运行 python manage.py ingest 重建索引。"
        )


_SNAPSHOTS: dict = {}


_SNAPSHOT_VERSION: list = [None]


_SNAPSHOT_LOCK = threading.Lock()


def _index_version():
    """Changes with every ingest (the index metadata row is saved)."""
    if _INDEX_MEMO.get() is not None:  # the question's one read of the row
        meta = current_index()
        return (connection.settings_dict["NAME"], (meta.id, meta.updated_at, meta.n_chunks) if meta else None)
    with connection.cursor() as cur:
        cur.execute("SELECT id, updated_at, n_chunks FROM knowledge_indexmeta ORDER BY id LIMIT 1")
        return (connection.settings_dict["NAME"], cur.fetchone())


def index_cached(key, build):
    """`build()`'s value, kept by this process until the index changes (the next ingest).
    For what is derived from the corpus alone: section snapshots, the mandatory clauses."""
    version = _index_version()
    with _SNAPSHOT_LOCK:
        if _SNAPSHOT_VERSION[0] != version:
            _SNAPSHOTS.clear()
            _SNAPSHOT_VERSION[0] = version
        if key in _SNAPSHOTS:
            return _SNAPSHOTS[key]
    value = build()
    with _SNAPSHOT_LOCK:
        if _SNAPSHOT_VERSION[0] == version:
            _SNAPSHOTS[key] = value
    return value


def index_cache_read(keys: list) -> tuple[object, dict]:
    """(the index version now, what this process keeps of `keys` for that version): for a batch
    that reads what it can from the cache and builds the rest at once (section_words)."""
    version = _index_version()
    with _SNAPSHOT_LOCK:
        if _SNAPSHOT_VERSION[0] != version:
            return version, {}
        return version, {k: _SNAPSHOTS[k] for k in keys if k in _SNAPSHOTS}


def index_cache_keep(version, values: dict) -> None:
    """Keep `values`, built under index `version`, until the next ingest (as index_cached does)."""
    with _SNAPSHOT_LOCK:
        if _SNAPSHOT_VERSION[0] != version:
            _SNAPSHOTS.clear()
            _SNAPSHOT_VERSION[0] = version
        _SNAPSHOTS.update(values)
