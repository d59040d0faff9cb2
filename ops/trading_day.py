"""The trading day: a bar's day runs past midnight, from 06:00 to 06:00 the next morning, in
the store's own time zone (「今天卖了多少」 at 01:30 counted the last 90 minutes; 「昨晚」 at 03:00
was the calendar day before, with the night before's small hours and without this night's).

A period names trading days; each store counts a date from 06:00 to 06:00 of its own clock
(Store.timezone), in the tools and in the daily rollup's trigger (migrations ops.0006, 0007).
Which date 「今天」 is: the store's own trading day when one store is asked about or the asker
works in one store (store_today); the chain's (settings.TIME_ZONE) for several stores at once.

The bottom of `ops`: periods, selectors and tools all read it, and it imports none of them.
"""
from __future__ import annotations

from datetime import date, datetime, time, timedelta
from functools import cache
from zoneinfo import ZoneInfo, available_timezones

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import timezone

TZ = ZoneInfo(settings.TIME_ZONE)  # the chain's zone: which date 「今天」 is
DAY_STARTS_AT = 6


def local_today() -> date:
    """Today's trading day: until 06:00 it is still the day that began the evening before."""
    return trading_day_of(timezone.now(), TZ)


def store_today(zone_name: str, chain_today: date) -> date:
    """「今天」 on a store's clock, for a question the chain dates `chain_today`: moved by the days
    between the store's trading day and the chain's right now (none for a store on the chain's
    zone; a store eight hours behind is still on yesterday for most of the chain's morning)."""
    if zone_name == str(TZ):
        return chain_today
    now = timezone.now()
    return chain_today + (trading_day_of(now, ZoneInfo(zone_name)) - trading_day_of(now, TZ))


def trading_day_of(instant: datetime, zone: ZoneInfo) -> date:
    """The trading day an instant belongs to on a clock in `zone`."""
    return (timezone.localtime(instant, zone) - timedelta(hours=DAY_STARTS_AT)).date()


def day_window(first: date, last: date, zone: ZoneInfo) -> tuple[datetime, datetime]:
    """Trading days `first`..`last` as instants in `zone`: 06:00 of the first to 06:00 after the last."""
    opens = time(DAY_STARTS_AT)
    return (datetime.combine(first, opens, tzinfo=zone),
            datetime.combine(last + timedelta(days=1), opens, tzinfo=zone))


def validate_time_zone(name: str) -> None:
    """A store's zone is an IANA name (Asia/Shanghai, Asia/Tokyo): the rollup's trigger hands it
    to PostgreSQL, and a misspelt one would fail every order the store sends."""
    if name not in _zone_names():
        raise ValidationError(f"「{name}」不是有效的时区名称，请填写如 Asia/Shanghai 的 IANA 时区。")


@cache
def _zone_names() -> frozenset[str]:
    return frozenset(available_timezones())  # reads the zone files once, not per validation
