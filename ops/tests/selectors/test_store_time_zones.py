"""Each store's trading day runs 06:00 to 06:00 on its own clock (Store.timezone), in every
tool and in the daily rollup: the trading day was Asia/Shanghai for every store, so a store
in Tokyo had its 06:30 opening orders counted on the day before."""
from datetime import date, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db.models import Count, Sum

from ops.models import Product, Store, StoreDaySales
from ops.periods import Period
from ops.selectors import first_sale_date
from ops.services import orders_ingest
from ops.tests.factories import make_user, order_payload
from ops.tools import paid_orders, run_tool
from ops.tools.channel_sales import channel_sales
from ops.tools.daily_trend import daily_trend
from ops.tools.hourly_peak import hourly_peak
from ops.tools.product_daily import product_daily
from ops.tools.product_sales import product_sales
from ops.tools.store_sales import store_sales
from ops.tools.top_products import top_products

pytestmark = pytest.mark.django_db

DAY = date(2026, 1, 5)  # no seeded orders on this day or the days around it
THAT_DAY = Period(DAY, DAY, "那天")


@pytest.fixture
def tokyo(settings):
    """深圳福田店 moved to Tokyo (UTC+9, an hour ahead of the other stores), with three orders."""
    settings.SM_ORDER_MAX_AGE_DAYS = 0  # orders on fixed dates, however long ago they are by now
    store = Store.objects.get(code="SZ-FT")
    store.timezone = "Asia/Tokyo"
    store.save()
    user = make_user("tz_pos", role="pos", stores=["SZ-FT", "GZ-TH"])
    orders_ingest(user=user, orders=[
        # 06:30 in Tokyo is 05:30 in Shanghai: the Tokyo store's day has begun, Shanghai's has not
        order_payload("TZ-1", store="SZ-FT", created_at="2026-01-05T06:30:00+09:00"),
        # 05:30 on the 6th in Tokyo: still the night of the 5th there
        order_payload("TZ-2", store="SZ-FT", created_at="2026-01-06T05:30:00+09:00"),
        # 06:30 on the 6th in Tokyo: the next trading day
        order_payload("TZ-3", store="SZ-FT", created_at="2026-01-06T06:30:00+09:00"),
        # the Shanghai store at 06:30 its own time, the 5th
        order_payload("TZ-4", store="GZ-TH", created_at="2026-01-05T06:30:00+08:00"),
    ])
    return store


def rollup(store: Store) -> dict:
    days = StoreDaySales.objects.filter(store=store, day__gte=DAY - timedelta(days=2), day__lte=DAY + timedelta(days=2))
    return {d.day: (float(d.revenue), d.orders) for d in days if d.orders}


def direct(store: Store) -> dict:
    """Each day of the week around DAY from the orders themselves, through the tools' own bounds."""
    out = {}
    for i in range(-2, 3):
        day = DAY + timedelta(days=i)
        agg = paid_orders(Period(day, day, "那天"), store).aggregate(revenue=Sum("total"), orders=Count("*"))
        if agg["orders"]:
            out[day] = (float(agg["revenue"]), agg["orders"])
    return out


def test_every_tool_counts_a_stores_day_on_its_own_clock(tokyo):
    shanghai = Store.objects.get(code="GZ-TH")
    assert store_sales(store=tokyo, period=THAT_DAY).rows[0]["orders"] == 2
    assert store_sales(store=shanghai, period=THAT_DAY).rows[0]["orders"] == 1
    assert {r["channel"]: r["orders"] for r in channel_sales(store=tokyo, period=THAT_DAY).rows}["堂食"] == 2
    beer = Product.objects.get(sku="B001")
    assert product_sales(product=beer, store=tokyo, period=THAT_DAY).rows[0]["qty"] == 4
    assert {r["product"]: r["qty"] for r in top_products(store=tokyo, period=THAT_DAY).rows}[beer.name] == 4
    assert [(r["date"], r["orders"]) for r in daily_trend(store=tokyo, period=THAT_DAY).rows] == [("2026-01-05", 2)]
    two_days = Period(DAY, DAY + timedelta(days=1), "两天")
    assert [(r["date"], r["qty"]) for r in product_daily(product=beer, store=tokyo, period=two_days).rows] == \
        [("2026-01-05", 4), ("2026-01-06", 2)]
    both_days = product_daily(product=beer, store=None, period=two_days, scope=[tokyo, shanghai]).rows
    assert [(r["date"], r["qty"]) for r in both_days] == [("2026-01-05", 6), ("2026-01-06", 2)]  # each store on its clock
    # the hour is the store's: 06:00 and 05:00 in Tokyo, in the order of the night's trade
    assert [r["hour"] for r in hourly_peak(store=tokyo, period=THAT_DAY).rows] == ["06:00", "05:00"]
    both = [r["hour"] for r in hourly_peak(store=None, period=THAT_DAY, scope=[tokyo, shanghai]).rows]
    assert both == ["06:00", "05:00"]  # Shanghai's 06:30 is its own 06:00, not Tokyo's 07:00
    # the chain's totals add each store's own day
    chain = store_sales(store=None, period=THAT_DAY, scope=[tokyo, shanghai]).rows
    assert sum(r["orders"] for r in chain) == 3


