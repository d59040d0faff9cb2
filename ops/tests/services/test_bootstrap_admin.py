"""`make run`'s bootstrap is idempotent; admin works for every ops model; seeding is deterministic."""
import hashlib
import io
from datetime import date

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection, transaction

from ops.models import ApiToken, Order

pytestmark = pytest.mark.django_db


def row_counts():
    with connection.cursor() as cur:
        counts = {}
        for model in apps.get_app_config("ops").get_models():
            cur.execute(f"SELECT COUNT(*) FROM {model._meta.db_table}")
            counts[model._meta.db_table] = cur.fetchone()[0]
        counts["users"] = get_user_model().objects.count()
        return counts


def test_bootstrap_twice_adds_nothing(settings, monkeypatch):
    settings.SM_DEMO = True
    # The clock stands still between the two runs: the second one tops the demo orders up to
    # "now", and a demo order timed between two real instants a second apart made this test flaky.
    from django.utils import timezone

    from ops import seed

    frozen = timezone.now()
    monkeypatch.setattr(seed.timezone, "now", lambda: frozen)
    out = io.StringIO()
    call_command("bootstrap", stdout=out, stderr=io.StringIO())
    first = row_counts()
    call_command("bootstrap", stdout=out, stderr=io.StringIO())
    assert row_counts() == first
    text = out.getvalue()
    assert "storemind-demo" in text and "/admin/" in text and "/api/docs/" in text
    # each demo user with role and store code, so `staff_sz_ft` is visibly the SZ-FT store's 店员
    assert any(line.split()[:4] == ["staff_sz_ft", "店员", "SZ-FT", "深圳福田店"] for line in text.splitlines())
    assert any(line.split()[:2] == ["demo_hq", "总部"] for line in text.splitlines())
    staff = get_user_model().objects.get(username="demo_staff")
    assert list(staff.groups.values_list("name", flat=True)) == ["staff"]
    assert [s.name for s in staff.stores.all()] == ["广州天河店"]
    assert get_user_model().objects.get(username="demo_manager").groups.filter(name="manager").exists()
    assert get_user_model().objects.filter(username__startswith="manager_").count() == 3
    assert ApiToken.objects.filter(store__code="GZ-TH", user__username="pos_gz_th").count() == 1


def test_the_demo_pos_token_is_refused_by_a_server_started_without_sm_demo(settings):
    """#28: bootstrapped with SM_DEMO=1, the README's demo POS token kept writing orders on a
    server started with SM_DEMO=0."""
    from rest_framework.test import APIClient

    from ops.services import DEMO_POS_TOKEN

    settings.SM_DEMO = True
    call_command("bootstrap", stdout=io.StringIO(), stderr=io.StringIO())
    pos = APIClient()
    pos.credentials(HTTP_AUTHORIZATION=f"Bearer {DEMO_POS_TOKEN}")
    from ops.models import Order
    from ops.tests.factories import order_payload

    assert pos.post("/api/v1/orders", order_payload("demo-token-on"), format="json").status_code == 201  # SM_DEMO=1
    settings.SM_DEMO = False
    r = pos.post("/api/v1/orders", order_payload("demo-token-off"), format="json")
    assert r.status_code == 401 and "SM_DEMO=1" in r.json()["detail"]
    assert not Order.objects.filter(external_id="demo-token-off").exists()


def test_demo_users_only_with_sm_demo(settings):
    settings.SM_DEMO = False
    call_command("bootstrap", stdout=io.StringIO(), stderr=io.StringIO())
    assert not get_user_model().objects.filter(username="demo_staff").exists()


def seed_digest(seed: int) -> str:
    with connection.cursor() as cur:  # inside the test's transaction: rolled back afterwards
        cur.execute("SET CONSTRAINTS ALL IMMEDIATE")  # deferred FK checks would block TRUNCATE
        cur.execute("ALTER TABLE workflow_auditlog DISABLE TRIGGER core_audit_no_truncate")  # rolled back with the test
        cur.execute("TRUNCATE workflow_auditlog, workflow_restockline, workflow_restockrequest, workflow_ticket, workflow_proposal, "
                    "ops_apitoken, ops_inventoryadjustment, ops_storedvaluetxn, ops_storedvalueaccount, ops_orderline, ops_order, "
                    "ops_inventory, ops_member, ops_product, ops_store_members, ops_store CASCADE")
    call_command("seed_ops", "--days", "3", "--seed", str(seed), "--end-date", "2026-11-01", verbosity=0)
    with connection.cursor() as cur:
        cur.execute("SELECT string_agg(external_id || total::text || created_at::text || channel || status, ',' ORDER BY external_id) FROM ops_order")
        orders = cur.fetchone()[0]
        cur.execute("SELECT string_agg(p.sku || i.on_hand, ',' ORDER BY i.store_id, p.sku) FROM ops_inventory i JOIN ops_product p ON p.id=i.product_id")
        inventory = cur.fetchone()[0]
    return hashlib.sha256((orders + inventory).encode()).hexdigest()


def test_seed_is_deterministic():
    with transaction.atomic():
        a = seed_digest(7)
        b = seed_digest(7)
        c = seed_digest(8)
        assert a == b != c
        last = Order.objects.order_by("-created_at").first().created_at.date()
        assert last <= date(2026, 11, 1)
        transaction.set_rollback(True)


