"""Each tool's figures against an aggregate computed independently (raw SQL over the
seeded data), plus store resolution and parameter validation."""
from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from ops.models import Member, Store
from ops.selectors import UnknownStore, find_store_in_text, resolve_store
from ops.tools import TOOLS, local_today, run_tool

pytestmark = pytest.mark.django_db


def sql_one(query, params):
    with connection.cursor() as cur:
        cur.execute(query, params)
        return cur.fetchall()


def day_bounds(start: date, end: date):
    """Trading days: 06:00 of the first to 06:00 after the last (Asia/Shanghai)."""
    return f"{start} 06:00:00+08", f"{end + timedelta(days=1)} 06:00:00+08"


@pytest.mark.parametrize(
    "text,name",
    [("天河店", "广州天河店"), ("天河", "广州天河店"), ("GZ-TH", "广州天河店"), ("福田店", "深圳福田店"),
     ("珠江新城", "广州珠江新城店"), ("祖庙店", "佛山祖庙店"), ("广州天河店", "广州天河店")],
)
def test_resolve_store_by_name_code_alias(text, name):
    assert resolve_store(text).name == name


def test_find_store_in_question_prefers_whitelist_over_regex():
    match = find_store_in_text("上周广州天河店卖了多少")
    assert match.store.name == "广州天河店"
    assert find_store_in_text("上周天河店卖了多少").store.name == "广州天河店"
    assert find_store_in_text("各店上周营业额").store is None
    assert find_store_in_text("上周卖了多少") is None
    # 「发店群」 is sending to the store's group chat, not a store called 「图发店」.
    assert find_store_in_text("我把客人的储值余额页面截个图发店群里让店长看行不") is None


def test_unknown_store_is_a_clear_error_listing_known_stores():
    with pytest.raises(UnknownStore) as exc:
        find_store_in_text("上周北京三里屯店卖了多少")
    message = exc.value.messages[0]
    assert "北京三里屯店" in message and "广州天河店" in message
    with pytest.raises(ValidationError) as exc:
        run_tool("store_sales", {"store": "三里屯店", "period": "上周"}, user=None)
    assert "store" in exc.value.message_dict


def test_store_sales_matches_independent_sql():
    today = local_today()
    result = run_tool("store_sales", {"store": "天河店", "period": "最近7天"}, today=today, user=None)
    start, end = today - timedelta(days=7), today - timedelta(days=1)
    lo, hi = day_bounds(start, end)
    (revenue, orders), = sql_one(
        "SELECT COALESCE(SUM(o.total),0), COUNT(*) FROM ops_order o JOIN ops_store s ON s.id=o.store_id "
        "WHERE s.code='GZ-TH' AND o.status='paid' AND o.created_at >= %s AND o.created_at < %s", [lo, hi])
    assert orders > 0
    row = result.rows[0]
    assert row["orders"] == orders
    assert Decimal(str(row["revenue"])) == revenue
    assert row["avg_ticket"] == round(float(revenue) / orders, 2)
    assert result.params == {"store": "广州天河店", "period": {"label": "最近7天", "start": str(start), "end": str(end)}}
    assert f"{orders} 单" in result.summary


def test_store_sales_all_stores_has_a_row_per_store_and_excludes_refunds():
    today = local_today()
    result = run_tool("store_sales", {"period": "上月"}, today=today, user=None)
    assert [r["store"] for r in result.rows] == list(Store.objects.values_list("name", flat=True))
    p = result.params["period"]
    lo, hi = day_bounds(date.fromisoformat(p["start"]), date.fromisoformat(p["end"]))
    (paid, refunded), = sql_one(
        "SELECT COUNT(*) FILTER (WHERE status='paid'), COUNT(*) FILTER (WHERE status='refunded') FROM ops_order "
        "WHERE created_at >= %s AND created_at < %s", [lo, hi])
    assert refunded > 0
    assert sum(r["orders"] for r in result.rows) == paid


def test_top_products_matches_sql_and_caps_n():
    result = run_tool("top_products", {"store": "福田", "period": "最近30天", "n": 3}, user=None)
    p = result.params["period"]
    lo, hi = day_bounds(date.fromisoformat(p["start"]), date.fromisoformat(p["end"]))
    expected = sql_one(
        "SELECT p.name, SUM(l.qty) q FROM ops_orderline l JOIN ops_order o ON o.id=l.order_id JOIN ops_product p ON p.id=l.product_id "
        "JOIN ops_store s ON s.id=o.store_id WHERE s.code='SZ-FT' AND o.status='paid' AND o.created_at >= %s AND o.created_at < %s "
        "GROUP BY p.id, p.name ORDER BY q DESC, SUM(l.amount) DESC, p.id LIMIT 3", [lo, hi])
    assert [(r["product"], r["qty"]) for r in result.rows] == [(n, q) for n, q in expected]
    for bad in (0, 51, "five", True):
        with pytest.raises(ValidationError) as exc:
            run_tool("top_products", {"period": "上周", "n": bad}, user=None)
        assert "n" in exc.value.message_dict


