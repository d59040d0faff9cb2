"""`manage.py bench ops`: store_sales / compare_stores latency at 1M orders and POS batch ingest rate."""
from __future__ import annotations

import random
import time
from datetime import timedelta
from decimal import Decimal

from django.db import connection
from tqdm import tqdm

from core.bench import percentile, stopwatch, use_bench_database


def bench_ops(cmd, opts) -> dict:
    from django.contrib.auth import get_user_model

    from ops.models import Order, Product, Store
    from ops.services import orders_ingest
    from ops.tools import local_today, paid_orders, run_tool

    db = use_bench_database("ops")
    cmd.stdout.write(f"bench ops: database {db}")
    n_orders = Order.objects.count()
    if abs(n_orders - opts["orders"]) > opts["orders"] * 0.1:
        from django.core.management import call_command

        cmd.stdout.write(f"seeding {opts['orders']:,} orders over {opts['days']} days (found {n_orders:,}) …")
        call_command("seed_ops", "--reset", "--orders", str(opts["orders"]), "--days", str(opts["days"]), stdout=cmd.stdout, stderr=cmd.stderr)
        with connection.cursor() as cur:
            cur.execute("VACUUM ANALYZE")
        n_orders = Order.objects.count()
    stores = list(Store.objects.all())

    # store_sales over 30 days, one store at a time, the question staff ask most.
    timings: list[float] = []
    today = local_today()
    for i in tqdm(range(opts["queries"]), desc="store_sales", file=cmd.stderr):
        store = stores[i % len(stores)]
        with stopwatch(timings):
            run_tool("store_sales", {"store": store.code, "period": "近30天"}, user=None, today=today)
    all_timings: list[float] = []
    compare_timings: list[float] = []
    for _ in range(max(20, opts["queries"] // 5)):
        with stopwatch(all_timings):
            run_tool("store_sales", {"period": "近30天"}, user=None, today=today)
        with stopwatch(compare_timings):
            run_tool("compare_stores", {"period": "近30天"}, user=None, today=today)

    from django.db.models import Sum

    from ops.models import StoreDaySales
    from ops.periods import parse_period

    period = parse_period("近30天", today)
    rollup = StoreDaySales.objects.filter(day__gte=period.start, day__lte=period.end)
    plan = rollup.values("store_id").annotate(revenue=Sum("revenue")).order_by().explain(analyze=True)
    index_used = "storedaysales_day_store_uniq" in plan
    # The rollup must equal the orders it summarises (kept by triggers through seed COPY and ingest).
    direct = paid_orders(period, None).aggregate(revenue=Sum("total"))["revenue"]
    rollup_exact = direct == rollup.aggregate(revenue=Sum("revenue"))["revenue"]

    # POS batch ingest through the same service the API calls: 20 batches × 500 orders.
    User = get_user_model()
    user, _ = User.objects.get_or_create(username="bench_pos", defaults={"is_superuser": True})
    products = list(Product.objects.all())
    rng = random.Random(7)
    stamp = int(time.time())
    batches = []
    for b in range(20):
        batch = []
        for k in range(500):
            lines = []
            for product in rng.sample(products, rng.randint(1, 4)):
                qty = rng.randint(1, 3)
                lines.append({"sku": product.sku, "qty": qty, "unit_price": str(product.price), "amount": str(product.price * qty)})
            batch.append({
                "store": stores[k % len(stores)].code, "external_id": f"BENCH-{stamp}-{b}-{k}",
                "created_at": (today - timedelta(days=1)).isoformat() + "T20:00:00+08:00", "channel": "堂食",
                "total": str(sum(Decimal(line["amount"]) for line in lines)), "lines": lines,
            })
        batches.append(batch)
    written, t0 = 0, time.perf_counter()
    for batch in tqdm(batches, desc="pos ingest", file=cmd.stderr):
        written += orders_ingest(orders=batch, user=user).lines_written
    pos_seconds = time.perf_counter() - t0

    figures = {
        "orders": n_orders,
        "store_sales_p50_ms": round(percentile(timings, 50), 2),
        "store_sales_p95_ms": round(percentile(timings, 95), 2),
        "store_sales_all_stores_p50_ms": round(percentile(all_timings, 50), 2),
        "store_sales_all_stores_p95_ms": round(percentile(all_timings, 95), 2),
        "compare_stores_p50_ms": round(percentile(compare_timings, 50), 2),
        "compare_stores_p95_ms": round(percentile(compare_timings, 95), 2),
        "rollup_exact": rollup_exact,
        "pos_lines_per_s": round(written / pos_seconds, 1),
        "pos_orders": sum(len(b) for b in batches),
        "explain_index_used": index_used,
    }
    cmd.stdout.write("EXPLAIN ANALYZE (store_sales / compare_stores, all stores, 30 days, daily rollup):\n" + plan)
    cmd.stdout.write(
        f"bench ops: {n_orders:,} orders · store_sales 30d p50 {figures['store_sales_p50_ms']} ms "
        f"p95 {figures['store_sales_p95_ms']} ms (all stores p50 {figures['store_sales_all_stores_p50_ms']} ms, "
        f"compare_stores p50 {figures['compare_stores_p50_ms']} ms p95 {figures['compare_stores_p95_ms']} ms; "
        f"rollup equals the orders: {'yes' if rollup_exact else 'NO'}) · "
        f"POS ingest {figures['pos_lines_per_s']:,} lines/s ({written:,} lines in {pos_seconds:.2f} s) · "
        f"index used: {'yes' if index_used else 'NO'}"
    )
    return figures
