"""Read-side helpers for the ops domain: store whitelist resolution, in the caller's scope.

Store names come from user text; they are only ever matched against the whitelist of
stores and their aliases, never interpolated into SQL. A store outside the caller's scope
gets exactly the answer an unknown store gets, listing the stores the caller may use.
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from django.core.exceptions import ValidationError
from django.db.models import Min

from core.audit import audit_scope_refusal
from core.memo import remembered

from .models import Order, Product, Store
from .trading_day import trading_day_of

ALL_STORES_WORDS = (
    "全部门店", "所有门店", "各门店", "各家门店", "各店", "各家店", "每家店", "每个店", "每家门店", "全部店", "所有店", "全店",
    "几家店", "几家门店", "四家店", "四家门店", "4家店", "全国", "整体", "总共", "一共",
)
# 「两个店」 are stores; 「两个店长」「每个店员」 are people.
_ALL_STORES = re.compile(r"(全部|所有|各|每|几|[2-9两三四五六七八九十])\s*(家|个|间)?\s*(门店|分店|店)(?![长员主])|(?:" + "|".join(ALL_STORES_WORDS) + r")(?![长员主])")
# A run of Chinese characters right before 店 that might be a store nobody has heard of.
# 「高峰期店长…」 names a person, not a store called 高峰期: as in _ALL_STORES, 店长/店员/店主 are people.
_STORE_MENTION = re.compile(r"([\u4e00-\u9fff]{2,8})(?:门店|分店|店)(?![长员主])")
# Words that end in 店 or precede 店 in questions but are not store names.
_NOT_A_STORE = ("门店", "本店", "我店", "我们店", "这家店", "那家店", "每家店", "各店", "全店", "另一家店", "别的店", "其他店", "隔壁店", "分店",
                "开店", "闭店", "进店", "到店", "在店", "离店", "跨店", "店长", "店员", "旗舰店", "新店", "老店", "酒店", "饭店", "商店")
# A store name never contains these: quantifiers, pronouns, particles, verbs of a question.
_NOT_IN_A_NAME = set("家个间哪这那每各本我你他她们的了在到去从跟与及几多少些啥么要给报进开闭离跨全总有是把被让向对为于用所发")
_LEADING_WORDS = re.compile(
    r"^(上上周|上周|本周|这周|上个?月|本月|这个?月|今天|今儿个?|昨天|昨儿个?|前天|前儿个?|最近\d*天?|近\d+天|今年|去年|国庆|周末|"
    r"查一?下|看看|看一?下|帮我查?|请问|问下)+"
)


class UnknownStore(ValidationError):
    pass


class StoreNotYours(UnknownStore):
    """A store of the chain outside the person's scope: said as such (staff know the chain's
    stores; 「没有叫…的门店」 was false), never with its figures."""


@dataclass(frozen=True)
class StoreMatch:
    store: Store | None  # None: all stores
    matched: str


# One question reads the store list once: the router, the data planner and the slot filler
# each look for store names in it (four queries per data chat, before).
_STORE_MEMO: ContextVar[dict | None] = ContextVar("store_memo", default=None)


@contextmanager
def store_list_read_once():
    """Within this block (one question, its guard threads included when they run in a copy
    of this context), the store list is read from the database once. Inside another such block
    (a tool run within a question) it is that block's."""
    if _STORE_MEMO.get() is not None:
        yield
        return
    token = _STORE_MEMO.set({})
    try:
        yield
    finally:
        _STORE_MEMO.reset(token)


def _read_once(key: str, read):
    """`read()`, once per question inside `store_list_read_once()`; afresh outside it."""
    return remembered(_STORE_MEMO, key, read)


def store_candidates() -> list[tuple[str, Store]]:
    """Every way to name a store: name, code, aliases, and each of them without its 店
    (「珠城店」 → 「珠城」, so 「珠城那边」 and 「珠城这个月」 resolve too). Longest first."""
    return _read_once("candidates", _store_candidates)


