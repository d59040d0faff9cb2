"""Request-wide middleware: the error contract (audit metadata: core.middleware).

ErrorContractMiddleware is the outermost layer: anything under /api/ answers JSON (also a
resolver 404 or a crash, with SM_DEBUG=1 or not); a database outage is a 503 with
Retry-After everywhere, and the embedded development database is started again when its
postmaster is gone. It never hides an error's cause from the log.
"""
from __future__ import annotations

import logging
import sys

from django.conf import settings
from django.core.signals import got_request_exception
from django.http import HttpResponse

from core.errors import DATABASE_DOWN, is_database_outage
from core.validation import text_problem

from . import embedded_db
from .api import json_error_response, service_unavailable

log = logging.getLogger("storemind.errors")
JSON_PATHS = ("/api/", "/health", "/ready")
_STATUS_TEXT = {
    400: "请求不合法。", 401: "需要登录或 API 令牌。", 403: "没有权限。", 404: "没有这个接口或资源。",
    405: "不支持这个请求方法。", 413: "请求体太大。", 415: "只接受 application/json。", 429: "请求太频繁，请稍后再试。",
}


def _remember_exception(sender, request=None, **kwargs):
    if request is not None:
        request._sm_exception = sys.exc_info()[1]


got_request_exception.connect(_remember_exception, dispatch_uid="storemind.remember_exception")


class ErrorContractMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        api = request.path.startswith(JSON_PATHS)
        if api and (problem := _chunked_body(request) or _too_big(request)):
            return problem
        if api:
            for key, values in request.GET.lists():
                for value in (key, *values):
                    if problem := text_problem(value):
                        return _field_error("query_parameters" if text_problem(key) else key, problem)
        elif request.method == "POST" and request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
            # Pages, HTMX forms and the admin: one check for every field (a NUL in a reject
            # reason or a thread title was a DataError, a 500).
            for key, values in request.POST.lists():
                for value in (key, *values):
                    if problem := text_problem(value):
                        return _form_error(request, key, problem)
        response = self.get_response(request)
        exc = getattr(request, "_sm_exception", None)
        if exc is not None and is_database_outage(exc):
            log.warning("database unavailable: %s", exc)
            embedded_db.restart_embedded_database()
            if api:
                return service_unavailable(DATABASE_DOWN)
            page = HttpResponse("<!doctype html><meta charset=utf-8><title>稍后重试</title><p>数据库暂时不可用，请稍后刷新。</p>",
                                status=503)
            page["Retry-After"] = "5"
            return page
        if api and response.status_code >= 400 and not response.get("Content-Type", "").startswith("application/json"):
            if response.status_code >= 500:
                detail = "服务器内部错误，请稍后重试。"
            else:
                detail = _STATUS_TEXT.get(response.status_code, "请求不合法。")
            converted = json_error_response(request, response.status_code, detail)
            for header in ("Retry-After", "Allow", "WWW-Authenticate"):
                if header in response:
                    converted[header] = response[header]
            return converted
        return response


def _form_error(request, key: str, problem: str) -> HttpResponse:
    """A form field that cannot be stored: 400, with the field and why, as a page or an HTMX fragment."""
    from django.utils.html import escape

    field = "字段名" if text_problem(key) else f"「{escape(key[:40])}」"
    message = f"{field}{problem}请删掉这个字符后重试。"
    if request.headers.get("HX-Request"):
        return HttpResponse(f'<p class="error" role="alert">{message}</p>', status=400)
    return HttpResponse(f"<!doctype html><meta charset=utf-8><title>输入有误</title><p>{message}</p>", status=400)


def _chunked_body(request):
    """A body sent with Transfer-Encoding: chunked has no Content-Length, and Django reads such a
    body as empty: a valid order came back as 400 「external_id、created_at … 缺失」, and a 4 MB
    one dropped the connection. Behind gunicorn, which decodes the chunks (wsgi.input_terminated),
    the body is read here up to the size limit; a server that hands over raw chunks gets 411."""
    if "chunked" not in request.META.get("HTTP_TRANSFER_ENCODING", "").lower() or request.META.get("CONTENT_LENGTH"):
        return None
    if not request.META.get("wsgi.input_terminated"):
        return json_error_response(request, 411, "请求体请带上 Content-Length 头发送：这里不支持分块传输（Transfer-Encoding: chunked）。")
    import io

    from django.core.handlers.wsgi import LimitedStream

    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    raw = request.META["wsgi.input"].read(limit + 1 if limit is not None else -1)
    if limit is not None and len(raw) > limit:
        return _over_the_limit(request, limit, None)
    request.META["CONTENT_LENGTH"] = str(len(raw))
    request._stream = LimitedStream(io.BytesIO(raw), len(raw))
    return None