def test_top_products_by_sales_matches_sql_and_rejects_another_order():
    result = run_tool("top_products", {"store": "福田", "period": "最近30天", "n": 3, "by": "revenue"}, user=None)
    p = result.params["period"]
    lo, hi = day_bounds(date.fromisoformat(p["start"]), date.fromisoformat(p["end"]))
    expected = sql_one(
        "SELECT p.name, SUM(l.amount) a FROM ops_orderline l JOIN ops_order o ON o.id=l.order_id JOIN ops_product p ON p.id=l.product_id "
        "JOIN ops_store s ON s.id=o.store_id WHERE s.code='SZ-FT' AND o.status='paid' AND o.created_at >= %s AND o.created_at < %s "
        "GROUP BY p.id, p.name ORDER BY a DESC, SUM(l.qty) DESC, p.id LIMIT 3", [lo, hi])
    assert [(r["product"], r["revenue"]) for r in result.rows] == [(n, a) for n, a in expected]
    assert result.params["by"] == "revenue" and "销售额前 3" in result.summary
    with pytest.raises(ValidationError) as exc:
        run_tool("top_products", {"period": "上周", "by": "profit"}, user=None)
    assert exc.value.message_dict["by"] == ["by 只能是：qty、revenue。"]


def test_top_products_by_store_ranks_each_named_store_on_its_own_against_sql():
    # 「各店上周卖得最好的是什么」 got the chain's one ranking: each store's own, as SQL ranks them.
    result = run_tool("top_products", {"period": "最近30天", "n": 2, "by_store": True, "stores": ["福田", "天河"]}, user=None)
    p = result.params["period"]
    lo, hi = day_bounds(date.fromisoformat(p["start"]), date.fromisoformat(p["end"]))
    expected = []
    for code in ("SZ-FT", "GZ-TH"):  # the stores in the order they were named
        expected += sql_one(
            "SELECT s.name, p.name, SUM(l.qty) q FROM ops_orderline l JOIN ops_order o ON o.id=l.order_id "
            "JOIN ops_product p ON p.id=l.product_id JOIN ops_store s ON s.id=o.store_id WHERE s.code=%s AND o.status='paid' "
            "AND o.created_at >= %s AND o.created_at < %s GROUP BY s.name, p.id, p.name ORDER BY q DESC, SUM(l.amount) DESC, p.id LIMIT 2",
            [code, lo, hi])
    assert [(r["store"], r["product"], r["qty"]) for r in result.rows] == expected
    assert [r["rank"] for r in result.rows] == [1, 2, 1, 2]
    assert result.params["stores"] == ["深圳福田店", "广州天河店"] and result.params["store"] == "深圳福田店、广州天河店"
    assert "（每家店各自排名）" in result.summary and "广州天河店：1. " in result.summary
    every = run_tool("top_products", {"period": "最近30天", "n": 1, "by_store": True}, user=None)
    assert [r["store"] for r in every.rows] == list(Store.objects.order_by("code").values_list("name", flat=True))
    together = run_tool("top_products", {"period": "最近30天", "n": 2, "stores": ["福田", "天河"]}, user=None)
    assert "store" not in together.rows[0] and len(together.rows) == 2  # without by_store: the two stores as one
    with pytest.raises(ValidationError) as exc:
        run_tool("top_products", {"period": "上周", "by_store": "yes"}, user=None)
    assert "by_store" in exc.value.message_dict


def test_compare_stores_ranks_by_revenue_and_shares_sum_to_100():
    result = run_tool("compare_stores", {"period": "上周"}, user=None)
    revenues = [r["revenue"] for r in result.rows]
    assert revenues == sorted(revenues, reverse=True)
    assert abs(sum(r["revenue_share"] for r in result.rows) - 100) < 0.5
    by_orders = run_tool("compare_stores", {"period": "上周", "metric": "orders"}, user=None)
    assert [r["orders"] for r in by_orders.rows] == sorted((r["orders"] for r in by_orders.rows), reverse=True)


def test_compare_stores_named_ranks_only_those_stores():
    # HQ's 「天河店跟福田店比」 used to rank all four stores.
    every = {r["store"]: r for r in run_tool("compare_stores", {"period": "上周"}, user=None).rows}
    result = run_tool("compare_stores", {"period": "上周", "stores": ["福田", "GZ-TH"]}, user=None)
    assert sorted(r["store"] for r in result.rows) == ["广州天河店", "深圳福田店"]
    assert result.params["stores"] == ["深圳福田店", "广州天河店"]
    for r in result.rows:
        assert (r["revenue"], r["orders"]) == (every[r["store"]]["revenue"], every[r["store"]]["orders"])
    assert abs(sum(r["revenue_share"] for r in result.rows) - 100) < 0.2
    assert "广州天河店、深圳福田店" in result.summary or "深圳福田店、广州天河店" in result.summary