def _store_candidates() -> list[tuple[str, Store]]:
    pairs: dict[str, Store] = {}
    stores = _all_stores()
    for store in stores:
        for name in [store.name, store.code, *store.aliases]:
            if not name:
                continue
            pairs.setdefault(name, store)
            stem = re.sub(r"(门店|分店|店)$", "", name)
            if len(stem) >= 2:
                pairs.setdefault(stem, store)
    # A city with one store names that store (「深圳上周卖了多少」); a city with several names
    # none of them (find_store_in_text asks which).
    for city, members in _stores_by_city(stores).items():
        if len(members) == 1:
            pairs.setdefault(city, members[0])
    # Longest first, so 「广州天河店」 wins over 「天河」.
    return sorted(pairs.items(), key=lambda p: len(p[0]), reverse=True)


def _stores_by_city(stores) -> dict[str, list[Store]]:
    out: dict[str, list[Store]] = {}
    for store in stores:
        if store.city and len(store.city) >= 2:
            out.setdefault(store.city, []).append(store)
    return out


def first_sale_date():
    """The first trading day with a recorded order, each store's on its own clock (None: no orders yet); read
    once per question. A period that starts before it is bounded to it and says so
    (periods.bound_to_data), in chat and API alike: no period before the records is ever reported
    as zero sales."""

    def read():
        # Per zone: with stores on different clocks the first instant is not always the first day.
        zones, days = store_zones(), []
        for zone, ids in zones.items():
            orders = Order.objects.all() if len(zones) == 1 else Order.objects.filter(store_id__in=ids)
            if (first := orders.aggregate(first=Min("created_at"))["first"]) is not None:
                days.append(trading_day_of(first, ZoneInfo(zone)))
        return min(days, default=None)

    return _read_once("first_sale", read)


def _all_stores() -> list[Store]:
    return _read_once("stores", lambda: list(Store.objects.all()))


def store_zones() -> dict[str, list[int]]:
    """Each time zone the stores keep, with the ids of the stores on its clock (read once per question)."""
    zones: dict[str, list[int]] = {}
    for store in _all_stores():
        zones.setdefault(store.timezone, []).append(store.pk)
    return zones


def known_stores_text() -> str:
    return "、".join(Store.objects.values_list("name", flat=True))


def store_by_exact_name(value: str) -> Store | None:
    """The store a write names exactly by its code, name or one of its aliases: never a stem or
    a city (「佛山」 names 祖庙店 today and nothing once a second store opens there)."""
    value = (value or "").strip().upper()
    if not value:
        return None
    return next((s for s in _all_stores() if value in {n.upper() for n in (s.code, s.name, *s.aliases) if n}), None)


def resolve_store(value: str) -> Store:
    """Resolve a store given as a parameter (code, name or alias). Raises UnknownStore."""
    value = (value or "").strip()
    for name, store in store_candidates():
        if value == name or value.upper() == name.upper():
            return store
    if len(find_stores_in_text(value)) > 1:  # 「天河店,福田店」 was read as 天河店 alone
        raise UnknownStore(f"「{value}」里有不止一家门店：这个参数一次只能是一家门店（比较几家门店请用门店对比）。")
    match = find_store_in_text(value)
    if match and match.store:
        return match.store
    raise UnknownStore(f"没有叫「{value}」的门店。已知门店：{known_stores_text()}。")


def longest_first_matches(text: str, candidates) -> list[tuple[int, str, object]]:
    """Every occurrence of the candidates' names in `text`, case-insensitive, none overlapping:
    the candidates come longest name first, so a longer name keeps the characters it covers
    (「黑牌单杯」 is not also 黑牌, 「深圳福田店」 not also 福田). (start, name, value), in the order taken.
    The one scanner for stores, products and the slots' products."""
    upper, taken, found = (text or "").upper(), [], []
    for name, value in candidates:
        needle = name.upper()
        if not needle:
            continue
        start = upper.find(needle)
        while start >= 0:
            end = start + len(needle)
            if not any(s < end and start < e for s, e in taken):
                taken.append((start, end))
                found.append((start, name, value))
            start = upper.find(needle, end)
    return found


