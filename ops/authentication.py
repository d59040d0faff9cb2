"""Bearer-token authentication for the REST API (and MCP over HTTP)."""
from __future__ import annotations

from datetime import timedelta

from django.conf import settings
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
        from core.ratelimit import client_address

        return authenticate_key(header[1], address=client_address(request))

    def authenticate_header(self, request):
        return 'Bearer realm="api"'


def _is_demo_key(key: str) -> bool:
    import hmac

    from .services import DEMO_POS_TOKEN

    return hmac.compare_digest(key.encode(), DEMO_POS_TOKEN.encode())


def authenticate_key(key: str, *, address: str = "-"):
    """The (user, token) of a valid key. A wrong key counts against its client address (the
    `bad_token` rate): past the limit every further try is a 429 until the window ends, and the
    burst is audited once, when it crosses the limit."""
    from core.ratelimit import limited

    token = ApiToken.lookup(key)
    if token is None or not token.user.is_active:
        count = limited("bad_token", f"addr:{address}")
        if count.first_over:
            audit_denial(actor=None, attempt="API token", reason=f"invalid API tokens: more than {count.limit} from {address}",
                         address=address)
        if not count.allowed:
            raise exceptions.Throttled(wait=max(1, int(count.retry_after)), detail="无效令牌尝试太多，请稍后再试。")
        raise exceptions.AuthenticationFailed("令牌无效或已吊销。")
    if not settings.SM_DEMO and _is_demo_key(key):
        # The demo key is printed in the README: a database bootstrapped with SM_DEMO=1 still
        # holds it, and it kept writing orders on a server started with SM_DEMO=0.
        raise exceptions.AuthenticationFailed("演示令牌只在演示模式（SM_DEMO=1）下可用；请用 manage.py issue_token 发一个正式令牌。")
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
        # The route, not the path: 300 proposal ids probed are one attempt that counts up on one
        # audit row (core.audit.audit_collapsed), the first path kept on it.
        match = getattr(request, "resolver_match", None)
        route = f"/{match.route}" if match is not None and match.route else request.path
        audit_denial(actor=request.user, attempt=f"{request.method} {route}", reason="POS token on a non-POS endpoint",
                     store=token.store, channel="rest", path=request.path)
        return False


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "ops.authentication.ApiTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "POS 设备或用户的 API 令牌（manage.py issue_token 生成）"}
