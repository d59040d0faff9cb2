"""A tool call's parameters, resolved: each parameter a tool declares is checked and turned into
what its query takes (a store the caller may read, a period bounded to the data, a product, a
member) by one named step, in a fixed order; every error is reported under its parameter's name.

The steps are hand-written rather than left to `jsonschema`: the errors are sentences a person at
the bar reads in Chinese, per parameter, and most parameters are resolved against the database
(stores in the caller's scope, cities, products, members) — the schema says which, this module how.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Q

from core.audit import audit_collapsed
from core.models import AuditLog
from core.scoping import ALL, store_ids_for

from ..models import Member, Store
from ..periods import Period, PeriodError, bound_to_data, parse_period
from ..selectors import UnknownProduct, UnknownStore, first_sale_date, resolve_product, resolve_store_for, stores_in_city_for
from ..trading_day import store_today
from .base import Tool, store_label
from .compare_stores import MAX_COMPARED
from .top_products import MAX_TOP_N

ALL_STORES_WORDS = (None, "", "全部门店", "all")


@dataclass
class Call:
    """One call being resolved: what was sent, and what the steps made of it so far."""

    tool: Tool
    params: dict[str, Any]
    user: Any
    today: date
    kwargs: dict[str, Any] = field(default_factory=dict)  # what the tool's query takes
    used: dict[str, Any] = field(default_factory=dict)  # the exact parameters, as recorded
    errors: dict[str, list[str]] = field(default_factory=dict)
    city_stores: list[Store] = field(default_factory=list)

    @property
    def props(self) -> dict:
        return self.tool.schema["properties"]

    def given(self, name: str) -> bool:
        """Declared by the tool, sent, and not already in error."""
        return name in self.props and self.params.get(name) not in (None, "") and name not in self.errors


def _names(call: Call) -> None:
    """Unknown parameters and missing required ones."""
    for name in sorted(set(call.params) - set(call.props)):
        call.errors[name] = [f"工具 {call.tool.name} 没有参数 {name}。"]
    for name in call.tool.schema.get("required", []):
        if call.params.get(name) in (None, ""):
            call.errors.setdefault(name, []).append("这个参数是必填的。")


def _store(call: Call) -> None:
    """One store the caller may read, a city where they have several stores, or all of theirs."""
    if "store" not in call.props or call.errors.get("store"):
        return
    raw = call.params.get("store")
    if raw in ALL_STORES_WORDS:
        call.kwargs["store"], call.used["store"] = None, "全部门店"
    elif len(city := stores_in_city_for(call.user, str(raw).strip(), call.tool.perm)) > 1:
        # A city where the caller has several stores (「广州上周卖了多少」 from HQ): those stores.
        call.city_stores = city
        call.kwargs["store"], call.used["store"] = None, store_label(None, city)
    else:
        try:
            store = resolve_store_for(call.user, str(raw), call.tool.perm, attempt=f"tool {call.tool.name}")
            call.kwargs["store"], call.used["store"] = store, store.name
        except UnknownStore as exc:
            call.errors["store"] = exc.messages


def _scope(call: Call) -> None:
    """"All stores" means the caller's stores; None (every store) only for those who may read every
    one. A balance is read for the one store it would be spent at."""
    ids = store_ids_for(call.user, call.tool.perm)
    if call.tool.scope == "here":
        if ids is not ALL and len(ids) == 1:
            call.kwargs["here"] = Store.objects.get(pk=ids[0])
        return
    call.kwargs["scope"] = call.city_stores or (None if ids is ALL else list(Store.objects.filter(pk__in=ids)))
    if call.used.get("store") == "全部门店" and call.kwargs["scope"] is not None:
        call.used["store"] = store_label(None, call.kwargs["scope"])  # a store's staff see their store, not 「全部门店」


def _store_clock(call: Call) -> None:
    """A relative period (「今天」「上周」) about one store is read on that store's clock."""
    if (store := call.kwargs.get("store")) is not None:
        call.today = store_today(store.timezone, call.today)