@pytest.mark.parametrize("bad", [["天河店"], ["天河店", "天河"], ["天河店", "三里屯店"], "天河店,福田店", ["天河店", 3], [""] * 2,
                                 ["天河店"] * 11])
def test_compare_stores_named_is_validated(bad):
    with pytest.raises(ValidationError) as exc:
        run_tool("compare_stores", {"period": "上周", "stores": bad}, user=None)
    assert "stores" in exc.value.message_dict


def test_compare_stores_named_outside_the_callers_stores_says_they_are_not_theirs():
    from ops.tests.factories import make_user

    staff = make_user("cmp_named_staff", role="staff", stores=["GZ-TH"])
    with pytest.raises(ValidationError) as exc:
        run_tool("compare_stores", {"period": "上周", "stores": ["天河店", "福田店"]}, user=staff)
    message = exc.value.message_dict["stores"][0]
    assert message == "深圳福田店的数据你没有权限查看；你可以查看：广州天河店。"


def test_comparing_stores_with_one_store_in_scope_says_there_is_nothing_to_compare():
    from ops.tests.factories import make_user

    staff = make_user("cmp_staff", role="staff", stores=["GZ-TH"])
    result = run_tool("compare_stores", {"period": "上周"}, user=staff)
    assert [r["store"] for r in result.rows] == ["广州天河店"]
    assert "只有广州天河店一家，没有可以对比的门店" in result.summary and "排名" not in result.summary


def test_hourly_peak_matches_sql_in_local_time():
    result = run_tool("hourly_peak", {"store": "天河店", "period": "最近30天"}, user=None)
    p = result.params["period"]
    lo, hi = day_bounds(date.fromisoformat(p["start"]), date.fromisoformat(p["end"]))
    expected = sql_one(
        "SELECT EXTRACT(HOUR FROM o.created_at AT TIME ZONE 'Asia/Shanghai')::int h, COUNT(*) FROM ops_order o "
        "JOIN ops_store s ON s.id=o.store_id WHERE s.code='GZ-TH' AND o.status='paid' AND o.created_at >= %s AND o.created_at < %s "
        "GROUP BY h ORDER BY h", [lo, hi])
    # In the order of a night: 17:00 … 23:00, then the small hours (00:00 was listed first).
    assert [(int(r["hour"][:2]), r["orders"]) for r in result.rows] == sorted(expected, key=lambda e: (e[0] - 6) % 24)
    assert result.rows[0]["hour"] >= "06:00" and result.rows[-1]["hour"] < "06:00"
    assert "21:00" in result.summary or "22:00" in result.summary


def sold_last_week(store_where: str, store_args: list, sku: str, today: date) -> int:
    """Paid units of `sku` over the 7 days before `today` at the store `store_where` picks (independent SQL)."""
    lo, hi = day_bounds(today - timedelta(days=7), today - timedelta(days=1))
    (sold,), = sql_one(
        "SELECT COALESCE(SUM(l.qty),0) FROM ops_orderline l JOIN ops_order o ON o.id=l.order_id JOIN ops_product p ON p.id=l.product_id "
        f"JOIN ops_store s ON s.id=o.store_id WHERE {store_where} AND p.sku=%s AND o.status='paid' AND o.created_at >= %s AND o.created_at < %s",
        [*store_args, sku, lo, hi])
    return sold


def test_low_stock_lists_every_item_below_safety_with_velocity():
    today = local_today()
    result = run_tool("low_stock", {"store": "天河店"}, today=today, user=None)
    expected = sql_one(
        "SELECT p.name FROM ops_inventory i JOIN ops_product p ON p.id=i.product_id JOIN ops_store s ON s.id=i.store_id "
        "WHERE s.code='GZ-TH' AND i.on_hand < i.safety_stock ORDER BY p.sku", [])
    assert [r["product"] for r in result.rows] == [n for (n,) in expected]
    assert len(result.rows) >= 1
    row = result.rows[0]
    sold = sold_last_week("s.code='GZ-TH'", [], row["sku"], today)
    assert row["sold_7d"] == sold
    assert row["velocity_per_day"] == round(sold / 7, 2)
    assert row["suggested_qty"] >= row["safety_stock"] - row["on_hand"]
    for r in result.rows:  # the SOP's formula: safety stock + 7 days at the last 7 days' average − on hand
        assert r["suggested_qty"] == max(0, r["safety_stock"] + r["sold_7d"] - r["on_hand"]), r["product"]
    for r in result.rows:
        assert r["product"] in result.summary


