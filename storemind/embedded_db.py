"""Embedded PostgreSQL 16 + pgvector (from the `pgserver` package) for a fresh clone.

Used only when DATABASE_URL is unset. The server keeps its data under var/pgdata,
listens on a unix socket only, and is left running so later runs reuse it.
Never used in production (docker-compose sets DATABASE_URL).

The test suite has a cluster of its own (var/pgdata-test): tests stop and restart their
database to check outages, and must never do that to the one `make run` is serving.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

DB_NAME = "storemind"
CLUSTERS = ("pgdata", "pgdata-test")


def cluster_name() -> str:
    """Which data directory under var/ this process uses: SM_PGDATA when set, the test
    cluster under pytest (which sets PYTEST_VERSION for its whole run, subprocesses included),
    else the development cluster."""
    name = os.environ.get("SM_PGDATA") or ("pgdata-test" if os.environ.get("PYTEST_VERSION") else "pgdata")
    if "/" in name or name in ("", ".", ".."):
        raise ValueError(f"SM_PGDATA must be a directory name under var/, not {name!r}")
    return name


def pgdata_dir(base_dir: Path, name: str | None = None) -> Path:
    return (base_dir / "var" / (name or cluster_name())).resolve()


def embedded_database_settings(base_dir: Path) -> dict:
    var_dir = base_dir / "var"
    run_dir = var_dir / "run"
    run_dir.mkdir(parents=True, exist_ok=True)
    run_dir.chmod(0o700)  # platformdirs insists on a private runtime dir
    # pgserver keeps its lock and (for long paths) its socket under the runtime dir.
    os.environ.setdefault("XDG_RUNTIME_DIR", str(run_dir))
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    import pgserver

    server = pgserver.get_server(pgdata_dir(base_dir), cleanup_mode=None)
    info = server.get_postmaster_info()
    if _configure(str(info.socket_dir), info.port or 5432):
        with server._lock:  # pgserver's own file lock: one restarter across processes
            stop(base_dir)
            server.ensure_postgres_running()
        info = server.get_postmaster_info()
    socket_dir = str(info.socket_dir)
    _ensure_database(socket_dir, info.port or 5432)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ.get("SM_DB_NAME", DB_NAME),
        "USER": "postgres",
        "HOST": socket_dir,
        "PORT": str(info.port or 5432),
        # Persistent, as in production: a new connection per request costs more CPU than a chat's queries.
        "CONN_MAX_AGE": int(os.environ.get("SM_DB_CONN_MAX_AGE") or 60),
        "TEST": {"NAME": "test_" + DB_NAME},
    }


# PostgreSQL's own cache (SM_PG_SHARED_BUFFERS). Its default (128MB) holds less than one HNSW
# index at 100k chunks: every vector search then copies its pages in again (bench retrieval:
# 4 ms per vector channel with 1GB, 14–18 ms with 128MB).
def _default_shared_buffers() -> str:
    try:
        ram_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)
    except (ValueError, OSError):
        return "256MB"
    return f"{max(128, min(1024, ram_mb // 4))}MB"  # a quarter of the memory, at most 1GB


SHARED_BUFFERS = os.environ.get("SM_PG_SHARED_BUFFERS") or _default_shared_buffers()


def _configure(socket_dir: str, port: int) -> bool:
    """Set the server's settings when they differ; True when a restart must apply them (the
    first start of a new data directory, or after SM_PG_SHARED_BUFFERS changed)."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(host=socket_dir, port=port, user="postgres", dbname="postgres", autocommit=True) as conn:
        same = conn.execute("SELECT pg_size_bytes(current_setting('shared_buffers')) = pg_size_bytes(%s)", [SHARED_BUFFERS]).fetchone()[0]
        if same:
            return False
        conn.execute(sql.SQL("ALTER SYSTEM SET shared_buffers = {}").format(sql.Literal(SHARED_BUFFERS)))
    return True


def _ensure_database(socket_dir: str, port: int) -> None:
    import psycopg

    name = os.environ.get("SM_DB_NAME", DB_NAME)
    with psycopg.connect(host=socket_dir, port=port, user="postgres", dbname="postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


def ensure_running(base_dir: Path) -> bool:
    """Start the embedded server again when its postmaster is gone (killed, machine slept,
    `pg_ctl stop`). Returns True when it had to be started. Development only."""
    from pgserver.utils import PostmasterInfo

    pgdata = pgdata_dir(base_dir)
    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is not None and info.is_running():
        return False
    import pgserver

    server = pgserver.get_server(pgdata, cleanup_mode=None)
    with server._lock:  # pgserver's own file lock: one starter across processes
        server.ensure_postgres_running()
    return True


def stop(base_dir: Path, timeout: float = 30.0, name: str | None = None) -> bool:
    """Stop an embedded server (`make stop` stops both): a fast shutdown of its postmaster.
    Returns True when one was running. Needs no Django settings (importing them would start it)."""
    import signal
    import time

    os.environ.setdefault("XDG_RUNTIME_DIR", str(base_dir / "var" / "run"))
    from pgserver.utils import PostmasterInfo

    pgdata = pgdata_dir(base_dir, name)
    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or not info.is_running():
        return False
    os.kill(info.pid, signal.SIGINT)  # PostgreSQL's "fast" shutdown: roll back sessions, checkpoint, exit
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = PostmasterInfo.read_from_pgdata(pgdata)
        if info is None or not info.is_running():
            return True
        time.sleep(0.2)
    raise TimeoutError(f"the embedded PostgreSQL (pid {info.pid}) did not stop within {timeout:.0f} s")


log = logging.getLogger("storemind.errors")
_restart_lock = threading.Lock()
_last_restart = [0.0]


def restart_embedded_database() -> bool:
    """When the embedded server (DATABASE_URL unset) lost its postmaster, start it again,
    at most once every few seconds. Returns True when it was (re)started."""
    from django.conf import settings

    if getattr(settings, "DATABASE_URL", None):  # a managed database: not ours to start
        return False
    if time.monotonic() - _last_restart[0] < 3 or not _restart_lock.acquire(blocking=False):
        return False
    try:
        _last_restart[0] = time.monotonic()
        started = ensure_running(settings.BASE_DIR)
        if started:
            log.warning("embedded PostgreSQL was not running; started it again")
        return started
    except Exception:  # never turn a 503 into a 500
        log.exception("could not restart the embedded PostgreSQL")
        return False
    finally:
        _restart_lock.release()


if __name__ == "__main__":  # python -m storemind.embedded_db stop
    import sys

    if sys.argv[1:] != ["stop"]:
        sys.exit("usage: python -m storemind.embedded_db stop")
    base = Path(__file__).resolve().parent.parent
    for name in CLUSTERS:
        label = "the tests' embedded PostgreSQL" if name.endswith("-test") else "the embedded PostgreSQL"
        print(f"stopped {label}" if stop(base, name=name) else f"{label} was not running")
