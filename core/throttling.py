"""Per-person rate limits for every channel, from the one rate table (settings.SM_RATES).

`ScopedRateThrottle` is DRF's throttle for views that name a `throttle_scope`; `throttle_web`
applies the same scopes to the chat page and its HTMX forms, and `throttle_person` to MCP
tool calls. All of them count in core.ratelimit (atomic, in the database, unaffected by a
Redis outage).
"""
from __future__ import annotations

from rest_framework.throttling import BaseThrottle

from .ratelimit import Count, limited, who


class ScopedRateThrottle(BaseThrottle):
    """Per user (per client address when anonymous), for views with a `throttle_scope`."""

    def allow_request(self, request, view):
        scope = getattr(view, "throttle_scope", None)
        if not scope:
            return True
        self.count = limited(scope, who(request))
        return self.count.allowed

    def wait(self):
        count: Count | None = getattr(self, "count", None)
        return max(1.0, count.retry_after) if count is not None else None


def throttle_web(request, scope: str) -> float | None:
    """For non-DRF views: None when allowed, else the seconds to wait."""
    count = limited(scope, who(request))
    return None if count.allowed else max(1.0, count.retry_after)


def throttle_person(user, scope: str) -> float | None:
    """For channels without a request (MCP over stdio): None when allowed, else the seconds to wait."""
    count = limited(scope, f"user:{user.pk}")
    return None if count.allowed else max(1.0, count.retry_after)
