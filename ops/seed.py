"""Deterministic demo data for the ops domain: stores, products, members, orders, inventory.

Same seed, same rows. Orders follow a bar's week (busy Friday/Saturday) and evening
hours, stores differ in traffic, a few SKUs per store sit below safety stock, and some
members hold stored value following the corpus's top-up rules (充 2000 送 300 …).
Bulk rows go in with COPY so a million orders load in about a minute.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.db import connection, transaction
from django.utils import timezone

from .models import Inventory, Member, Order, Product, Store, StoredValueAccount, StoredValueTxn
from .services.orders import order_fingerprint
from .trading_day import TZ  # the stores' time zone: one home

UTC = ZoneInfo("UTC")

# code, name, city, aliases, base orders per day
STORES = [
    ("GZ-TH", "广州天河店", "广州", ["天河店", "天河", "天河门店"], 30),
    ("SZ-FT", "深圳福田店", "深圳", ["福田店", "福田"], 28),
    ("GZ-ZJ", "广州珠江新城店", "广州", ["珠江新城店", "珠江新城", "珠城店"], 26),
    ("FS-ZM", "佛山祖庙店", "佛山", ["祖庙店", "祖庙"], 16),
    ("GZ-BJ", "广州北京路店", "广州", ["北京路店", "北京路"], 22),
    ("SZ-NS", "深圳南山店", "深圳", ["南山店", "南山"], 24),
    ("DG-NC", "东莞南城店", "东莞", ["南城店", "南城"], 14),
    ("ZH-XZ", "珠海香洲店", "珠海", ["香洲店", "香洲"], 12),
]

# sku, name, category, unit, price, safety stock, popularity, max qty, aliases, case size
PRODUCTS = [
    ("B001", "青岛啤酒", "啤酒", "瓶", "15.00", 48, 30, 6, ["青岛", "青啤"], 24),
    ("B002", "百威啤酒", "啤酒", "瓶", "18.00", 48, 22, 6, ["百威"], 24),
    ("B003", "科罗娜啤酒", "啤酒", "瓶", "22.00", 36, 14, 6, ["科罗娜"], 24),
    ("B004", "福佳白啤酒", "啤酒", "瓶", "28.00", 24, 10, 4, ["福佳白", "福佳"], 24),
    ("B005", "精酿IPA", "啤酒", "杯", "38.00", 20, 12, 3, ["IPA", "精酿"], 1),
    ("B006", "鲜扎生啤", "啤酒", "杯", "25.00", 30, 18, 4, ["扎啤", "生啤"], 1),
    ("W001", "尊尼获加黑牌", "威士忌", "瓶", "498.00", 6, 3, 1, ["黑牌", "黑方"], 12),
    ("W002", "尊尼获加红牌", "威士忌", "瓶", "268.00", 6, 3, 1, ["红牌", "红方"], 12),
    ("W003", "格兰菲迪12年", "威士忌", "瓶", "598.00", 4, 2, 1, ["格兰菲迪"], 6),
    ("W004", "芝华士12年", "威士忌", "瓶", "458.00", 4, 2, 1, ["芝华士"], 12),
    ("W005", "黑牌单杯", "威士忌", "杯", "58.00", 10, 6, 2, ["单杯黑牌"], 1),
    ("C001", "莫吉托", "鸡尾酒", "杯", "58.00", 15, 10, 2, ["Mojito"], 1),
    ("C002", "长岛冰茶", "鸡尾酒", "杯", "68.00", 15, 8, 2, ["长岛"], 1),
    ("C003", "玛格丽特", "鸡尾酒", "杯", "62.00", 12, 6, 2, [], 1),
    ("C004", "金汤力", "鸡尾酒", "杯", "52.00", 12, 7, 2, ["金汤尼"], 1),
    ("S001", "可口可乐", "软饮", "瓶", "8.00", 48, 12, 3, ["可乐"], 24),
    ("S002", "苏打水", "软饮", "瓶", "10.00", 36, 8, 3, [], 24),
    ("S003", "柠檬茶", "软饮", "杯", "18.00", 20, 7, 2, [], 1),
    ("F001", "薯条", "小吃", "份", "28.00", 30, 16, 2, [], 1),
    ("F002", "炸鸡翅", "小吃", "份", "38.00", 25, 12, 2, ["鸡翅"], 1),
    ("F003", "炸鱿鱼圈", "小吃", "份", "42.00", 20, 8, 2, ["鱿鱼圈"], 1),
    ("F004", "水果拼盘", "小吃", "份", "68.00", 12, 6, 1, ["果盘"], 1),
    ("N001", "干红葡萄酒", "葡萄酒", "瓶", "288.00", 6, 2, 1, ["红酒"], 6),
]

# Orders fall in opening hours: 17:00 to 02:30, last orders 30 minutes before closing (corpus:
# 开店与闭店流程 > 营业时间). The demo used to sell at 11:00–16:00, when every store is closed.
HOUR_WEIGHTS = {17: 2, 18: 4, 19: 6, 20: 8, 21: 10, 22: 9, 23: 6, 0: 3, 1: 1}
WEEKDAY_FACTOR = [0.8, 0.8, 0.9, 1.0, 1.35, 1.5, 1.1]
CHANNELS = [("堂食", 78), ("外卖", 12), ("团购", 10)]
TOPUP_TIERS = [(Decimal("500"), Decimal("30")), (Decimal("1000"), Decimal("100")), (Decimal("2000"), Decimal("300"))]
SURNAMES = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何林罗梁"
GIVEN = ["伟", "芳", "娜", "敏", "静", "丽", "强", "磊", "洋", "艳", "勇", "军", "杰", "娟", "涛", "明", "超", "秀英", "志强", "嘉怡"]


@dataclass
class SeedReport:
    stores: int
    products: int
    members: int
    orders: int
    lines: int
    low_stock: int
    start: date
    end: date


def has_ops_data() -> bool:
    return Order.objects.exists() or Store.objects.exists()


def expected_daily_orders(n_stores: int) -> float:
    avg_factor = sum(WEEKDAY_FACTOR) / 7
    return sum(s[4] for s in STORES[:n_stores]) * avg_factor


@transaction.atomic
def ops_seed(
    *,
    stores: int = 4,
    days: int = 60,
    seed: int = 42,
    end_date: date | None = None,
    orders: int | None = None,
    progress: Callable[[int], None] | None = None,
    until: datetime | None = None,
) -> SeedReport:
    """Create the demo ops data. The database must have no ops data yet.

    Without `end_date` the demo runs up to this moment: today's trading day holds the orders
    placed so far (「今天到现在卖了多少」 showed ¥0.00 on every demo day when it ended yesterday)."""
    if not 1 <= stores <= len(STORES):
        raise ValueError(f"--stores must be between 1 and {len(STORES)}")
    if days < 1:
        raise ValueError("--days must be at least 1")
    if has_ops_data():
        raise ValueError("ops data already exists; seed_ops only fills an empty database (use --reset to start over)")
    rng = random.Random(seed)
    from .tools import local_today

    if end_date is None:
        end_date, until = local_today(), until or timezone.now()
    start_date = end_date - timedelta(days=days - 1)

    store_objs = Store.objects.bulk_create(
        [Store(code=c, name=n, city=city, aliases=al) for c, n, city, al, _ in STORES[:stores]]
    )
    products = Product.objects.bulk_create(
        [
            Product(sku=sku, name=name, category=cat, unit=unit, price=Decimal(price), aliases=al, case_size=case)
            for sku, name, cat, unit, price, _s, _p, _q, al, case in PRODUCTS
        ]
    )
    meta = {p.sku: row for p, row in zip(products, PRODUCTS)}
    members = _seed_members(rng, store_objs, start_date)

    scale = (orders / (expected_daily_orders(stores) * days)) if orders else 1.0
    order_count, line_count = _seed_orders(rng, store_objs, products, meta, members, start_date, end_date, scale, progress,
                                           until=until)
    low = _seed_inventory(rng, store_objs, products, meta)
    # The ledger's visits happen at 21:00: up to the last whole trading day, never in the future.
    _seed_ledger(rng, members, store_objs, start_date, end_date if until is None else max(start_date, end_date - timedelta(days=1)))
    return SeedReport(len(store_objs), len(products), len(members), order_count, line_count, low, start_date, end_date)


@dataclass
class TopUpReport:
    orders: int
    lines: int
    since: datetime | None


@transaction.atomic
def ops_top_up(*, seed: int = 42, now: datetime | None = None) -> TopUpReport:
    """Bring the demo orders up to `now` (a later `make run` on a database seeded days ago):
    the demo stores' orders from just after the last one recorded, drawn as ops_seed draws
    them. Touches nothing but the demo stores' orders; real stores and POS orders are left alone."""
    from .tools import local_today

    now = now or timezone.now()
    codes = [row[0] for row in STORES]
    stores = list(Store.objects.filter(code__in=codes).order_by("code"))
    last = Order.objects.filter(store__in=stores).order_by("-created_at").values_list("created_at", flat=True).first()
    if not stores or last is None or last >= now:
        return TopUpReport(0, 0, last)
    meta = {row[0]: row for row in PRODUCTS}
    products = list(Product.objects.filter(sku__in=meta, active=True).order_by("sku"))
    if not products:
        return TopUpReport(0, 0, last)
    members = list(Member.objects.order_by("pk"))
    first_day = (timezone.localtime(last, TZ) - timedelta(hours=6)).date()
    rng = random.Random(f"{seed}-{first_day.isoformat()}-{now.timestamp():.0f}")
    # "T": the first day's order numbers already given out are never reused.
    orders, lines = _seed_orders(rng, stores, products, meta, members, first_day, local_today(), 1.0, None,
                                 after=last, until=now, id_prefix="T")
    return TopUpReport(orders, lines, last)


