"""`manage.py bench workflow`: 1,000 confirm attempts over 200 proposals from 8 concurrent
connections; every proposal must be confirmed exactly once."""
from __future__ import annotations

import random
import threading
import time
import uuid

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connections

from core.bench import percentile, use_bench_database


def bench_workflow(cmd, opts) -> dict:
    from core.models import AuditLog
    from core.roles import sync_roles
    from ops.models import Store

    from .models import Proposal, RestockRequest
    from .services import proposal_confirm, proposal_create

    db = use_bench_database("workflow")
    sync_roles()
    store = Store.objects.first()
    if store is None:
        from django.core.management import call_command

        call_command("seed_ops", "--days", "7", verbosity=0)
        store = Store.objects.first()
    tag = uuid.uuid4().hex[:8]
    User = get_user_model()
    staff = User.objects.create_user(f"bench_staff_{tag}")
    manager = User.objects.create_user(f"bench_manager_{tag}")
    staff.groups.add(Group.objects.get(name="staff"))
    manager.groups.add(Group.objects.get(name="manager"))
    store.members.add(staff, manager)
    n_proposals, n_attempts, n_threads = 200, 1000, 8
    ids = [
        proposal_create(user=staff, kind="restock", store=store, source="api", idempotency_key=f"bench:{tag}:{i}",
                        payload={"lines": [{"sku": "B001", "quantity": 1 + i % 20, "unit": "箱", "reason": "bench"}]})[0].pk
        for i in range(n_proposals)
    ]
    # Every proposal gets 5 attempts, shuffled so the 8 connections collide on the same rows.
    attempts = [pk for pk in ids for _ in range(n_attempts // n_proposals)]
    random.Random(3).shuffle(attempts)
    chunks = [attempts[i::n_threads] for i in range(n_threads)]
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(n_threads)

    def worker(batch):
        local = []
        try:
            barrier.wait()
            for pk in batch:
                t = time.perf_counter()
                proposal_confirm(proposal=pk, user=manager)
                local.append((time.perf_counter() - t) * 1000)
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            connections.close_all()
            with lock:
                latencies.extend(local)

    started = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(c,)) for c in chunks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started

    confirmed = Proposal.objects.filter(pk__in=ids, status="confirmed").count()
    restocks = RestockRequest.objects.filter(proposal_id__in=ids).count()
    figures = {
        "confirmations": AuditLog.objects.filter(target_id__in=ids, target_type__model="proposal", action=AuditLog.Action.CONFIRMED).count(),
        "duplicates": restocks - confirmed,
        "audit_rows": AuditLog.objects.filter(target_id__in=ids, target_type__model="proposal").count(),
        "p50_ms": round(percentile(latencies, 50), 2),
        "p95_ms": round(percentile(latencies, 95), 2),
        "attempts": len(latencies),
        "errors": errors[:5],
        "proposals": n_proposals,
        "connections": n_threads,
    }
    cmd.stdout.write(
        f"bench workflow ({db}): {figures['attempts']} confirm attempts over {n_proposals} proposals from {n_threads} connections "
        f"in {elapsed:.2f} s · confirmations {figures['confirmations']} (must be {n_proposals}) · duplicate records "
        f"{figures['duplicates']} · audit rows {figures['audit_rows']} · p50 {figures['p50_ms']} ms · p95 {figures['p95_ms']} ms"
        + (f" · errors: {errors[:3]}" if errors else "")
    )
    return figures
