"""Who is calling: a person's API token over HTTP (a POS device token is refused: it may call POS
endpoints only), the --user of stdio read again per call, and the assistant's role gate."""
from __future__ import annotations

from django.core.exceptions import PermissionDenied


def token_from_header(header: str | None, address: str = "-"):
    """The API token of an Authorization header; None when missing or invalid. Too many wrong
    tokens from one address raise rest_framework's Throttled, as over REST."""
    from rest_framework.exceptions import AuthenticationFailed

    from ops.authentication import authenticate_key

    if not header or not header.lower().startswith(("bearer ", "token ")):
        return None
    try:
        return authenticate_key(header.split(None, 1)[1].strip(), address=address)[1]
    except AuthenticationFailed:
        return None


def user_from_token(header: str | None, address: str = "-"):
    """The user of a person's API token; None when missing, invalid or a POS device token."""
    token = token_from_header(header, address)
    return token.user if token is not None and not token.store_id else None


def _refuse_pos_token(token) -> None:
    from core.audit import audit_denial

    audit_denial(actor=token.user, attempt="mcp over http", reason="POS token on a non-POS endpoint", store=token.store, channel="mcp")


def _reload_user(pk: int):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.filter(pk=pk, is_active=True).first()


def _may_use_assistant(user, tool_name: str) -> bool:
    """The same gate as the chat: a store role (checked as a permission); a refusal is audited."""
    from agent.services import assistant_require

    try:
        assistant_require(user)
    except PermissionDenied:
        return False
    return True
