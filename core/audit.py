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
    ("login locked out", "登录失败次数过多，已暂时锁定"),
    ("invalid API tokens", "无效的 API 令牌尝试过多"),
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


def audit_collapsed(*, actor, action: str, key: dict, target=None, store=None, extra: dict | None = None,
                    same_target: bool = False):
    """Write an audit row unless the same person did the same thing in the same channel within
    DENIAL_WINDOW of the last time: then count up on that row (core.DenialRepeat) instead. A
    flood of denials or lookups cannot flood the log; the audit row itself never changes.

    `key` (flat values) is what makes two events the same besides actor, action, store and
    channel; `extra` is stored on a new row only. `same_target` also requires the same target (a
    member looked up again is a repeat, another member is not); otherwise any target counts."""
    from django.db.models import F
    from django.utils import timezone

    from .models import AuditLog, DenialRepeat

    meta = request_meta.get() or {}
    key = dict(key)
    if meta.get("channel") and "channel" not in key:
        key["channel"] = meta["channel"]
    now = timezone.now()
    with transaction.atomic():
        if getattr(actor, "pk", None):
            match = {f"after__{k}": v for k, v in key.items()}
            if "channel" not in key:
                match["after__channel__isnull"] = True
            if same_target:
                match["target_type"] = ContentType.objects.get_for_model(target) if target is not None else None
                match["target_id"] = getattr(target, "pk", None)
            # A device probing FS-ZM after GZ-ZJ is a second store's business: its own row,
            # which FS-ZM's manager sees.
            same = (AuditLog.objects.filter(actor_id=actor.pk, action=action, store_id=getattr(store, "pk", None), **match)
                    .order_by("-created_at").first())
            if same is not None:
                repeat, _ = DenialRepeat.objects.select_for_update().get_or_create(audit=same, defaults={"last_at": same.created_at})
                if now - repeat.last_at <= DENIAL_WINDOW:
                    DenialRepeat.objects.filter(pk=repeat.pk).update(times=F("times") + 1, last_at=now)
                    return same
        return audit_record(actor=actor, action=action, target=target, store=store, after={**key, **(extra or {})})


def audit_scope_refusal(*, actor, attempt: str, store, channel: str | None = None):
    """A person asked about a store of the chain that is not theirs (「那福田店呢」 from 天河's
    staff): refused and recorded, not as an attack (越权被拒) but as a question outside their
    stores; repeats collapse like denials do."""
    from .models import AuditLog

    key = {"attempt": attempt, "reason": "store outside the user's scope", **({"channel": channel} if channel else {})}
    return audit_collapsed(actor=actor, action=AuditLog.Action.SCOPE_REFUSED, key=key, store=store)


def audit_denial(*, actor, attempt: str, reason: str, target=None, store=None, channel: str | None = None, **extra):
    """A refused attempt, recorded in its own transaction so it survives the refusal; repeats
    collapse (audit_collapsed) per person, attempt, reason, store and channel, whatever the
    target: probing 300 proposal ids is one row that says 300."""
    from .models import AuditLog

    key = {"attempt": attempt, "reason": reason, **({"channel": channel} if channel else {})}
    return audit_collapsed(actor=actor, action=AuditLog.Action.PERMISSION_DENIED, key=key, target=target, store=store, extra=extra)