def test_product_stock_shows_one_products_stock_in_each_store_whatever_its_level():
    # 「黑牌还剩几瓶」 got the low-stock list (黑牌 was not on it) or the 安全库存 rule's 「黑牌 6 瓶」.
    today = local_today()
    result = run_tool("product_stock", {"product": "黑牌"}, today=today, user=None)
    expected = sql_one(
        "SELECT s.name, i.on_hand, i.safety_stock FROM ops_inventory i JOIN ops_product p ON p.id=i.product_id "
        "JOIN ops_store s ON s.id=i.store_id WHERE p.sku='W001' ORDER BY s.code", [])
    assert [(r["store"], r["on_hand"], r["safety_stock"]) for r in result.rows] == list(expected)
    assert any(on_hand >= safety for _, on_hand, safety in expected)  # stock above its safety level is shown too
    sold = sold_last_week("s.name=%s", [result.rows[0]["store"]], "W001", today)
    assert result.rows[0]["sold_7d"] == sold and result.params["product"] == "尊尼获加黑牌"
    assert all(f"{r['store']} 在库 {r['on_hand']}" in result.summary for r in result.rows)


def test_product_stock_for_a_stores_staff_is_their_store_only():
    from ops.tests.factories import make_user

    staff = make_user("stock_staff", role="staff", stores=["GZ-TH"])
    mine = run_tool("product_stock", {"product": "扎啤"}, user=staff)
    assert [r["store"] for r in mine.rows] == ["广州天河店"]
    with pytest.raises(ValidationError) as exc:
        run_tool("product_stock", {"product": "扎啤", "store": "福田店"}, user=staff)
    assert "store" in exc.value.message_dict
    with pytest.raises(ValidationError) as exc:
        run_tool("product_stock", {"store": "天河店"}, user=staff)
    assert "product" in exc.value.message_dict


def test_channel_sales_matches_independent_sql_with_refunds_apart():
    # 「上周外卖卖了多少」 and 「昨天退款了几单」 were answered with every channel's paid total.
    result = run_tool("channel_sales", {"store": "天河店", "period": "最近30天"}, user=None)
    p = result.params["period"]
    lo, hi = day_bounds(date.fromisoformat(p["start"]), date.fromisoformat(p["end"]))
    expected = {(channel, status): (amount, n) for channel, status, amount, n in sql_one(
        "SELECT o.channel, o.status, SUM(o.total), COUNT(*) FROM ops_order o JOIN ops_store s ON s.id=o.store_id "
        "WHERE s.code='GZ-TH' AND o.created_at >= %s AND o.created_at < %s GROUP BY o.channel, o.status", [lo, hi])}
    assert [r["channel"] for r in result.rows] == ["堂食", "外卖", "团购"]
    for row in result.rows:
        paid, paid_n = expected.get((row["channel"], "paid"), (Decimal("0"), 0))
        refunded, refunded_n = expected.get((row["channel"], "refunded"), (Decimal("0"), 0))
        assert (Decimal(str(row["revenue"])), row["orders"]) == (paid, paid_n), row["channel"]
        assert (Decimal(str(row["refunded_amount"])), row["refunded_orders"]) == (refunded, refunded_n), row["channel"]
    assert sum(n for (_, status), (_, n) in expected.items() if status == "refunded") > 0  # the seed has refunds
    assert f"退款 {sum(r['refunded_orders'] for r in result.rows)} 单" in result.summary
    paid = sum(r["revenue"] for r in result.rows)
    assert [r["revenue_share"] for r in result.rows] == [round(r["revenue"] / paid * 100, 1) for r in result.rows]


def test_member_balance_at_another_store_says_only_the_principal_can_be_spent_there():
    # 福田's staff saw 「合计 ¥967.00」 for a 天河 member, of which only the principal can be spent at 福田.
    from ops.tests.factories import make_user

    member = Member.objects.filter(account__isnull=False, home_store__code="GZ-TH", account__bonus_balance__gt=0).first()
    away = run_tool("member_balance", {"member": member.number}, user=make_user("mb_ft", role="staff", stores=["SZ-FT"])).rows[0]
    home = run_tool("member_balance", {"member": member.number}, user=make_user("mb_th", role="staff", stores=["GZ-TH"])).rows[0]
    assert away["usable_here"] == away["principal_balance"] < away["total_balance"]
    assert "usable_here" not in home and "usable_here" not in run_tool("member_balance", {"member": member.number}, user=None).rows[0]


def test_period_compare_puts_two_periods_side_by_side_with_the_change():
    # 「上周跟上上周比营业额涨了还是跌了」 got one of the two figures (or 「一次只能查一段」).
    result = run_tool("period_compare", {"store": "天河店", "period": "上周", "baseline": "上上周"}, user=None)
    now, before = result.rows
    for row, period in ((now, "上周"), (before, "上上周")):
        total = run_tool("store_sales", {"store": "天河店", "period": period}, user=None).rows[0]
        assert (row["period"], row["revenue"], row["orders"]) == (period, total["revenue"], total["orders"])
        lo, hi = day_bounds(date.fromisoformat(row["start"]), date.fromisoformat(row["end"]))
        (paid,), = sql_one("SELECT COALESCE(SUM(o.total),0) FROM ops_order o JOIN ops_store s ON s.id=o.store_id "
                           "WHERE s.code='GZ-TH' AND o.status='paid' AND o.created_at >= %s AND o.created_at < %s", [lo, hi])
        assert Decimal(str(row["revenue"])) == paid
    delta = round(now["revenue"] - before["revenue"], 2)
    assert (f"营业额{'增加' if delta > 0 else '减少'} ¥{abs(delta):,.2f}" if delta else "营业额持平") in result.summary
    assert result.params["baseline"]["label"] == "上上周"
    with pytest.raises(ValidationError) as exc:
        run_tool("period_compare", {"period": "上周"}, user=None)
    assert "baseline" in exc.value.message_dict


