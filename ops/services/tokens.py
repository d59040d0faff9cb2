"""API tokens: issued to a person (or a POS device bound to one store), revoked, audited."""
from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from core.audit import audit_record
from core.models import AuditLog

from ..models import ApiToken, Store


def token_store_problem(user, store: Store | None) -> str | None:
    """Why `store` cannot be the POS store of a token for `user` (None when it can)."""
    if store is not None and not user.has_perm("ops.add_order"):
        # Bound to a store, a person's token could call neither their endpoints (「POS 设备令牌只能调用
        # POS 接口」) nor write orders: a token dead on arrival. A person's token follows their stores.
        return f"只有 POS 设备账号的令牌绑定门店；{user.username} 的令牌不用指定门店，按账号被分配的门店生效。"
    if store is not None and not store.members.filter(pk=user.pk).exists():
        return f"{user.username} 没有被分配到{store.name}，不能签发这家店的令牌。"
    return None


@transaction.atomic
def api_token_issue(*, user, name: str, store: Store | None = None, issued_by=None) -> tuple[ApiToken, str]:
    """Create a token and return it with its key; the key is shown once and never stored.
    A POS token's store must be one its user is assigned to. Audited (issued_by: who did it;
    None is an operator at the command line)."""
    if (problem := token_store_problem(user, store)) is not None:
        raise ValidationError({"store": [problem]})
    key = ApiToken.generate_key()
    token = ApiToken(user=user, store=store, name=name)
    token.set_key(key)
    token.save()
    audit_record(actor=issued_by, action=AuditLog.Action.TOKEN_ISSUED, target=token, store=store,
                 after={"user": user.username, "store": store.code if store else None, "name": name, "prefix": token.prefix})
    return token, key


@transaction.atomic
def api_token_revoke(*, token: ApiToken, revoked_by=None) -> ApiToken:
    if not token.revoked:
        token.revoked = True
        token.save(update_fields=["revoked"])
        audit_record(actor=revoked_by, action=AuditLog.Action.TOKEN_REVOKED, target=token, store=token.store,
                     before={"revoked": False}, after={"revoked": True})
    return token
