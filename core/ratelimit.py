"""One rate table for every channel: atomic fixed-window counters in the database.

Every limit in StoreMind — the REST throttles, the chat page and its HTMX forms, MCP over
stdio and HTTP, the login lockout, failed API tokens and member lookups — counts here, with
one `INSERT … ON CONFLICT DO UPDATE … RETURNING`. That statement is atomic: 50 requests
arriving together against a 30/min limit let exactly 30 through (the cache-based throttle
read, appended and wrote back, and let 35–37 through). The counters are in PostgreSQL, not
Redis, so a Redis outage changes nothing: limits and lockouts keep holding (fail closed);
when the database itself is down the request could not be served anyway.

Windows are fixed and aligned (a 60 s window runs from one whole minute to the next); a
counter row is keyed by what it counts and its window's start, and rows of windows that
ended long ago are deleted now and then by whoever writes.

`client_address` is the one place a client's address is read: the connecting address, or,
when that is a proxy listed in SM_TRUSTED_PROXIES, the last address in X-Forwarded-For that
is not one of those proxies. Behind Caddy every request comes from the proxy; counting
failed logins by the proxy's address let 25 wrong passwords lock the whole chain out.
"""
from __future__ import annotations

import hashlib
import ipaddress
import random
import time
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.db import connection

# "30/min", "100/hour", "300/day", or with a multiple: "20/15min".
_UNITS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hour": 3600, "d": 86400, "day": 86400}


@dataclass(frozen=True)
class Rate:
    limit: int
    window: int  # seconds

    @classmethod
    def parse(cls, text: str) -> Rate:
        count, _, per = str(text).strip().partition("/")
        digits = "".join(ch for ch in per if ch.isdigit())
        unit = per[len(digits):].strip().lower()
        if not count.strip().isdigit() or unit not in _UNITS:
            raise ValueError(f"a rate is like 30/min, 100/hour or 20/15min, not {text!r}")
        return cls(int(count), int(digits or 1) * _UNITS[unit])


@dataclass(frozen=True)
class Count:
    count: int
    limit: int
    retry_after: float  # seconds until the window ends

    @property
    def allowed(self) -> bool:
        return self.count <= self.limit

    @property
    def first_over(self) -> bool:
        """The first event over the limit in this window (a burst is audited once, here)."""
        return self.count == self.limit + 1


def _key(what: str, window_start: int) -> str:
    if len(what) > 160:  # a long user name or address must not make the key unbounded
        what = what[:80] + "#" + hashlib.sha256(what.encode()).hexdigest()[:32]
    return f"{what}@{window_start}"


def _window(rate: Rate, now: float) -> tuple[int, float]:
    start = int(now // rate.window) * rate.window
    return start, start + rate.window - now


def hit(what: str, rate: Rate | str) -> Count:
    """Count one event for `what` (e.g. 「throttle:chat:user:12」) in the current window."""
    rate = Rate.parse(rate) if isinstance(rate, str) else rate
    now = time.time()
    start, left = _window(rate, now)
    with connection.cursor() as cur:
        cur.execute(
            "INSERT INTO core_ratecounter (key, count, window_ends) VALUES (%s, 1, to_timestamp(%s)) "
            "ON CONFLICT (key) DO UPDATE SET count = core_ratecounter.count + 1 RETURNING count",
            [_key(what, start), start + rate.window],
        )
        count = cur.fetchone()[0]
        if random.random() < 0.002:  # housekeeping, now and then: windows that ended an hour ago
            cur.execute("DELETE FROM core_ratecounter WHERE window_ends < now() - interval '1 hour'")
    return Count(count, rate.limit, left)


def peek(what: str, rate: Rate | str) -> Count:
    """The current window's count for `what`, without counting."""
    rate = Rate.parse(rate) if isinstance(rate, str) else rate
    start, left = _window(rate, time.time())
    with connection.cursor() as cur:
        cur.execute("SELECT count FROM core_ratecounter WHERE key = %s", [_key(what, start)])
        row = cur.fetchone()
    return Count(row[0] if row else 0, rate.limit, left)


def clear(what: str, rate: Rate | str) -> None:
    rate = Rate.parse(rate) if isinstance(rate, str) else rate
    start, _ = _window(rate, time.time())
    with connection.cursor() as cur:
        cur.execute("DELETE FROM core_ratecounter WHERE key = %s", [_key(what, start)])


def rate_for(scope: str) -> Rate:
    """A scope's rate from the one table (settings.SM_RATES)."""
    return Rate.parse(settings.SM_RATES[scope])


def limited(scope: str, who: str) -> Count:
    """Count one request of `who` (「user:12」, 「addr:1.2.3.4」) in `scope`; `.allowed` says whether it may go on."""
    return hit(f"{scope}:{who}", rate_for(scope))


@lru_cache(maxsize=8)
def _trusted(spec: str) -> tuple:
    return tuple(ipaddress.ip_network(part.strip(), strict=False) for part in spec.split(",") if part.strip())


def _is_trusted(address: str, networks) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in net for net in networks)


def client_address(request) -> str:
    """The client's address: REMOTE_ADDR, or, when it is a trusted proxy, the nearest address
    in X-Forwarded-For that is not a trusted proxy. A header sent by anyone else is ignored."""
    if request is None:
        return "-"
    return address_of(request.META.get("REMOTE_ADDR") or "", request.META.get("HTTP_X_FORWARDED_FOR", ""))


def address_of(remote: str, forwarded: str = "") -> str:
    """`client_address` for a connection without a Django request (MCP over HTTP, ASGI)."""
    remote = (remote or "").strip()
    networks = _trusted(getattr(settings, "SM_TRUSTED_PROXIES", "") or "")
    if not networks or not _is_trusted(remote, networks):
        return remote[:64] or "-"
    for address in reversed([part.strip() for part in (forwarded or "").split(",") if part.strip()]):
        try:
            ipaddress.ip_address(address)
        except ValueError:
            break  # a malformed hop: nothing to its left can be trusted
        if not _is_trusted(address, networks):
            return address[:64]
    return remote[:64]


def who(request) -> str:
    """What a per-person limit counts: the user, or the client's address when anonymous."""
    user = getattr(request, "user", None)
    return f"user:{user.pk}" if getattr(user, "is_authenticated", False) else f"addr:{client_address(request)}"