def find_stores_in_text(text: str) -> list[tuple[str, Store]]:
    """Every known store a text names, in order of appearance (longest name wins at a spot)."""
    found: list[tuple[int, str, Store]] = []
    for start, name, store in longest_first_matches(text, store_candidates()):
        if all(store != other for _, _, other in found):
            found.append((start, name, store))
    return [(name, store) for _, name, store in sorted(found, key=lambda f: f[0])]


def find_store_in_text(text: str) -> StoreMatch | None:
    """Find the store a question talks about; None when it names none.

    Stores are resolved only from the store list and their aliases (longest match; 「天河那边」
    「天河那家店」 are 天河). 「四家店」「各店」「所有门店」 mean all stores. Raises UnknownStore when
    the question names something shaped like a store that is not in the list, so a typo never
    reads as zero sales — but a phrase is only taken for a name when it could be one.
    """
    text = text or ""
    known = find_stores_in_text(text)
    if known:
        name, store = known[0]
        return StoreMatch(store=store, matched=name)
    if city := city_in_text(text):
        # A city with several stores (「广州各店」 too): which of them depends on who asks — the
        # tool reads the city as the asker's stores in it, an action asks which one.
        error = UnknownStore(f"「{city}」有不止一家门店，请说是哪一家门店。")
        error.mention = city
        raise error
    if _ALL_STORES.search(text):
        return StoreMatch(store=None, matched="全部门店")
    for m in _STORE_MENTION.finditer(text):
        whole = m.group(0)
        if any(word in whole for word in _NOT_A_STORE if word.endswith("店") and whole.endswith(word)):
            continue
        mention = _name_before_store_word(m.group(1))
        if mention:
            error = UnknownStore(f"没有找到「{mention}店」这家门店。已知门店：{known_stores_text()}。")
            error.mention = f"{mention}店"  # for a caller that knows the asker and can name only their stores
            raise error
    return None


def _name_before_store_word(raw: str) -> str:
    """The part of 「…店」 that could be a name: after the last character no name contains
    (「目前为止四家店」 → nothing), without leading time words and verbs."""
    cut = max((i for i, ch in enumerate(raw) if ch in _NOT_IN_A_NAME), default=-1)
    name = _LEADING_WORDS.sub("", raw[cut + 1:])
    return name if len(name) >= 2 else ""


def stores_in_city_for(user, city: str, perm: str) -> list[Store]:
    """The stores in `city` the user may exercise `perm` on (「广州」 → 天河 and 珠江新城 for HQ,
    天河 alone for 天河's staff); empty when `city` is not a city of any store."""
    if not city or not Store.objects.filter(city=city).exists():
        return []
    return list(Store.objects.for_user(user, perm).filter(city=city))


def city_in_text(text: str) -> str | None:
    """A city with more than one store that the text names (「广州各店」), if any."""
    stores = list(dict.fromkeys(s for _, s in store_candidates()))
    for city, members in _stores_by_city(stores).items():
        if len(members) > 1 and city in (text or ""):
            return city
    return None


def scope_refusal_message(what: str, allowed, perm: str) -> str:
    names = "、".join(s.name for s in allowed)
    if perm.endswith("add_proposal"):
        return f"你不能为{what}提交提案；" + (f"你可以为这些门店提交：{names}。" if names else "你还没有被分配到任何门店，请联系管理员。")
    return f"{what}的数据你没有权限查看；" + (f"你可以查看：{names}。" if names else "你还没有被分配到任何门店，请联系管理员。")


def unknown_store_message(value: str, allowed) -> str:
    names = "、".join(s.name for s in allowed)
    return f"没有叫「{value}」的门店。" + (f"你可以查询的门店：{names}。" if names else "你没有可以查询或操作的门店。")


