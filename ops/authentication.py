"""Bearer-token authentication for the REST API (and MCP over HTTP)."""
from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

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


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "ops.authentication.ApiTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "POS 设备或用户的 API 令牌（manage.py issue_token 生成）"}