def test_default_seed_is_realistic():
    from ops.models import Inventory, Member, Store

    n_orders = Order.objects.count()
    assert 5500 <= n_orders <= 7500
    assert Store.objects.count() == 4
    for store in Store.objects.all():
        assert Inventory.objects.filter(store=store, on_hand__lt=models_F("safety_stock")).count() >= 2
    assert Member.objects.filter(account__principal_balance__gt=0).count() >= 50
    with connection.cursor() as cur:
        cur.execute(
            "SELECT EXTRACT(ISODOW FROM created_at AT TIME ZONE 'Asia/Shanghai') d, COUNT(*) FROM ops_order GROUP BY d ORDER BY d"
        )
        by_day = dict(cur.fetchall())
    assert by_day[6] > by_day[1] * 1.4  # Saturdays are busier than Mondays


def models_F(name):
    from django.db.models import F

    return F(name)


@pytest.mark.parametrize("model", [m for m in apps.get_app_config("ops").get_models()])
def test_admin_changelists_load(admin_client, model):
    url = f"/admin/ops/{model._meta.model_name}/"
    assert admin_client.get(url).status_code == 200


def test_orders_are_read_only_in_admin(admin_client):
    order = Order.objects.first()
    assert admin_client.get("/admin/ops/order/add/").status_code == 403
    page = admin_client.get(f"/admin/ops/order/{order.pk}/change/")
    assert page.status_code == 200 and b'name="_save"' not in page.content
    assert admin_client.post(f"/admin/ops/order/{order.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Order.objects.filter(pk=order.pk).exists()


def test_bootstrap_without_demo_never_invents_sales(settings):
    settings.SM_DEMO = False
    with connection.cursor() as cur:  # an empty production database, inside this test's transaction
        cur.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cur.execute("ALTER TABLE workflow_auditlog DISABLE TRIGGER core_audit_no_truncate")  # rolled back with the test
        cur.execute("TRUNCATE workflow_auditlog, workflow_restockline, workflow_restockrequest, workflow_ticket, workflow_proposal, "
                    "ops_apitoken, ops_inventoryadjustment, ops_storedvaluetxn, ops_storedvalueaccount, ops_orderline, ops_order, "
                    "ops_inventory, ops_member, ops_product, ops_store_members, ops_store CASCADE")
    out = io.StringIO()
    call_command("bootstrap", stdout=out, stderr=io.StringIO())
    assert Order.objects.count() == 0 and "not seeding demo ops data" in out.getvalue()


def _empty_ops_tables():
    with connection.cursor() as cur:  # inside the test's transaction: rolled back afterwards
        cur.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cur.execute("ALTER TABLE workflow_auditlog DISABLE TRIGGER core_audit_no_truncate")
        cur.execute("TRUNCATE workflow_auditlog, workflow_restockline, workflow_restockrequest, workflow_ticket, workflow_proposal, "
                    "ops_apitoken, ops_inventoryadjustment, ops_storedvaluetxn, ops_storedvalueaccount, ops_orderline, ops_order, "
                    "ops_inventory, ops_member, ops_product, ops_store_members, ops_store CASCADE")


def test_the_demo_runs_up_to_this_moment_and_a_later_bootstrap_continues_it():
    # 「今天到现在卖了多少」 showed ¥0.00 on every demo day: the seed ended yesterday.
    from datetime import datetime, time, timedelta

    from ops import seed
    from ops.tools import TZ, local_today

    today = local_today()
    until = datetime.combine(today, time(19, 30), tzinfo=TZ)  # 19:30 of the trading day under way
    with transaction.atomic():
        _empty_ops_tables()
        report = seed.ops_seed(days=3, until=until)
        assert report.end == today
        todays = Order.objects.filter(created_at__gte=datetime.combine(today, time(6), tzinfo=TZ))
        assert todays.exists() and not todays.filter(created_at__gt=until).exists()

        # A `make run` two days later: the demo stores' orders continue from the last one to now.
        later = until + timedelta(days=2)
        last = Order.objects.order_by("-created_at").first().created_at
        added = seed.ops_top_up(now=later)
        assert added.orders > 0 and added.since == last
        new = Order.objects.filter(created_at__gt=last)
        assert new.count() == added.orders and not Order.objects.filter(created_at__gt=later).exists()
        assert Order.objects.values("store", "external_id").distinct().count() == Order.objects.count()
        assert seed.ops_top_up(now=later).orders == 0  # nothing twice
        transaction.set_rollback(True)


def test_a_period_running_into_today_says_what_today_is():
    # At 01:53 a user did not know why 12-01 was 「今天」: the trading day opens at 06:00.
    from ops.periods import Period
    from ops.tools import local_today

    today = local_today()
    said = Period(today, today, "今天").describe()
    assert said.startswith(f"今天（营业日 {today.month}月{today.day}日 06:00 起，截至 "), said
    week = Period(today.replace(day=1), today, "本月").describe()
    assert "营业日" in week and today.replace(day=1).isoformat() in week
    yesterday = today.fromordinal(today.toordinal() - 1)
    assert Period(yesterday, yesterday, "昨天").describe() == f"昨天（{yesterday.isoformat()}）"
