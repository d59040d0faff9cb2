"""The trading day: a bar's day runs past midnight, from 06:00 to 06:00 the next morning, local
time (「今天卖了多少」 at 01:30 counted the last 90 minutes; 「昨晚」 at 03:00 was the calendar day
before, with the night before's small hours and without this night's). The daily rollup's
trigger (migration ops.0005) uses the same hour.

The bottom of `ops`: periods, selectors and tools all read it, and it imports none of them.
"""
from __future__ import annotations

from datetime import date, timedelta
from zoneinfo import ZoneInfo

from django.utils import timezone

TZ = ZoneInfo("Asia/Shanghai")
DAY_STARTS_AT = 6


def local_today() -> date:
    """Today's trading day: until 06:00 it is still the day that began the evening before."""
    return (timezone.localtime(timezone.now(), TZ) - timedelta(hours=DAY_STARTS_AT)).date()