def test_member_balance_is_masked_and_matches_ledger():
    member = Member.objects.filter(account__isnull=False).order_by("number").first()
    result = run_tool("member_balance", {"member": member.phone}, user=None)
    row = result.rows[0]
    assert member.phone not in str(result.as_dict())
    assert row["phone"] == member.phone[:3] + "****" + member.phone[-4:]
    (principal, bonus), = sql_one(
        "SELECT SUM(principal_delta), SUM(bonus_delta) FROM ops_storedvaluetxn WHERE account_id=%s", [member.account.id])
    assert Decimal(str(row["principal_balance"])) == principal
    assert Decimal(str(row["bonus_balance"])) == bonus
    with pytest.raises(ValidationError):
        run_tool("member_balance", {"member": "13000000000"}, user=None)


def test_unknown_tool_and_unknown_params_are_rejected():
    with pytest.raises(ValidationError):
        run_tool("drop_table", {}, user=None)
    with pytest.raises(ValidationError) as exc:
        run_tool("store_sales", {"period": "上周", "sql": "select 1"}, user=None)
    assert "sql" in exc.value.message_dict
    with pytest.raises(ValidationError) as exc:
        run_tool("store_sales", {"store": "天河店"}, user=None)
    assert "period" in exc.value.message_dict
    assert set(TOOLS) == {"store_sales", "top_products", "product_sales", "compare_stores", "hourly_peak", "daily_trend", "low_stock",
                          "product_stock", "channel_sales", "period_compare", "member_balance", "product_daily"}


@pytest.mark.parametrize("text,store", [
    ("天河那边昨天卖了多少", "广州天河店"),
    ("天河那家店昨天卖了多少", "广州天河店"),
    ("珠城这个月流水", "广州珠江新城店"),  # the alias 珠城店 without its 店
    ("gz-th上周营业额", "广州天河店"),
    ("广州天河店上周", "广州天河店"),  # longest match: not just 天河
    ("这个月到目前为止四家店哪家卖得最好", None),
    ("各店昨天", None),
    ("所有门店上周", None),
    ("四家门店本月", None),
])
def test_stores_come_only_from_the_list_and_aliases(text, store):
    match = find_store_in_text(text)
    assert match is not None and (match.store.name if match.store else None) == store


@pytest.mark.parametrize("text", ["库存低到多少要报给店长", "国庆期间哪家店卖得最好", "上周哪间店卖得最好", "团购券的销量算哪家店",
                                  "我们店昨天", "上周几家店的营业额排个名", "高峰期店长能在办公室做报表吗", "晚班店员能提前走吗", "隔壁网红店主想来拍视频"])
def test_phrases_before_store_words_are_not_taken_for_store_names(text):
    match = find_store_in_text(text)
    assert match is None or match.store is None


def test_an_unknown_store_name_is_questioned_not_read_as_zero():
    with pytest.raises(UnknownStore, match="北京三里屯店"):
        find_store_in_text("上周北京三里屯店卖了多少")
    with pytest.raises(UnknownStore, match="天和店"):  # a typo for 天河店 is asked about, never read as all stores
        find_store_in_text("天和店上周卖了多少")


def test_daily_trend_has_a_row_per_day_matching_sql_zeros_included():
    today = local_today()
    result = run_tool("daily_trend", {"store": "天河店", "period": "最近7天"}, today=today, user=None)
    start = today - timedelta(days=7)
    assert [r["date"] for r in result.rows] == [(start + timedelta(days=i)).isoformat() for i in range(7)]
    lo, hi = day_bounds(start, today - timedelta(days=1))
    expected = {
        str(day): (float(rev), n)
        for day, rev, n in sql_one(
            "SELECT ((o.created_at AT TIME ZONE 'Asia/Shanghai') - interval '6 hours')::date, SUM(o.total), COUNT(*) FROM ops_order o "
            "JOIN ops_store s ON s.id=o.store_id WHERE s.code='GZ-TH' AND o.status='paid' AND o.created_at >= %s "
            "AND o.created_at < %s GROUP BY 1", [lo, hi])
    }
    assert expected, "the demo data has sales in the last 7 days"
    for row in result.rows:
        assert (row["revenue"], row["orders"]) == expected.get(row["date"], (0.0, 0))
    assert row["weekday"].startswith("周")
    assert result.params["store"] == "广州天河店" and result.params["period"]["start"] == start.isoformat()


