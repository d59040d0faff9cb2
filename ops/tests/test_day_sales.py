"""The daily sales rollup store_sales and compare_stores read: kept exact by PostgreSQL
triggers through every way orders are written (the seeder's COPY, the POS ingest service,
ORM updates and deletes, TRUNCATE), with local-day bounds exactly those of the tools."""
from datetime import date, timedelta

import pytest
from django.db import connection
from django.db.models import Count, Sum

from ops.models import Order, Store, StoreDaySales
from ops.periods import Period
from ops.services import orders_ingest
from ops.tests.factories import make_user, order_payload
from ops.tools import _paid_orders, compare_stores, local_today, store_sales

pytestmark = pytest.mark.django_db


def direct(period: Period, store: Store | None = None) -> dict:
    """The same figures aggregated from every order, as store_sales did before the rollup."""
    return {
        r["store_id"]: (r["revenue"], r["orders"])
        for r in _paid_orders(period, store).values("store_id").annotate(revenue=Sum("total"), orders=Count("*")).order_by()
    }


def from_tool(period: Period, store: Store | None = None) -> dict:
    stores = {s.name: s.pk for s in Store.objects.all()}
    return {stores[r["store"]]: (r["revenue"], r["orders"]) for r in store_sales(store=store, period=period).rows if r["orders"]}


def as_float(figures: dict) -> dict:
    return {k: (float(v[0]), v[1]) for k, v in figures.items()}


def test_rollup_matches_every_order_for_the_seeded_data():
    today = local_today()
    for days in (1, 7, 30, 90):
        period = Period(today - timedelta(days=days), today - timedelta(days=1), f"近{days}天")
        assert from_tool(period) == as_float(direct(period))
        gz = Store.objects.get(code="GZ-TH")
        assert from_tool(period, gz) == as_float(direct(period, gz))
    assert StoreDaySales.objects.exists()


def test_rollup_follows_ingest_refund_move_delete_and_truncate():
    store = Store.objects.get(code="GZ-TH")
    user = make_user("daysales_pos", role="pos", stores=["GZ-TH"])
    day = date(2026, 1, 5)  # no seeded orders on this day or the next
    day_period, next_period = Period(day, day, "那天"), Period(day + timedelta(days=1), day + timedelta(days=1), "次日")
    orders = [
        order_payload("DS-1", created_at="2026-01-05T00:00:00+08:00"),  # first instant of the local day
        order_payload("DS-2", created_at="2026-01-05T23:59:59+08:00"),  # last second of the local day
        order_payload("DS-3", created_at="2026-01-05T16:30:00Z"),        # 00:30 on the 6th in Shanghai
        order_payload("DS-4", created_at="2026-01-05T12:00:00+08:00", status="refunded"),
    ]
    orders_ingest(orders=orders, user=user)
    assert from_tool(day_period, store) == as_float(direct(day_period, store)) == {store.pk: (116.0, 2)}
    assert from_tool(next_period, store) == {store.pk: (58.0, 1)}

    Order.objects.filter(store=store, external_id="DS-1").update(status=Order.Status.REFUNDED)
    assert from_tool(day_period, store) == {store.pk: (58.0, 1)}
    Order.objects.filter(store=store, external_id="DS-4").update(status=Order.Status.PAID, total=10)
    assert from_tool(day_period, store) == as_float(direct(day_period, store)) == {store.pk: (68.0, 2)}
    Order.objects.filter(store=store, external_id="DS-3").update(created_at="2026-01-05T10:00:00+08:00")
    assert from_tool(day_period, store) == {store.pk: (126.0, 3)} and from_tool(next_period, store) == {}
    Order.objects.filter(store=store, external_id__in=["DS-2", "DS-3"]).delete()
    assert from_tool(day_period, store) == as_float(direct(day_period, store)) == {store.pk: (10.0, 1)}

    with connection.cursor() as cur:  # inside the test's transaction: rolled back afterwards
        cur.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cur.execute("TRUNCATE ops_order CASCADE")
    assert not StoreDaySales.objects.exists()


def test_compare_stores_reads_the_same_figures():
    today = local_today()
    period = Period(today - timedelta(days=30), today - timedelta(days=1), "近30天")
    rows = compare_stores(period=period).rows
    expected = as_float(direct(period))
    names = {s.pk: s.name for s in Store.objects.all()}
    assert {r["store"]: (r["revenue"], r["orders"]) for r in rows} == {names[k]: v for k, v in expected.items()}
    assert [r["revenue"] for r in rows] == sorted((r["revenue"] for r in rows), reverse=True)