def _periods(call: Call) -> None:
    """`period` and `baseline`: a Chinese expression or {start, end}."""
    for name in ("period", "baseline"):
        if name not in call.props or call.params.get(name) in (None, ""):
            continue
        raw = call.params[name]
        try:
            if isinstance(raw, dict):
                start, end = date.fromisoformat(raw["start"]), date.fromisoformat(raw["end"])
                if start > end:
                    raise PeriodError("开始日期晚于结束日期。")
                period = Period(start, end, raw.get("label") or f"{start} 至 {end}")
            else:
                period = parse_period(str(raw), call.today)
            call.kwargs[name], call.used[name] = period, period.as_params()
        except (PeriodError, KeyError, ValueError, TypeError) as exc:
            call.errors[name] = [str(exc) if isinstance(exc, PeriodError) else "时间范围格式不对，应为中文表达或 {start, end}。"]


def _top_n(call: Call) -> None:
    if "n" not in call.props or "n" in call.errors:
        return
    raw = call.params.get("n", call.props["n"]["default"])
    if isinstance(raw, bool) or not isinstance(raw, (int, str)) or not str(raw).isdigit() or not 1 <= int(raw) <= MAX_TOP_N:
        call.errors["n"] = [f"n 必须是 1 到 {MAX_TOP_N} 之间的整数。"]
    else:
        call.kwargs["n"] = call.used["n"] = int(raw)


def _choices(call: Call) -> None:
    """`category`, `metric` and `by`: one of the schema's enum, or its default."""
    for name in ("category", "metric", "by"):
        if name not in call.props or name in call.errors:
            continue
        raw = call.params.get(name, call.props[name].get("default"))
        if raw not in call.props[name]["enum"]:
            allowed = "、".join(str(v) for v in call.props[name]["enum"] if v is not None)
            call.errors[name] = [f"{name} 只能是：{allowed}。"]
        else:
            call.kwargs[name] = call.used[name] = raw


def _product(call: Call) -> None:
    if not call.given("product"):
        return
    raw = call.params["product"]
    if not isinstance(raw, str) or len(raw) > 64:
        call.errors["product"] = ["商品要写名称、别名或商品编码（不超过 64 个字）。"]
        return
    try:
        product = resolve_product(raw)
        call.kwargs["product"], call.used["product"] = product, product.name
    except UnknownProduct as exc:
        call.errors["product"] = exc.messages


def _compared_stores(call: Call) -> None:
    """`stores`: stores (or cities, standing for the caller's stores in them); two or more to compare."""
    if "stores" not in call.props or call.params.get("stores") is None:
        return
    raw = call.params["stores"]
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_COMPARED or not all(isinstance(x, str) and x.strip() for x in raw):
        call.errors["stores"] = [f"stores 是 1 到 {MAX_COMPARED} 个门店名称（或城市）的列表。"]
        return
    chosen: list[Store] = []
    for name in raw:
        # A city stands for the caller's stores in it (「广州各店对比」).
        in_city = stores_in_city_for(call.user, name.strip(), call.tool.perm)
        if in_city:
            chosen += [s for s in in_city if s not in chosen]
            continue
        try:
            store = resolve_store_for(call.user, name, call.tool.perm, attempt=f"tool {call.tool.name}")
        except UnknownStore as exc:
            call.errors.setdefault("stores", []).extend(exc.messages)
            continue
        if store not in chosen:
            chosen.append(store)
    if "stores" in call.errors:
        return
    if call.kwargs.get("store") is not None:  # one store asked for: stores would be ignored, silently
        call.errors["stores"] = ["store 和 stores 只能给一个：一家店用 store，几家店用 stores。"]
        return
    if len(chosen) < 2 and call.tool.name == "compare_stores":  # a ranking of products may look at one store
        call.errors["stores"] = [f"你可以查询的门店里，这里只有{chosen[0].name}一家，没有可以对比的门店。" if chosen
                                 else "至少要两家门店才能比较。"]
    else:
        call.kwargs["stores"], call.used["stores"] = chosen, [s.name for s in chosen]
        if "store" in call.used and call.kwargs.get("store") is None:  # not 「全部门店」: these stores
            call.used["store"] = store_label(None, chosen)


