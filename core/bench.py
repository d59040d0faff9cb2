"""Benchmark helpers shared by `manage.py bench …`: a database per bench and percentiles."""
from __future__ import annotations

import re
import statistics
import time
from contextlib import contextmanager

from django.conf import settings
from django.core.management import call_command
from django.db import connection


def bench_database_name(base: str, target: str, kind: str = "bench") -> str:
    """`<name>_bench_<target>`: every bench owns its database, so one bench's rows (a
    workflow bench's proposals) can never stop another's reset (`bench ops` re-seeding).
    `<name>_eval_<corpus>`: every evaluation corpus owns one too (kind "eval")."""
    base = re.sub(r"_(bench|eval)(_[a-z0-9_]+)?$", "", base)
    return f"{base}_{kind}_{re.sub(r'[^a-z0-9]+', '_', target.lower())}"


def use_bench_database(target: str, kind: str = "bench") -> str:
    """Point the default connection at this bench's (or evaluation corpus's) own database,
    created and migrated on demand.

    Benchmarks load hundreds of thousands of rows, and an evaluation corpus is an index of its
    own; neither ever touches the real database.
    """
    name = bench_database_name(connection.settings_dict["NAME"], target, kind)
    with connection._nodb_cursor() as cur:
        cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        if not cur.fetchone():
            cur.execute(f'CREATE DATABASE "{name}"')
    connection.close()
    connection.settings_dict["NAME"] = name
    settings.DATABASES["default"]["NAME"] = name
    call_command("migrate", interactive=False, verbosity=0)
    return name


def percentile(values: list[float], pct: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    k = (len(ordered) - 1) * pct / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def p50(values):
    return statistics.median(values) if values else 0.0


@contextmanager
def stopwatch(out: list[float]):
    t = time.perf_counter()
    yield
    out.append((time.perf_counter() - t) * 1000)