def _too_big(request):
    """A body over DATA_UPLOAD_MAX_MEMORY_SIZE is a 413 that names the limit. Django refuses it
    while DRF reads the body, as a bare 400 (「请求不合法。」): a POS sending 500 orders of 110 lines
    (2.7 MB) could not tell that from a malformed order."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None
    if limit is None or length <= limit:
        return None
    return _over_the_limit(request, limit, length)


def _over_the_limit(request, limit: int, length: int | None):
    """The 413, with the size when the client declared it and what to do about it."""
    advice = "；订单请分成更小的批次发送" if request.path.startswith("/api/v1/orders") else ""
    size = f" {length:,} 字节，" if length is not None else ""
    return json_error_response(request, 413, f"请求体{size}超过 {limit:,} 字节（约 {limit / 1_048_576:.1f} MB）的上限{advice}。")


def _field_error(field: str, problem: str):
    from django.http import JsonResponse

    return JsonResponse({field[:64] or "query": [problem]}, status=400, json_dumps_params={"ensure_ascii": False})


class HtmxLoginRedirectMiddleware:
    """An HTMX request whose session has ended was answered with the login page, which htmx
    then swapped into the chat as an answer (and the question was wiped). A redirect to the
    login page becomes HX-Redirect, so the browser goes there and comes back to the page it
    was on afterwards."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if request.headers.get("HX-Request") == "true" and response.status_code in (301, 302):
            location = response.get("Location", "")
            if location.startswith(settings.LOGIN_URL):
                return htmx_to_login(request)
        return response


def htmx_to_login(request) -> HttpResponse:
    from urllib.parse import urlencode, urlsplit

    current = urlsplit(request.headers.get("HX-Current-URL", "") or "/")
    page = current.path + (f"?{current.query}" if current.query else "")
    response = HttpResponse(status=204)
    response["HX-Redirect"] = f"{settings.LOGIN_URL}?{urlencode({'next': page if page.startswith('/') else '/'})}"
    return response


def csrf_failure(request, reason: str = ""):
    """A form sent with a missing or stale CSRF token (session over, page left open for days):
    an HTMX request is sent to log in again, or to reload the page when still logged in; a page
    says so in Chinese."""
    if request.headers.get("HX-Request") == "true":
        if not getattr(request, "user", None) or not request.user.is_authenticated:
            return htmx_to_login(request)
        response = HttpResponse("页面已过期，正在刷新……", status=403)
        response["HX-Refresh"] = "true"
        return response
    return HttpResponse("<!doctype html><meta charset=utf-8><title>页面已过期</title>"
                        "<p>页面已过期或登录已失效，请刷新页面后重试。</p>", status=403)


# Every page's scripts are files under /static (htmx, storemind.js, the admin's, Swagger UI's
# with its `?script` initialiser), so script-src needs nothing but 'self'. Styles keep
# 'unsafe-inline': the admin and htmx's indicator set style attributes.
CONTENT_SECURITY_POLICY = "; ".join((
    "default-src 'self'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data:",
    "font-src 'self' data:", "connect-src 'self'", "object-src 'none'", "base-uri 'self'", "form-action 'self'",
    "frame-ancestors 'none'",
))
PERMISSIONS_POLICY = ", ".join(f"{feature}=()" for feature in (
    "camera", "microphone", "geolocation", "payment", "usb", "serial", "bluetooth", "accelerometer", "gyroscope",
    "magnetometer", "interest-cohort", "browsing-topics",
))


class SecurityHeadersMiddleware:
    """CSP and Permissions-Policy on every response, and `Cache-Control: no-store` on every
    answer to an authenticated request (a session, an API token): a shared or back-button
    cache must not keep a store's sales, a member's balance or an answer's trace."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        response.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.setdefault("Permissions-Policy", PERMISSIONS_POLICY)
        user = getattr(request, "user", None)
        authenticated = bool(getattr(user, "is_authenticated", False)) or "HTTP_AUTHORIZATION" in request.META
        if authenticated and not request.path.startswith(settings.STATIC_URL):
            response["Cache-Control"] = "no-store"
        return response
