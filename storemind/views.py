"""Liveness and readiness for load balancers, compose and operators.

/health says the process answers (no dependency is touched: a database outage must not
get healthy web workers restarted). /ready checks each dependency and says which one is
missing, with a 503 and Retry-After when the service cannot do its work.
"""
from __future__ import annotations

import time

from django.conf import settings
from django.db import connection
from django.http import JsonResponse

from . import embedded_db


def health(request):
    return JsonResponse({"status": "ok"})


def _timed(check) -> dict:
    started = time.monotonic()
    try:
        result = {"status": "ok", **(check() or {})}
    except Exception as exc:  # every failure is a report, never a 500
        result = {"status": "error", "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    result["ms"] = round((time.monotonic() - started) * 1000, 1)
    return result


def _database():
    with connection.cursor() as cur:
        cur.execute("SELECT 1")
    return {"vendor": connection.vendor}


def _redis():
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=1)
    try:
        client.ping()
    finally:
        client.close()


def _index():
    from knowledge.selectors import index_meta

    meta = index_meta()
    if meta.backend != settings.SM_EMBED_BACKEND:
        raise RuntimeError(f"索引用 {meta.signature} 建立，当前嵌入器是 {settings.SM_EMBED_BACKEND}：请运行 manage.py ingest")
    return {"chunks": meta.n_chunks, "signature": meta.signature}


def ready(request):
    from agent.llm import breaker

    checks = {"database": _timed(_database)}
    if checks["database"]["status"] != "ok":
        embedded_db.restart_embedded_database()
    if settings.REDIS_URL:
        checks["redis"] = _timed(_redis)
    checks["index"] = _timed(_index) if checks["database"]["status"] == "ok" else {"status": "error", "error": "数据库不可用"}
    ok = all(c["status"] == "ok" for c in checks.values())
    # The LLM is optional (answers degrade to extractive): reported, never a reason to be unready.
    checks["llm"] = {"status": "ok" if breaker.state()["state"] == "closed" else "degraded",
                     "backend": settings.SM_LLM_BACKEND, "circuit": breaker.state()}
    response = JsonResponse({"status": "ok" if ok else "unavailable", "checks": checks}, status=200 if ok else 503,
                            json_dumps_params={"ensure_ascii": False})
    if not ok:
        response["Retry-After"] = "5"
    return response
