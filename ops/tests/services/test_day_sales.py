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
from ops.tools import local_today, paid_orders
from ops.tools.compare_stores import compare_stores
from ops.tools.store_sales import store_sales

pytestmark = pytest.mark.django_db


def direct(period: Period, store: Store | None = None) -> dict:
    """The same figures aggregated from every order, as store_sales did before the rollup."""
    return {
        r["store_id"]: (r["revenue"], r["orders"])
        for r in paid_orders(period, store).values("store_id").annotate(revenue=Sum("total"), orders=Count("*")).order_by()
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
    orders = [  # trading days: 06:00 to 06:00 local
        order_payload("DS-1", created_at="2026-01-05T06:00:00+08:00"),  # first instant of the trading day
        order_payload("DS-2", created_at="2026-01-06T05:59:59+08:00"),  # its last second, in the small hours
        order_payload("DS-3", created_at="2026-01-05T22:30:00Z"),        # 06:30 on the 6th in Shanghai: the next day
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


def test_today_at_closing_time_is_the_night_still_going_not_the_last_ninety_minutes(monkeypatch):
    # At 01:30 「今天卖了多少」 counted the orders since midnight; 「昨晚」 at 03:00 was the calendar day
    # before, with that night's small hours and without tonight's.
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from django.utils import timezone

    from ops.tools import run_tool

    store = Store.objects.get(code="GZ-TH")
    user = make_user("trading_day_pos", role="pos", stores=["GZ-TH"])
    orders_ingest(user=user, orders=[
        order_payload("TD-1", created_at="2026-01-05T02:00:00+08:00"),  # the night of the 4th, in its small hours
        order_payload("TD-2", created_at="2026-01-05T20:00:00+08:00"),  # tonight
        order_payload("TD-3", created_at="2026-01-06T00:45:00+08:00"),  # tonight, after midnight
    ])
    monkeypatch.setattr(timezone, "now", lambda: datetime(2026, 1, 6, 1, 30, tzinfo=ZoneInfo("Asia/Shanghai")))
    assert local_today() == date(2026, 1, 5)
    tonight = run_tool("store_sales", {"store": "天河店", "period": "今天"}, user=None).rows[0]
    assert (tonight["orders"], tonight["revenue"]) == (2, 116.0)
    last_night = run_tool("store_sales", {"store": "天河店", "period": "昨晚"}, user=None).rows[0]
    assert (last_night["orders"], last_night["revenue"]) == (1, 58.0)
    assert from_tool(Period(date(2026, 1, 5), date(2026, 1, 5), "那天"), store) == as_float(
        direct(Period(date(2026, 1, 5), date(2026, 1, 5), "那天"), store)) == {store.pk: (116.0, 2)}  # the rollup agrees
