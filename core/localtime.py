"""One helper for showing a moment in local time: the store's own time zone when the record
belongs to a store, the project's (TIME_ZONE) otherwise. Stored times stay UTC."""
from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from django.conf import settings


def store_zone(store=None) -> ZoneInfo:
    name = getattr(store, "timezone", "") or settings.TIME_ZONE
    return ZoneInfo(name)


def local_time(value: datetime | None, store=None) -> datetime | None:
    """`value` in the store's (or the project's) time zone; None stays None."""
    if value is None:
        return None
    return value.astimezone(store_zone(store))
