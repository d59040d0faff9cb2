"""One place that maps exceptions to HTTP for every API view, and JSON errors for /api/.

Services raise Django's ValidationError / PermissionDenied / core.errors.Conflict;
views never build error responses by hand. Every API error body is JSON with a
`detail` (or field errors), whatever SM_DEBUG says: never the HTML debug page.
"""
from __future__ import annotations

import logging

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DatabaseError, IntegrityError
from django.http import JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from core.errors import RETRY_AFTER_SECONDS, refusal_of

from . import embedded_db

log = logging.getLogger("storemind.api")


def _validation_detail(exc: DjangoValidationError):
    if hasattr(exc, "error_dict"):
        return {field: [str(m) for e in errs for m in e.messages] for field, errs in exc.error_dict.items()}
    return {"detail": [str(m) for m in exc.messages]}


def service_unavailable(detail: str, retry_after: int = RETRY_AFTER_SECONDS, **extra) -> JsonResponse:
    response = JsonResponse({"detail": detail, **extra}, status=503, json_dumps_params={"ensure_ascii": False})
    response["Retry-After"] = str(retry_after)
    return response


NO_CREDENTIALS = ("没有提供 API 令牌：请在请求头里带上 Authorization: Bearer <令牌>"
                  "（令牌由店长或管理员用 manage.py issue_token 或后台「API 令牌」发放）。")


def exception_handler(exc, context):
    if isinstance(exc, DjangoValidationError):
        return Response(_validation_detail(exc), status=status.HTTP_400_BAD_REQUEST)
    if (refusal := refusal_of(exc)) is not None:  # PermissionDenied, NotFound, Conflict, the database down
        if refusal.status == 503:
            log.warning("database unavailable: %s", exc)
            embedded_db.restart_embedded_database()
            return Response({"detail": refusal.message}, status=503, headers={"Retry-After": str(RETRY_AFTER_SECONDS)})
        return Response({"detail": refusal.message, **refusal.extra}, status=refusal.status)
    if isinstance(exc, exceptions.PermissionDenied) and str(exc.detail).startswith("CSRF Failed"):
        # A browser session without its CSRF token (DRF's message is English and says only that).
        return Response({"detail": "缺少或无效的 CSRF 令牌：网页请求要带 X-CSRFToken 头；API 客户端请用令牌（Authorization: Bearer …）。"},
                        status=status.HTTP_403_FORBIDDEN)
    if isinstance(exc, exceptions.NotAuthenticated):
        # DRF said only 「身份认证信息未提供。」: name the header and where a token comes from.
        exc = exceptions.NotAuthenticated(NO_CREDENTIALS)
    response = drf_exception_handler(exc, context)
    if response is None and isinstance(exc, IntegrityError):
        # A race no service anticipated: the other request won; retrying sees its result.
        log.warning("integrity error in %s: %s", context.get("view").__class__.__name__, exc)
        return Response({"detail": "与同时提交的另一个请求冲突，请重试。"}, status=status.HTTP_409_CONFLICT)
    if response is None and isinstance(exc, DatabaseError):
        # A value PostgreSQL refused that validation should have caught: still JSON, and logged.
        log.exception("database error in %s", context.get("view").__class__.__name__)
        return Response({"detail": "请求无法处理：数据超出允许范围。"}, status=status.HTTP_400_BAD_REQUEST)
    return response


def json_error_response(request, status_code: int, detail: str) -> JsonResponse:
    return JsonResponse({"detail": detail}, status=status_code, json_dumps_params={"ensure_ascii": False})


def handler404(request, exception=None):
    if request.path.startswith("/api/"):
        return json_error_response(request, 404, "没有这个接口或资源。")
    if getattr(request, "htmx", False):  # shown in the page's error line (storemind.js), not a second page inside it
        from django.shortcuts import render

        return render(request, "htmx/error.html", {"error": "没有找到，或者它不属于你。"}, status=404)
    from django.views.defaults import page_not_found

    return page_not_found(request, exception)


def handler500(request):
    if request.path.startswith("/api/"):
        return json_error_response(request, 500, "服务器内部错误，请稍后重试。")
    from django.views.defaults import server_error

    return server_error(request)


__all__ = ["exception_handler", "exceptions", "handler404", "handler500"]