def test_daily_trend_by_store_is_one_series_per_store_matching_sql():
    # 「11月各店每天营业额趋势」 from head office returned the chain's total, not a series per store.
    from ops.tests.factories import make_user

    today = local_today()
    result = run_tool("daily_trend", {"period": "最近7天", "by_store": True}, today=today, user=None)
    stores = list(Store.objects.order_by("code").values_list("name", flat=True))
    assert "store" in result.columns and len(result.rows) == 7 * len(stores)
    start = today - timedelta(days=7)
    lo, hi = day_bounds(start, today - timedelta(days=1))
    for name, revenue, orders in sql_one(
            "SELECT s.name, SUM(o.total), COUNT(*) FROM ops_order o JOIN ops_store s ON s.id=o.store_id "
            "WHERE o.status='paid' AND o.created_at >= %s AND o.created_at < %s GROUP BY 1", [lo, hi]):
        mine = [r for r in result.rows if r["store"] == name]
        assert round(sum(r["revenue"] for r in mine), 2) == float(revenue) and sum(r["orders"] for r in mine) == orders
    assert result.params["by_store"] is True and "合计" in result.summary
    # One store asked for, or a person with one store: that store's days, no store column.
    one = run_tool("daily_trend", {"store": "天河店", "period": "最近7天", "by_store": True}, today=today, user=None)
    assert "store" not in one.columns and len(one.rows) == 7
    staff = make_user("trend_by_store_staff", role="staff", stores=["GZ-TH"])
    own = run_tool("daily_trend", {"period": "最近7天", "by_store": True}, today=today, user=staff)
    assert "store" not in own.columns and len(own.rows) == 7
    with pytest.raises(ValidationError) as exc:
        run_tool("daily_trend", {"period": "上周", "by_store": "yes"}, user=None)
    assert "by_store" in exc.value.message_dict


def test_product_daily_has_a_row_per_day_matching_sql_zeros_included():
    # 「最近7天科罗娜每天卖几瓶」 was answered with the store's daily revenue: the product's bottles, day by day.
    today = local_today()
    result = run_tool("product_daily", {"product": "科罗娜", "store": "天河店", "period": "最近7天"}, today=today, user=None)
    start = today - timedelta(days=7)
    assert [r["date"] for r in result.rows] == [(start + timedelta(days=i)).isoformat() for i in range(7)]
    lo, hi = day_bounds(start, today - timedelta(days=1))
    expected = {
        str(day): (int(qty), float(amount), n)
        for day, qty, amount, n in sql_one(
            "SELECT ((o.created_at AT TIME ZONE 'Asia/Shanghai') - interval '6 hours')::date, SUM(l.qty), SUM(l.amount), "
            "COUNT(DISTINCT o.id) FROM ops_orderline l JOIN ops_order o ON o.id=l.order_id JOIN ops_store s ON s.id=o.store_id "
            "JOIN ops_product p ON p.id=l.product_id WHERE s.code='GZ-TH' AND p.name='科罗娜啤酒' AND o.status='paid' "
            "AND o.created_at >= %s AND o.created_at < %s GROUP BY 1", [lo, hi])
    }
    assert expected, "the demo data sells Corona in the last 7 days"
    for row in result.rows:
        assert (row["qty"], row["revenue"], row["orders"]) == expected.get(row["date"], (0, 0.0, 0))
        assert row["unit"] == "瓶"
    whole = run_tool("product_sales", {"product": "科罗娜", "store": "天河店", "period": "最近7天"}, today=today, user=None)
    assert sum(r["qty"] for r in result.rows) == whole.rows[0]["qty"]
    assert result.params["product"] == "科罗娜啤酒" and "每天的销量" in result.summary
    with pytest.raises(ValidationError) as exc:
        run_tool("product_daily", {"store": "天河店", "period": "最近7天"}, user=None)
    assert "product" in exc.value.message_dict
    with pytest.raises(ValidationError) as exc:
        run_tool("product_daily", {"product": "科罗娜", "period": {"start": "2026-01-01", "end": "2026-06-30"}}, user=None)
    assert "最多查 92 天" in exc.value.message_dict["period"][0]


def test_daily_trend_is_validated_like_the_others():
    with pytest.raises(ValidationError) as exc:
        run_tool("daily_trend", {"period": {"start": "2026-01-01", "end": "2026-06-30"}}, user=None)
    assert "最多查 92 天" in exc.value.message_dict["period"][0]
    with pytest.raises(ValidationError) as exc:
        run_tool("daily_trend", {"store": "三里屯店", "period": "上周", "metric": "x"}, user=None)
    assert set(exc.value.message_dict) == {"store", "metric"}