def _seed_members(rng: random.Random, stores: list[Store], start: date) -> list[Member]:
    members = []
    phones = rng.sample(range(10_000_000, 99_999_999), 240)
    for i in range(240):
        joined = datetime.combine(start - timedelta(days=rng.randint(0, 400)), time(20, 0), tzinfo=TZ)
        members.append(
            Member(
                number=f"M{i + 1:05d}",
                phone=f"13{rng.randint(5, 9)}{phones[i]}",
                name=rng.choice(SURNAMES) + rng.choice(GIVEN),
                home_store=rng.choice(stores),
                created_at=joined,
            )
        )
    return Member.objects.bulk_create(members)


def _seed_orders(rng, stores, products, meta, members, start, end, scale, progress, *, after: datetime | None = None,
                 until: datetime | None = None, id_prefix: str = "") -> tuple[int, int]:
    """Orders for the trading days start..end; with `after` / `until`, only those placed in
    between (every draw is made all the same, so a day's orders do not depend on the cut)."""
    hours, hour_w = zip(*HOUR_WEIGHTS.items())
    channels, channel_w = zip(*CHANNELS)
    popularity = [meta[p.sku][6] for p in products]
    now_utc = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute("SELECT COALESCE(MAX(id), 0) FROM ops_order")
        next_order_id = cursor.fetchone()[0] + 1
        cursor.execute("SELECT COALESCE(MAX(id), 0) FROM ops_orderline")
        next_line_id = cursor.fetchone()[0] + 1
        first_order_id, first_line_id = next_order_id, next_line_id
        raw = cursor.cursor  # psycopg cursor: COPY is the fast path for bulk rows
        order_rows, line_rows = [], []
        n_days = (end - start).days + 1
        for day_index in range(n_days):
            day = start + timedelta(days=day_index)
            factor = WEEKDAY_FACTOR[day.weekday()]
            for store in stores:
                base = next(s[4] for s in STORES if s[0] == store.code)
                zone = ZoneInfo(store.timezone)  # each store's orders on its own clock
                mean = base * factor * scale
                count = max(0, int(rng.gauss(mean, max(1.0, mean ** 0.5)) + 0.5))
                stamps = sorted(
                    datetime.combine(day, time(h, rng.randrange(60), rng.randrange(60)), tzinfo=zone)
                    for h in rng.choices(hours, weights=hour_w, k=count)
                )
                for seq, created in enumerate(stamps, start=1):
                    chosen = set(rng.choices(range(len(products)), weights=popularity, k=rng.choice((1, 1, 2, 2, 3, 4))))
                    qtys = {idx: rng.randint(1, meta[products[idx].sku][7]) for idx in sorted(chosen)}
                    channel = rng.choices(channels, weights=channel_w)[0]
                    status = "refunded" if rng.random() < 0.02 else "paid"
                    member = rng.choice(members) if rng.random() < 0.25 else None
                    if (until is not None and created > until) or (after is not None and created <= after):
                        continue
                    order_id = next_order_id
                    next_order_id += 1
                    lines, total = [], Decimal("0")
                    for idx, qty in qtys.items():
                        product = products[idx]
                        amount = product.price * qty
                        total += amount
                        lines.append((product, qty, product.price, amount))
                        line_rows.append((next_line_id, order_id, product.id, qty, product.price, amount))
                        next_line_id += 1
                    external_id = f"{store.code}-{day:%Y%m%d}-{id_prefix}{seq:05d}"
                    fingerprint = order_fingerprint(
                        {
                            "store": store.code, "external_id": external_id,
                            "created_at": created.astimezone(UTC).isoformat(), "channel": channel, "status": status,
                            "total": str(total), "member": member.number if member else "",
                            "lines": [[p.sku, q, str(u), str(a)] for p, q, u, a in lines],
                        }
                    )
                    order_rows.append(
                        (order_id, store.id, external_id, created, channel, status, total, member.id if member else None, fingerprint, now_utc)
                    )
            if len(line_rows) > 50_000 or day_index == n_days - 1:
                _copy(raw, "ops_order", ("id", "store_id", "external_id", "created_at", "channel", "status", "total", "member_id", "payload_hash", "received_at"), order_rows)
                _copy(raw, "ops_orderline", ("id", "order_id", "product_id", "qty", "unit_price", "amount"), line_rows)
                order_rows, line_rows = [], []
            if progress:
                progress(1)
        for table in ("ops_order", "ops_orderline"):
            # Sequences are not transactional: never move one backwards (a rolled-back
            # seed must not make later inserts collide).
            cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
            seq = cursor.fetchone()[0]
            cursor.execute(
                f"SELECT setval(%s, GREATEST((SELECT COALESCE(MAX(id), 1) FROM {table}), (SELECT last_value FROM {seq})))", [seq]
            )
    return next_order_id - first_order_id, next_line_id - first_line_id


