"""A small cache-based guard against password guessing on the admin and product logins.

Failed logins are counted per username and per client address (user_login_failed); after
SM_LOGIN_MAX_FAILURES for a username, or five times as many from one address, within
SM_LOGIN_LOCKOUT_SECONDS, further login POSTs get a 429 with Retry-After until the window
passes. A successful login clears the username's count. A cache outage never locks
anyone out (the guard fails open).
"""
from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.cache import cache
from django.dispatch import receiver
from django.http import HttpResponse

log = logging.getLogger("storemind.login_guard")
LOGIN_PATHS = ("/admin/login/", "/accounts/login/")


def _client(request) -> str:
    return (request.META.get("REMOTE_ADDR") or "-")[:64] if request is not None else "-"


def _keys(username: str, request) -> tuple[str, str]:
    name = (username or "").strip().lower()[:150]
    return f"sm:login-fail:user:{name}", f"sm:login-fail:addr:{_client(request)}"


def _bump(key: str) -> None:
    window = settings.SM_LOGIN_LOCKOUT_SECONDS
    if cache.add(key, 1, window):
        return
    try:
        cache.incr(key)
    except ValueError:  # expired between add() and incr()
        cache.set(key, 1, window)


@receiver(user_login_failed, dispatch_uid="storemind.login_failed")
def _count_failure(sender, credentials=None, request=None, **kwargs):
    try:
        user_key, addr_key = _keys((credentials or {}).get("username", ""), request)
        _bump(user_key)
        _bump(addr_key)
    except Exception as exc:  # the cache is down: never block logins because of it
        log.warning("login guard not counting: %s", exc)


@receiver(user_logged_in, dispatch_uid="storemind.login_ok")
def _clear(sender, request=None, user=None, **kwargs):
    try:
        cache.delete(_keys(getattr(user, "username", ""), request)[0])
    except Exception:
        pass


def locked_out(username: str, request) -> bool:
    try:
        user_key, addr_key = _keys(username, request)
        counts = cache.get_many([user_key, addr_key])
    except Exception as exc:
        log.warning("login guard not checking: %s", exc)
        return False
    limit = settings.SM_LOGIN_MAX_FAILURES
    return counts.get(user_key, 0) >= limit or counts.get(addr_key, 0) >= limit * 5


class LoginGuardMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method == "POST" and request.path in LOGIN_PATHS and locked_out(request.POST.get("username", ""), request):
            minutes = max(1, settings.SM_LOGIN_LOCKOUT_SECONDS // 60)
            response = HttpResponse(
                f"<!doctype html><meta charset=utf-8><title>稍后再试</title><p>登录失败次数太多，请 {minutes} 分钟后再试。</p>",
                status=429,
            )
            response["Retry-After"] = str(settings.SM_LOGIN_LOCKOUT_SECONDS)
            return response
        return self.get_response(request)