def test_every_tool_column_has_a_chinese_label():
    from ops.tools import COLUMNS, format_cell

    for spec in TOOLS.values():
        assert spec.columns, spec.name
        for key in spec.columns:
            assert key in COLUMNS and not COLUMNS[key].label.isascii(), (spec.name, key)
    assert format_cell("revenue", {"revenue": 33752.0}) == "¥33,752.00"
    assert format_cell("qty", {"qty": 12, "unit": "箱"}) == "12箱"
    assert format_cell("orders", {"orders": 1234}) == "1,234单"
    assert format_cell("days_of_cover", {"days_of_cover": None}) == "—"


def test_all_stores_for_one_stores_staff_is_labelled_with_their_store():
    # A 天河 staff member's 「热销商品」 said 「全部门店」 above figures that were only 天河's.
    from ops.tests.factories import make_user

    staff = make_user("label_staff", role="staff", stores=["GZ-TH"])
    result = run_tool("top_products", {"period": "上周"}, user=staff)
    assert result.params["store"] == "广州天河店"
    assert run_tool("top_products", {"period": "上周"}, user=None).params["store"] == "全部门店"


def test_product_sales_matches_independent_sql_per_store_zeros_included():
    # 「上周天河店科罗娜卖了几瓶」 was answered from the 沽清 rule, 「这个月青岛啤酒卖了多少」 with the
    # stores' whole revenue: there was no tool for one product's sales.
    result = run_tool("product_sales", {"product": "科罗娜", "period": "最近30天"}, user=None)
    p = result.params["period"]
    assert result.params["product"] == "科罗娜啤酒" and result.params["store"] == "全部门店"
    lo, hi = day_bounds(date.fromisoformat(p["start"]), date.fromisoformat(p["end"]))
    expected = dict(
        (name, (qty, amount, orders)) for name, qty, amount, orders in sql_one(
            "SELECT s.name, SUM(l.qty), SUM(l.amount), COUNT(DISTINCT o.id) FROM ops_orderline l "
            "JOIN ops_order o ON o.id=l.order_id JOIN ops_product p ON p.id=l.product_id JOIN ops_store s ON s.id=o.store_id "
            "WHERE p.sku='B003' AND o.status='paid' AND o.created_at >= %s AND o.created_at < %s GROUP BY s.name", [lo, hi]))
    assert [r["store"] for r in result.rows] == list(Store.objects.values_list("name", flat=True))
    for row in result.rows:
        qty, amount, orders = expected.get(row["store"], (0, Decimal("0"), 0))
        assert (row["qty"], Decimal(str(row["revenue"])), row["orders"]) == (qty, amount, orders), row["store"]
        assert row["unit"] == "瓶" and row["product"] == "科罗娜啤酒"
    total = sum(q for q, _, _ in expected.values())
    assert total > 0 and f"卖出 {total:,}瓶" in result.summary


def test_product_sales_for_one_store_by_sku_and_an_empty_period_says_none_sold():
    result = run_tool("product_sales", {"product": "b003", "store": "天河店", "period": "上周"}, user=None)
    assert [r["store"] for r in result.rows] == ["广州天河店"]
    from ops.models import Product

    Product.objects.create(sku="C099", name="新品特调", category="鸡尾酒", unit="杯", price=Decimal("68"))
    empty = run_tool("product_sales", {"product": "新品特调", "period": "上周"}, user=None)
    assert empty.rows and all(r["qty"] == 0 and r["orders"] == 0 for r in empty.rows)
    assert "没有卖出新品特调" in empty.summary
    with pytest.raises(ValidationError) as exc:  # before the first order: no data, not zero
        run_tool("product_sales", {"product": "莫吉托", "period": {"start": "2001-01-01", "end": "2001-01-07"}}, user=None)
    assert "没有数据" in exc.value.message_dict["period"][0]


@pytest.mark.parametrize("bad", ["嗨棒", "", None, 42, "x" * 65, {"name": "科罗娜"}])
def test_product_sales_rejects_what_is_not_a_product_by_name(bad):
    params = {"period": "上周"} | ({} if bad is None else {"product": bad})
    with pytest.raises(ValidationError) as exc:
        run_tool("product_sales", params, user=None)
    assert "product" in exc.value.message_dict
    if bad == "嗨棒":
        message = exc.value.message_dict["product"][0]
        assert "嗨棒" in message and "科罗娜啤酒" in message  # says what can be asked for


def test_product_sales_for_a_stores_staff_counts_only_their_store():
    from ops.tests.factories import make_user

    staff = make_user("product_staff", role="staff", stores=["GZ-TH"])
    mine = run_tool("product_sales", {"product": "青岛啤酒", "period": "最近30天"}, user=staff)
    assert [r["store"] for r in mine.rows] == ["广州天河店"] and mine.params["store"] == "广州天河店"
    every = run_tool("product_sales", {"product": "青岛啤酒", "store": "天河店", "period": "最近30天"}, user=None)
    assert mine.rows == every.rows
    with pytest.raises(ValidationError) as exc:
        run_tool("product_sales", {"product": "青岛啤酒", "store": "福田店", "period": "最近30天"}, user=staff)
    assert "福田" in exc.value.message_dict["store"][0] and "广州天河店" in exc.value.message_dict["store"][0]