def _member_lookups_over(user) -> str | None:
    """A person at the bar looks members up one at a time: past the member_lookup rates (per
    person, every channel) the lookup is refused with when to try again, and the first refusal
    of a burst is audited. Head office (every store) is not limited: it may list members."""
    from core.audit import audit_denial
    from core.ratelimit import limited

    if user is None or store_ids_for(user, "ops.view_member_balance") is ALL:
        return None
    for scope in ("member_lookup", "member_lookup_day"):
        count = limited(scope, f"user:{user.pk}")
        if not count.allowed:
            if count.first_over:
                audit_denial(actor=user, attempt="member lookups", reason=f"member lookups over {scope} ({count.limit})")
            minutes = max(1, round(count.retry_after / 60))
            return f"查询会员太频繁（{count.limit} 次以内），请 {minutes} 分钟后再试；需要批量查看会员请联系总部。"
    return None


def _member(call: Call) -> None:
    """The exact member number or the full phone number only: nothing to enumerate with. Each
    lookup is audited, found or not."""
    if "member" not in call.props or not call.params.get("member") or "member" in call.errors:
        return
    if over := _member_lookups_over(call.user):
        call.errors["member"] = [over]
        return
    key = str(call.params["member"]).strip()
    member = Member.objects.select_related("account", "home_store").filter(Q(phone=key) | Q(number__iexact=key)).first()
    # Filed under the store the asker works at (one store: theirs), so that store's manager sees
    # their staff's lookups (store-less rows were visible to head office only); else the
    # member's home store.
    own = store_ids_for(call.user, call.tool.perm) if call.user is not None else None
    where = Store.objects.filter(pk=own[0]).first() if own and len(own) == 1 else (member.home_store if member else None)
    # The same member again within a minute (a bartender re-asking) counts up on one row;
    # another member is its own row: this log is who looked at whose balance.
    audit_collapsed(actor=call.user, action=AuditLog.Action.MEMBER_LOOKUP, target=member, store=where, same_target=True,
                    key={"by": "phone" if key.isdigit() else "number", "found": member is not None})
    if member is None:
        call.errors["member"] = ["没有找到这个会员（请核对手机号或会员号）。"]
    else:
        call.kwargs["member"], call.used["member"] = member, member.number


def _by_store(call: Call) -> None:
    if "by_store" not in call.props or call.params.get("by_store") is None:
        return
    if not isinstance(call.params["by_store"], bool):
        call.errors["by_store"] = ["by_store 只能是 true 或 false。"]
    else:
        call.kwargs["by_store"] = call.used["by_store"] = call.params["by_store"]


def _period_length(call: Call) -> None:
    if call.tool.max_days and "period" in call.kwargs and call.kwargs["period"].days > call.tool.max_days:
        call.errors["period"] = [f"按天趋势最多查 {call.tool.max_days} 天，请缩短时间范围。"]


def _bounded_to_data(call: Call) -> None:
    """Before the first recorded sale there is no data, not zero sales: chat and API alike."""
    for name in ("period", "baseline"):
        if name in call.kwargs and name not in call.errors:
            try:
                call.kwargs[name] = bound_to_data(call.kwargs[name], first_sale_date())
                call.used[name] = call.kwargs[name].as_params()
            except PeriodError as exc:
                call.errors[name] = [str(exc)]


def _today(call: Call) -> None:
    if call.tool.needs_today:
        call.kwargs["today"] = call.today


# The order matters: the store before the scope it narrows and the clock its periods are read on,
# periods before their length and the
# data's bounds, the member rate limit before the lookup it would audit.
STEPS = (_names, _store, _scope, _store_clock, _periods, _top_n, _choices, _product, _compared_stores, _member, _by_store,
         _period_length, _bounded_to_data, _today)


def resolve(tool: Tool, params: Any, today: date, user) -> tuple[dict, dict]:
    """Return (kwargs for the tool, the exact parameters as recorded); ValidationError per parameter."""
    if not isinstance(params, dict):
        raise ValidationError({"params": ["参数必须是对象。"]})
    call = Call(tool, params, user, today)
    for step in STEPS:
        step(call)
    if call.errors:
        raise ValidationError(call.errors)
    return call.kwargs, call.used
