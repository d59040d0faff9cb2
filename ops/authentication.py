"""Bearer-token authentication for the REST API (and MCP over HTTP)."""
from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions

from core.audit import audit_denial

from .models import ApiToken


class ApiTokenAuthentication(authentication.BaseAuthentication):
    keywords = ("bearer", "token")

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1").split()
        if not header or header[0].lower() not in self.keywords:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Authorization 头格式应为：Bearer <令牌>。")
        return authenticate_key(header[1])

    def authenticate_header(self, request):
        return 'Bearer realm="api"'


def authenticate_key(key: str):
    token = ApiToken.lookup(key)
    if token is None or not token.user.is_active:
        raise exceptions.AuthenticationFailed("令牌无效或已吊销。")
    now = timezone.now()
    # Record use at most once a minute: a POS pushing orders shouldn't write a row per request.
    if token.last_used_at is None or now - token.last_used_at > timedelta(minutes=1):
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user, token


class PosTokenOnlyOnPosEndpoints(permissions.BasePermission):
    """A POS device token (bound to a store) may call the POS endpoints (views with
    `pos_endpoint = True`) and nothing else; a refusal is audited."""

    message = "POS 设备令牌只能调用 POS 接口（写订单、库存调整）。"

    def has_permission(self, request, view):
        token = request.auth if isinstance(request.auth, ApiToken) else None
        if token is None or not token.store_id or getattr(view, "pos_endpoint", False):
            return True
        audit_denial(actor=request.user, attempt=f"{request.method} {request.path}", reason="POS token on a non-POS endpoint",
                     store=token.store, channel="rest")
        return False


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "ops.authentication.ApiTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "POS 设备或用户的 API 令牌（manage.py issue_token 生成）"}