def resolve_store_for(user, value, perm: str, *, attempt: str) -> Store:
    """Resolve a store parameter (a Store, or code / name / alias) within the stores `user`
    may exercise `perm` on. An unknown store raises UnknownStore; a store of the chain outside
    the person's scope raises StoreNotYours (it exists, and is not theirs) and is audited as a
    scope refusal. POS devices never come here: orders_ingest answers another store like an
    unknown one."""
    allowed = list(Store.objects.for_user(user, perm))
    if isinstance(value, Store):
        store, text = value, value.name
    else:
        text = str(value or "").strip()
        try:
            store = resolve_store(text)
        except UnknownStore:
            # A city (「广州」): the caller's one store there, or a question naming only theirs.
            in_city = [s for s in allowed if s.city and text in (s.city, f"{s.city}的店", f"{s.city}店", f"{s.city}门店")]
            if len(in_city) == 1:
                return in_city[0]
            if in_city:
                raise UnknownStore(f"「{text}」有 {len(in_city)} 家你可以使用的门店：{'、'.join(s.name for s in in_city)}。"
                                   "请说是哪一家门店。") from None
            outside = Store.objects.filter(city=text).first() if text else None
            if outside is not None:
                _refuse_outside_scope(user, attempt, outside, perm)
                raise StoreNotYours(scope_refusal_message(f"{text}的门店", allowed, perm)) from None
            raise UnknownStore(unknown_store_message(text, allowed)) from None
    if store not in allowed:
        _refuse_outside_scope(user, attempt, store, perm)
        raise StoreNotYours(scope_refusal_message(store.name, allowed, perm))
    return store


def _refuse_outside_scope(user, attempt: str, store: Store, perm: str) -> None:
    if user is not None and getattr(user, "is_authenticated", False):
        audit_scope_refusal(actor=user, attempt=f"{attempt} ({perm})", store=store)


# --- products ---------------------------------------------------------------------------------


class UnknownProduct(ValidationError):
    pass


def product_candidates() -> list[tuple[str, str]]:
    """Every way to name a product (name, SKU, aliases; upper-cased) with the product's name,
    longest first, so 「黑牌单杯」 wins over 「黑牌」. Read once per question, like the store list."""
    return _read_once("products", _product_candidates)


def _product_candidates() -> list[tuple[str, str]]:
    pairs: dict[str, str] = {}
    for name, sku, aliases in Product.objects.values_list("name", "sku", "aliases"):
        for word in [name, sku, *(aliases or [])]:
            if word and len(word) >= 2:
                pairs.setdefault(word.upper(), name)
    return sorted(pairs.items(), key=lambda p: len(p[0]), reverse=True)


def products_named_in_text(text: str) -> list[str]:
    """Every product a question names, in order, each once; longer names win their characters
    (「黑牌单杯」 is not also 黑牌)."""
    found = [(start, name) for start, _, name in longest_first_matches(text, product_candidates())]  # longest first
    return list(dict.fromkeys(name for _, name in sorted(found)))


def find_product_in_text(text: str) -> tuple[str, str] | None:
    """The product a question names (name, SKU or alias, longest match, case-insensitive:
    「mojito」), as (the words used, the product's name); None when it names none."""
    upper = (text or "").upper()
    best: tuple[int, str, str] | None = None
    for word, name in product_candidates():
        at = upper.find(word)
        if at >= 0 and (best is None or len(word) > len(best[1]) or (len(word) == len(best[1]) and at < best[0])):
            best = (at, word, name)
    if best is None:
        return None
    at, word, name = best
    return text[at : at + len(word)], name


def known_products_text() -> str:
    return "、".join(Product.objects.filter(active=True).values_list("name", flat=True))


def resolve_product(value) -> Product:
    """A product given as a parameter (exactly its name, SKU or alias; a Product passes
    through). Raises UnknownProduct naming what can be asked for."""
    if isinstance(value, Product):
        return value
    text = str(value or "").strip()
    # Exactly a name, alias or SKU: a parameter is never read in part (「科罗娜abc」).
    exact = next((name for word, name in product_candidates() if text.upper() == word), None)
    if exact:
        return Product.objects.get(name=exact)
    raise UnknownProduct(f"没有叫「{text}」的商品。可以查询的商品：{known_products_text()}。")


def catalog_for(user):
    """Every product with its list price, for a caller who may read products (a role, or a POS
    device): PermissionDenied, audited, otherwise."""
    from core.roles import require

    require(user, "ops.view_product", attempt="catalog", message="这个账号没有角色，不能读商品目录；请联系店长分配角色。")
    return list(Product.objects.order_by("sku"))
