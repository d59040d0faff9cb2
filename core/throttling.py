"""Per-user rate limits that fail open.

The throttle's counters live in the cache (Redis in production). When the cache is down
a POS write must still go through: the throttle logs a warning and allows the request,
rather than turning every write into a 500. `throttle_web` applies the same scopes to the
HTMX views (chat page, feedback, confirm/reject), which are not DRF views.
"""
from __future__ import annotations

import logging
import time

from rest_framework.throttling import ScopedRateThrottle

log = logging.getLogger("core.throttling")
_last_warning = [0.0]


def _warn(scope: str, exc: Exception) -> None:
    if time.monotonic() - _last_warning[0] > 10:  # a down cache must not flood the log
        _last_warning[0] = time.monotonic()
        log.warning("throttle %s not applied: cache unavailable (%s: %s)", scope, type(exc).__name__, exc)


class FailOpenScopedRateThrottle(ScopedRateThrottle):
    """ScopedRateThrottle (per user, or per address when anonymous) that allows the request
    when the cache cannot be reached."""

    def allow_request(self, request, view):
        try:
            return super().allow_request(request, view)
        except Exception as exc:
            _warn(getattr(view, "throttle_scope", "?"), exc)
            return True


class _ScopeView:
    def __init__(self, scope: str):
        self.throttle_scope = scope


def throttle_web(request, scope: str) -> float | None:
    """For non-DRF views: None when allowed, else the seconds to wait."""
    throttle = FailOpenScopedRateThrottle()
    view = _ScopeView(scope)
    if throttle.allow_request(request, view):
        return None
    return throttle.wait() or 1.0
