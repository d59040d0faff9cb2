"""Reads of the audit log, for the API, the proposals page and anything else that shows it."""
from __future__ import annotations

from django.core.exceptions import ValidationError

from .models import AuditLog
from .roles import require

AUDIT_READERS_ONLY = "只有店长和总部可以查看审计日志。"


def audit_entries(user, *, action: str | None = None, store=None, actor: str | None = None):
    """The audit rows `user` may read (core.view_auditlog, their stores' rows; head office all),
    narrowed to one action, store (a Store the caller resolved within the user's stores) or
    actor's username. PermissionDenied, audited, without the permission; ValidationError for an
    action that does not exist."""
    require(user, "core.view_auditlog", attempt="read audit log", message=AUDIT_READERS_ONLY)
    rows = AuditLog.objects.restrict(user, "view").select_related("store", "repeat")
    if action and action not in AuditLog.Action.values:
        # 「?action=bogus」 answered [] as if nothing had happened; ?status=bogus on proposals is a 400.
        raise ValidationError({"action": [f"只能是：{'、'.join(AuditLog.Action.values)}。"]})
    if action:
        rows = rows.filter(action=action)
    if store is not None:
        rows = rows.filter(store=store)
    if actor:
        rows = rows.filter(actor_username=actor)
    return rows
