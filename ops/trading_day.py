"""The trading day: a bar's day runs past midnight, from 06:00 to 06:00 the next morning, in
the store's own time zone (「今天卖了多少」 at 01:30 counted the last 90 minutes; 「昨晚」 at 03:00
was the calendar day before, with the night before's small hours and without this night's).

A period names trading days (「昨天」 is one date for the whole chain, read in the chain's zone,
settings.TIME_ZONE); each store counts that date from 06:00 to 06:00 of its own clock
(Store.timezone). The daily rollup's trigger (migration ops.0006) uses the same day.

The bottom of `ops`: periods, selectors and tools all read it, and it imports none of them.
"""
from __future__ import annotations

from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo, available_timezones

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import timezone

TZ = ZoneInfo(settings.TIME_ZONE)  # the chain's zone: which date 「今天」 is
DAY_STARTS_AT = 6


def local_today() -> date:
    """Today's trading day: until 06:00 it is still the day that began the evening before."""
    return trading_day_of(timezone.now(), TZ)


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
    if name not in available_timezones():
        raise ValidationError(f"「{name}」不是有效的时区名称，请填写如 Asia/Shanghai 的 IANA 时区。")