@pytest.mark.parametrize("text,name", [("上周科罗娜卖了几瓶", "科罗娜啤酒"), ("MOJITO卖了多少杯", "莫吉托"), ("黑牌单杯卖了多少", "黑牌单杯"),
                                       ("黑牌卖了几瓶", "尊尼获加黑牌"), ("天河店上周卖了多少", None)])
def test_products_are_found_by_name_alias_and_sku_longest_first(text, name):
    from ops.selectors import find_product_in_text

    found = find_product_in_text(text)
    assert (found[1] if found else None) == name


def test_a_city_names_the_callers_stores_in_it():
    # 「深圳上周卖了多少」 answered with the asker's own store (广州天河店), and for HQ with all four.
    from ops.selectors import UnknownStore, find_store_in_text, resolve_store_for
    from ops.tests.factories import make_user

    staff = make_user("city_staff", role="staff", stores=["GZ-TH"])
    hq = make_user("city_hq", role="hq", stores=[])
    assert find_store_in_text("深圳上周卖了多少").store.name == "深圳福田店"  # one store in 深圳
    assert resolve_store_for(staff, "广州", "ops.view_sales", attempt="t").name == "广州天河店"  # their one store there
    with pytest.raises(UnknownStore) as exc:
        resolve_store_for(hq, "广州", "ops.view_sales", attempt="t")
    assert "广州天河店、广州珠江新城店" in exc.value.messages[0] and "请说是哪一家门店" in exc.value.messages[0]
    with pytest.raises(ValidationError) as exc:
        run_tool("store_sales", {"store": "深圳", "period": "上周"}, user=staff)
    message = exc.value.message_dict["store"][0]
    assert message.startswith("深圳") and "没有权限查看；你可以查看：广州天河店" in message  # the chain's, not theirs
    guangzhou = run_tool("store_sales", {"store": "广州", "period": "上周"}, user=hq)  # HQ: both stores there
    assert [r["store"] for r in guangzhou.rows] == ["广州天河店", "广州珠江新城店"]
    assert guangzhou.params["store"] == "广州天河店、广州珠江新城店"
    mine = run_tool("store_sales", {"store": "广州", "period": "上周"}, user=staff)  # staff: their one store there
    assert [r["store"] for r in mine.rows] == ["广州天河店"]
    both = run_tool("compare_stores", {"period": "上周", "stores": ["广州"]}, user=hq)
    assert sorted(r["store"] for r in both.rows) == ["广州天河店", "广州珠江新城店"]
    with pytest.raises(ValidationError) as exc:
        run_tool("compare_stores", {"period": "上周", "stores": ["广州"]}, user=staff)
    assert "只有广州天河店一家" in exc.value.message_dict["stores"][0]


def test_stock_below_zero_on_the_books_lasts_no_days_and_the_answer_says_to_count():
    # 「青岛啤酒还剩多少」 answered 「在库 -436瓶 … 约够卖 -16.6 天」 as a plain fact.
    from ops.models import Inventory

    Inventory.objects.filter(store__code="GZ-TH", product__sku="W001").update(on_hand=-436)
    rows = [r for r in run_tool("product_stock", {"product": "黑牌"}, user=None).rows if r["store"] == "广州天河店"]
    assert rows and rows[0]["on_hand"] == -436
    assert rows[0]["velocity_per_day"] > 0 and rows[0]["days_of_cover"] == 0.0
    text = TOOLS["product_stock"].row_sentence(rows[0])
    assert "账面库存为负" in text and "-16" not in text and "约够卖 -" not in text


def test_two_periods_of_different_lengths_say_how_the_daily_figure_moved():
    # 「营业额增加 ¥25,537.00（+19.7%）」 over 30 days against 24 read as growth while each day sold less.
    from ops.selectors import first_sale_date

    first = first_sale_date()
    short = {"label": "短", "start": first.isoformat(), "end": (first + timedelta(days=9)).isoformat()}
    long = {"label": "长", "start": (first + timedelta(days=10)).isoformat(), "end": (first + timedelta(days=39)).isoformat()}
    result = run_tool("period_compare", {"store": "天河", "period": long, "baseline": short}, user=None)
    now, before = result.rows
    per_day = now["revenue"] / now["days"], before["revenue"] / before["days"]
    word = "增加" if round(per_day[0], 2) > round(per_day[1], 2) else "减少"
    assert f"按日均算{word} {abs(round(per_day[0], 2) / round(per_day[1], 2) - 1) * 100:.1f}%" in result.summary, result.summary


def test_top_products_takes_one_store_or_several_not_both():
    with pytest.raises(ValidationError) as exc:
        run_tool("top_products", {"period": "上周", "store": "天河", "stores": ["福田", "天河"]}, user=None)
    assert exc.value.message_dict["stores"] == ["store 和 stores 只能给一个：一家店用 store，几家店用 stores。"]