def test_the_rollup_keeps_each_stores_day_and_is_rebuilt_when_its_zone_changes(tokyo):
    assert rollup(tokyo) == direct(tokyo) == {DAY: (116.0, 2), DAY + timedelta(days=1): (58.0, 1)}
    tokyo.timezone = "Asia/Shanghai"  # back on the chain's clock: an hour earlier, each order before 06:00
    tokyo.save()
    assert rollup(tokyo) == direct(tokyo) == {DAY - timedelta(days=1): (58.0, 1), DAY: (116.0, 2)}
    shanghai = Store.objects.get(code="GZ-TH")
    assert rollup(shanghai) == direct(shanghai) == {DAY: (58.0, 1)}  # the other stores untouched


def test_a_question_reads_the_store_on_its_own_clock(tokyo):
    # through run_tool and placed_in (store_sales reads the rollup; channel_sales the orders)
    result = run_tool("channel_sales", {"store": "福田店", "period": "2026年1月5日"}, user=None)
    assert {r["channel"]: r["orders"] for r in result.rows}["堂食"] == 2


def test_the_first_trading_day_is_the_earliest_of_every_stores_own_clock(tokyo):
    # Tokyo's 06:30 on 03-02 is earlier than Shanghai's 05:45 on 03-02, which is Shanghai's 03-01.
    user = make_user("tz_first_pos", role="pos", stores=["SZ-FT", "GZ-TH"])
    orders_ingest(user=user, orders=[order_payload("TZ-T", store="SZ-FT", created_at="2020-03-02T06:30:00+09:00"),
                                     order_payload("TZ-S", store="GZ-TH", created_at="2020-03-02T05:45:00+08:00")])
    assert first_sale_date() == date(2020, 3, 1)


def test_today_about_one_store_is_that_stores_trading_day(monkeypatch):
    # 10:00 in Shanghai on 11-20 is 18:00 on 11-19 in Los Angeles: the chain's 「今天」 is the 20th,
    # the LA store's is still the 19th (its 20th has not begun: ¥0 all day before).
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from django.utils import timezone

    from agent.data_guard import plan_data
    from ops.trading_day import local_today

    store = Store.objects.get(code="SZ-FT")
    store.timezone = "America/Los_Angeles"
    store.save()
    monkeypatch.setattr(timezone, "now", lambda: datetime(2026, 11, 20, 10, 0, tzinfo=ZoneInfo("Asia/Shanghai")))
    assert local_today() == date(2026, 11, 20)
    asked = run_tool("store_sales", {"store": "福田店", "period": "今天"}, user=None)  # REST and MCP
    assert asked.params["period"]["start"] == "2026-11-19"
    planned = plan_data("福田店今天卖了多少", today=local_today())  # chat
    assert planned.params["period"]["start"] == "2026-11-19"
    # a store on the chain's clock, and all stores at once, keep the chain's date
    assert run_tool("store_sales", {"store": "天河店", "period": "今天"}, user=None).params["period"]["start"] == "2026-11-20"
    assert run_tool("store_sales", {"period": "今天"}, user=None).params["period"]["start"] == "2026-11-20"


def test_a_store_zone_must_be_an_iana_name():
    store = Store.objects.get(code="GZ-TH")
    store.timezone = "Beijing"
    with pytest.raises(ValidationError) as err:
        store.full_clean()
    assert "IANA" in str(err.value.message_dict["timezone"])
    store.timezone = "Asia/Urumqi"
    store.full_clean()


def test_a_zone_postgresql_does_not_know_is_refused_however_the_store_is_written():
    # Store.objects.create skips the form's validator: the zone reached the rollup's trigger and
    # every order of that store failed as 「数据超出允许范围」.
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError, match="Beijing"), transaction.atomic():
        Store.objects.create(code="XX-BJ", name="北京测试店", city="北京", timezone="Beijing")
    with pytest.raises(IntegrityError, match="Mars/Olympus"), transaction.atomic():
        Store.objects.filter(code="GZ-TH").update(timezone="Mars/Olympus")
