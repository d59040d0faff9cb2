"""audit_record: the one way any app writes an audit row, in the caller's transaction.

Request metadata (request id, client address) comes from a contextvar set by the
request middleware or the MCP server; never from a global.
"""
from __future__ import annotations

import contextvars
from datetime import timedelta

from django.contrib.contenttypes.models import ContentType
from django.db import transaction

request_meta: contextvars.ContextVar[dict | None] = contextvars.ContextVar("request_meta", default=None)


def audit_record(*, actor, action: str, target=None, store=None, before=None, after=None):
    from .models import AuditLog

    meta = request_meta.get() or {}
    return AuditLog.objects.create(
        actor=actor if getattr(actor, "pk", None) else None,
        actor_username=getattr(actor, "username", "") or "system",
        action=action,
        target_type=ContentType.objects.get_for_model(target) if target is not None else None,
        target_id=getattr(target, "pk", None),
        target_repr=str(target)[:200] if target is not None else "",
        store=store,
        before=before,
        after=after,
        request_id=meta.get("request_id", ""),
        remote_addr=meta.get("remote_addr"),
    )


DENIAL_WINDOW = timedelta(minutes=1)


# Denial reasons are stored as stable machine words (scripts and tests match on them); people
# read them in Chinese. Prefix → what the audit list shows.
REASONS_FOR_PEOPLE = (
    ("POS token on a non-POS endpoint", "POS 设备令牌访问了非 POS 接口"),
    ("no confirm permission", "没有处理提案的权限"),
    ("proposal outside the user's stores", "提案不属于其负责的门店"),
    ("store outside the token's scope", "门店不在该令牌的范围内"),
    ("store outside the user's scope", "门店不在其负责的范围内"),
    ("store outside the user's stores", "门店不在其负责的范围内"),
    ("outside the user's stores", "记录不属于其负责的门店"),
    ("question of another store's asker", "问题来自其他门店的员工"),
    ("no permission", "没有权限"),
    ("missing ", "缺少权限："),
)


_PERMISSION_VERBS = {"add": "新增", "change": "修改", "delete": "删除", "view": "查看"}


def permission_for_people(perm: str) -> str:
    """「workflow.add_proposal」 → 「新增操作提案」, a custom one by its own name (「查看营业数据…」),
    from the models' verbose names (no query); an unknown one as it is."""
    from django.apps import apps

    app_label, _, codename = perm.partition(".")
    try:
        models = list(apps.get_app_config(app_label).get_models())
    except LookupError:
        return perm
    for model in models:
        for code, name in model._meta.permissions:
            if code == codename:
                return str(name)
    verb, _, model_name = codename.partition("_")
    model = next((m for m in models if m._meta.model_name == model_name), None)
    return f"{_PERMISSION_VERBS[verb]}{model._meta.verbose_name}" if model is not None and verb in _PERMISSION_VERBS else perm


def reason_for_people(reason: str) -> str:
    """A stored denial reason in Chinese (「store outside the user's scope (ops.view_sales)」 →
    「门店不在其负责的范围内」, 「missing workflow.add_proposal」 → 「缺少权限：新增操作提案」); a reason
    someone typed (a rejection) as it is."""
    for prefix, text in REASONS_FOR_PEOPLE:
        if reason.startswith(prefix):
            return text + permission_for_people(reason[len(prefix):].strip()) if prefix == "missing " else text
    return reason


def audit_denial(*, actor, attempt: str, reason: str, target=None, store=None, channel: str | None = None, **extra):
    """A refused attempt, recorded in its own transaction so it survives the refusal. The same
    refusal again within a minute of the last one counts up on that row (core.DenialRepeat)
    instead of adding another: a flood of denials cannot flood the log."""
    from django.db.models import F
    from django.utils import timezone

    from .models import AuditLog, DenialRepeat

    meta = request_meta.get() or {}
    after = {"attempt": attempt, "reason": reason, **extra}
    if channel or meta.get("channel"):
        after["channel"] = channel or meta.get("channel")
    now = timezone.now()
    with transaction.atomic():
        if getattr(actor, "pk", None):
            same = AuditLog.objects.filter(
                actor_id=actor.pk, action="permission_denied", after__attempt=attempt, after__reason=reason,
                target_type=ContentType.objects.get_for_model(target) if target is not None else None,
                target_id=getattr(target, "pk", None),
                # A device probing FS-ZM after GZ-ZJ is a second store's business: its own row,
                # which FS-ZM's manager sees (a store-less target alone made it a repeat).
                store_id=getattr(store, "pk", None),
            ).order_by("-created_at").first()
            if same is not None:
                repeat, _ = DenialRepeat.objects.select_for_update().get_or_create(audit=same, defaults={"last_at": same.created_at})
                if now - repeat.last_at <= DENIAL_WINDOW:
                    DenialRepeat.objects.filter(pk=repeat.pk).update(times=F("times") + 1, last_at=now)
                    return same
        return audit_record(actor=actor, action="permission_denied", target=target, store=store, after=after)
