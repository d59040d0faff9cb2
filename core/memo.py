"""Per-question memos: a value read once inside a block (a ContextVar holding a dict), read
afresh outside it. The store list (ops) and the index metadata (knowledge) each keep one."""
from __future__ import annotations

from contextvars import ContextVar


def remembered(memo: ContextVar[dict | None], key, read):
    """`read()`, remembered under `key` while `memo` holds a dict; `read()` every time otherwise."""
    values = memo.get()
    if values is None:
        return read()
    if key not in values:
        values[key] = read()
    return values[key]
