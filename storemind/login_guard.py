"""The guard against password guessing on the admin and product logins.

Failed logins are counted per account and per client address (core.ratelimit: atomic, in
the database, so a Redis outage does not switch the guard off). After SM_LOGIN_MAX_FAILURES
for one account, or five times as many from one client address, within
SM_LOGIN_LOCKOUT_SECONDS, further login POSTs for that account, or from that address, get a
429 with Retry-After until the window passes. A successful login clears the account's count.

The client address is the real one behind the proxy (`client_address`: X-Forwarded-For,
believed only from SM_TRUSTED_PROXIES): counting the proxy's address locked the whole chain
out after 25 wrong passwords from one person.
"""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.dispatch import receiver
from django.http import HttpResponse

from core.ratelimit import Rate, clear, client_address, hit, peek

LOGIN_PATHS = ("/admin/login/", "/accounts/login/")


def _rates() -> tuple[Rate, Rate]:
    limit, window = settings.SM_LOGIN_MAX_FAILURES, settings.SM_LOGIN_LOCKOUT_SECONDS
    return Rate(limit, window), Rate(limit * 5, window)


def _keys(username: str, request) -> tuple[str, str]:
    name = (username or "").strip().lower()[:150]
    return f"login:account:{name}", f"login:address:{client_address(request)}"


@receiver(user_login_failed, dispatch_uid="storemind.login_failed")
def _count_failure(sender, credentials=None, request=None, **kwargs):
    username = (credentials or {}).get("username", "")
    account, address = _keys(username, request)
    per_account, per_address = _rates()
    by_account, by_address = hit(account, per_account), hit(address, per_address)
    # A lockout is audited once, by the failure that starts it (not once per guess).
    for count, what in ((by_account, f"account {username[:150]!r}"), (by_address, f"address {client_address(request)}")):
        if count.count == count.limit:
            from core.audit import audit_denial

            audit_denial(actor=None, attempt="login", reason=f"login locked out: {count.limit} failures for {what}")


@receiver(user_logged_in, dispatch_uid="storemind.login_ok")
def _clear(sender, request=None, user=None, **kwargs):
    clear(_keys(getattr(user, "username", ""), request)[0], _rates()[0])


def locked_out(username: str, request) -> float | None:
    """Seconds until a login may be tried again for this account from this address, or None."""
    account, address = _keys(username, request)
    per_account, per_address = _rates()
    counts = [c for c in (peek(account, per_account), peek(address, per_address)) if c.count >= c.limit]
    return max(c.retry_after for c in counts) if counts else None


class LoginGuardMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method == "POST" and request.path in LOGIN_PATHS:
            wait = locked_out(request.POST.get("username", ""), request)
            if wait is not None:
                minutes = max(1, round(wait / 60))
                response = HttpResponse(
                    f"<!doctype html><meta charset=utf-8><title>稍后再试</title><p>登录失败次数太多，请 {minutes} 分钟后再试。</p>",
                    status=429,
                )
                response["Retry-After"] = str(max(1, int(wait)))
                return response
        return self.get_response(request)
