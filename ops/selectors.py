"""Read-side helpers for the ops domain: store whitelist resolution and user scoping.

Store names come from user text; they are only ever matched against the whitelist of
stores and their aliases, never interpolated into SQL.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from django.core.exceptions import ValidationError

from .models import Store

ALL_STORES_WORDS = ("全部门店", "所有门店", "各门店", "各店", "每家店", "每个店", "全部店", "所有店", "全店", "全国", "整体", "总共", "一共")
_STORE_MENTION = re.compile(r"([\u4e00-\u9fff]{2,6}?)(?:店|门店|分店)")
# Words that end in 店 or precede 店 in questions but are not store names.
_NOT_A_STORE = ("门店", "本店", "我店", "我们店", "这家店", "那家店", "每家店", "各店", "全店", "另一家店", "别的店", "其他店", "隔壁店", "分店", "开店", "闭店", "进店", "到店", "在店", "离店", "跨店", "店长", "店员")


class UnknownStore(ValidationError):
    pass


@dataclass(frozen=True)
class StoreMatch:
    store: Store | None  # None: all stores
    matched: str


def store_candidates() -> list[tuple[str, Store]]:
    pairs: list[tuple[str, Store]] = []
    for store in Store.objects.all():
        for name in [store.name, store.code, *store.aliases]:
            if name:
                pairs.append((name, store))
    # Longest first, so 「广州天河店」 wins over 「天河」.
    pairs.sort(key=lambda p: len(p[0]), reverse=True)
    return pairs


def known_stores_text() -> str:
    return "、".join(Store.objects.values_list("name", flat=True))


def resolve_store(value: str) -> Store:
    """Resolve a store given as a parameter (code, name or alias). Raises UnknownStore."""
    value = (value or "").strip()
    for name, store in store_candidates():
        if value == name or value.upper() == name.upper():
            return store
    match = find_store_in_text(value)
    if match and match.store:
        return match.store
    raise UnknownStore(f"没有叫「{value}」的门店。已知门店：{known_stores_text()}。")


def find_store_in_text(text: str) -> StoreMatch | None:
    """Find the store a question talks about; None when it names none.

    Raises UnknownStore when the question names a store that is not in the whitelist,
    so a typo never reads as zero sales.
    """
    text = text or ""
    for name, store in store_candidates():
        if name in text:
            return StoreMatch(store=store, matched=name)
    if any(word in text for word in ALL_STORES_WORDS):
        return StoreMatch(store=None, matched="全部门店")
    for m in _STORE_MENTION.finditer(text):
        whole = m.group(0)
        if any(word in whole for word in _NOT_A_STORE) or whole.endswith(("门店", "分店")) and len(m.group(1)) <= 1:
            continue
        mention = _trim_mention(m.group(1)) + "店"
        if len(mention) >= 3 and not any(word in mention for word in _NOT_A_STORE):
            raise UnknownStore(f"没有找到「{mention}」这家门店。已知门店：{known_stores_text()}。")
    return None


def _trim_mention(raw: str) -> str:
    # Drop leading time words and verbs: 「上周北京三里屯」 → 「北京三里屯」.
    raw = re.sub(r"^(上上周|上周|本周|这周|上个月|上月|本月|这个月|今天|昨天|前天|最近\d*天?|近\d+天|今年|去年|查一?下|看看|帮我查|请问)+", "", raw)
    return raw


def stores_for_user(user) -> list[Store]:
    """Stores a user works in; superusers see all."""
    if user is None:
        return []
    if user.is_superuser:
        return list(Store.objects.all())
    return list(user.stores.all())


def user_role(user) -> str:
    """'manager', 'staff' or '' from auth groups."""
    if user is None or not user.is_authenticated:
        return ""
    names = set(user.groups.values_list("name", flat=True))
    if user.is_superuser or "manager" in names:
        return "manager"
    if "staff" in names:
        return "staff"
    return ""