def _copy(raw_cursor, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
    if not rows:
        return
    with raw_cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def _seed_inventory(rng, stores, products, meta) -> int:
    rows, low = [], 0
    for store in stores:
        below = set(rng.sample(range(len(products)), 3))
        for idx, product in enumerate(products):
            safety = meta[product.sku][5]
            if idx in below:
                on_hand = int(safety * rng.uniform(0.2, 0.8))
                low += 1
            else:
                on_hand = int(safety * rng.uniform(1.2, 3.0)) + 1
            rows.append(Inventory(store=store, product=product, on_hand=on_hand, safety_stock=safety))
    Inventory.objects.bulk_create(rows)
    return low


def _seed_ledger(rng, members, stores, start, end) -> None:
    accounts, txns = [], []
    for member in members:
        if rng.random() > 0.6:
            continue
        principal = bonus = Decimal("0")
        account = StoredValueAccount(member=member)
        history = []
        for _ in range(rng.choice((1, 1, 2))):
            amount, gift = rng.choice(TOPUP_TIERS)
            when = datetime.combine(start - timedelta(days=rng.randint(1, 200)), time(20, 30), tzinfo=TZ)
            principal += amount
            bonus += gift
            history.append((member.home_store, "topup", amount, gift, when, f"充值 {amount} 送 {gift}"))
        for _ in range(rng.randint(0, 4)):
            spend = Decimal(rng.randrange(50, 600))
            if spend > principal + bonus:
                break
            # As the membership rules say: at the home store principal and bonus are spent in
            # proportion; at any other store only principal can be used.
            store = member.home_store if rng.random() < 0.7 else rng.choice(stores)
            if store == member.home_store:
                from_bonus = min(bonus, (spend * bonus / (principal + bonus)).quantize(Decimal("0.01")))
            else:
                if spend > principal:
                    break
                from_bonus = Decimal("0")
            from_principal = spend - from_bonus
            principal -= from_principal
            bonus -= from_bonus
            when = datetime.combine(start + timedelta(days=rng.randint(0, (end - start).days)), time(21, 0), tzinfo=TZ)
            history.append((store, "spend", -from_principal, -from_bonus, when, f"消费 {spend}"))
        account.principal_balance, account.bonus_balance = principal, bonus
        accounts.append(account)
        txns.append(history)
    StoredValueAccount.objects.bulk_create(accounts)
    StoredValueTxn.objects.bulk_create(
        [
            StoredValueTxn(account=acc, store=s, kind=k, principal_delta=p, bonus_delta=b, created_at=w, note=n)
            for acc, history in zip(accounts, txns)
            for s, k, p, b, w, n in history
        ]
    )
