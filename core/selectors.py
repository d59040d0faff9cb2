"""Reads of the audit log, for the API, the proposals page and anything else that shows it."""
from __future__ import annotations

from .models import AuditLog
from .roles import require


def audit_entries(user):
    """The audit rows `user` may read (core.view_auditlog, their stores' rows; head office all).
    PermissionDenied, audited, without the permission."""
    require(user, "core.view_auditlog", attempt="read audit log", message="只有店长和总部可以查看审计日志。")
    return AuditLog.objects.restrict(user, "view").select_related("store")
