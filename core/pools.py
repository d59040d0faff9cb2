"""Long-lived worker threads per process, each with its own database connection.

Used where one request runs independent database work side by side (the agent's two guards,
the vector and lexical halves of retrieval). Pools are made lazily and again after a fork
(gunicorn and Celery fork workers after import), and their threads keep their connections
like a request thread does (CONN_MAX_AGE), instead of opening a PostgreSQL backend per task.
"""
from __future__ import annotations

import contextvars
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

from django.db import close_old_connections, connection

_pools: dict[str, tuple[int, int, ThreadPoolExecutor]] = {}  # name → (pid, workers, pool)
_lock = threading.Lock()


def thread_pool(name: str, workers: int) -> ThreadPoolExecutor:
    """The process's pool called `name` (made on first use, again in a forked child, and again
    when asked for a different number of workers: a settings change takes effect)."""
    with _lock:
        pid, size, pool = _pools.get(name, (0, 0, None))
        if pool is None or pid != os.getpid() or size != workers:
            if pool is not None and pid == os.getpid():
                pool.shutdown(wait=False)  # its threads finish what they hold, then exit
            pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
            _pools[name] = (os.getpid(), workers, pool)
        return pool


def with_own_connection(fn, *args, **kwargs):
    """Run `fn` on this pool thread's own connection (Django keeps one per thread), handled as a
    request handles its: dropped before and after when broken or older than CONN_MAX_AGE. With
    CONN_MAX_AGE 0 every task opens a new connection, which costs more than it saves."""
    close_old_connections()
    try:
        return fn(*args, **kwargs)
    finally:
        close_old_connections()


def submit(pool: ThreadPoolExecutor, fn, *args, **kwargs) -> Future:
    """`fn(*args)` on a pool thread, in a copy of the caller's context (its per-request memos)."""
    return pool.submit(contextvars.copy_context().run, with_own_connection, fn, *args, **kwargs)


def can_share_work() -> bool:
    """Whether another connection would see what this one sees. Not inside a transaction:
    its uncommitted rows (a test's fixtures, an ingest in progress) are invisible elsewhere."""
    return not connection.in_atomic_block
