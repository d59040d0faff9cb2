"""The append-only audit log, at the bottom of the app stack so every app can write it.

The table keeps its original name (``workflow_auditlog``): the model moved here from the
workflow app without copying a row, and the database trigger that refuses UPDATE and
DELETE still guards it. Rows are inserted, never updated or deleted (model, admin, API,
trigger).
"""
from __future__ import annotations

from django.conf import settings
from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.db import models

from .localtime import local_time
from .scoping import ALL, StoreScopedQuerySet, action_perm, store_ids_for

# Actions a manager takes that belong to no store and that they may read back as their own.
# Never a refused attempt: its row names its target (another store's member, say).
OWN_STORELESS_ACTIONS = ("alias_added", "unanswered_resolved")


class AuditLogQuerySet(StoreScopedQuerySet):
    def restrict(self, user, action: str = "view"):
        """The user's stores' rows, and their own store-less teaching (a question alias added, an
        unanswered question handled): a manager could not find what they had done."""
        ids = store_ids_for(user, action_perm(self.model, action))
        if ids is ALL or not ids or action != "view" or not getattr(user, "pk", None):
            return super().restrict(user, action)  # without the permission: nothing
        return self.filter(models.Q(store__in=ids) | models.Q(store__isnull=True, actor=user, action__in=OWN_STORELESS_ACTIONS))


class AuditLog(models.Model):
    class Action(models.TextChoices):
        PROPOSED = "proposed", "提议"
        CONFIRMED = "confirmed", "确认"
        REJECTED = "rejected", "拒绝"
        EXPIRED = "expired", "过期"
        WITHDRAWN = "withdrawn", "撤回"
        AMENDED = "amended", "修改提案"
        PERMISSION_DENIED = "permission_denied", "越权被拒"
        SCOPE_REFUSED = "scope_refused", "超出门店范围"
        REINDEXED = "reindexed", "重建索引"
        TOKEN_ISSUED = "token_issued", "签发令牌"
        TOKEN_REVOKED = "token_revoked", "吊销令牌"
        INVENTORY_ADJUSTED = "inventory_adjusted", "库存调整"
        OBJECT_CHANGED = "object_changed", "后台修改"
        MEMBER_LOOKUP = "member_lookup", "查询会员余额"
        UNANSWERED_RESOLVED = "unanswered_resolved", "未解答问题已处理"
        ALIAS_ADDED = "alias_added", "添加别名"
        CHANNEL_BOUND = "channel_bound", "绑定消息渠道账号"
        CHANNEL_UNBOUND = "channel_unbound", "解绑消息渠道账号"
        ALIAS_DELETED = "alias_deleted", "删除自动生成的问法"
        DOCUMENT_UPLOADED = "document_uploaded", "上传文档"
        DOCUMENT_EDITED = "document_edited", "编辑文档"
        DOCUMENT_PUBLISH_REQUESTED = "document_publish_requested", "申请发布文档"
        DOCUMENT_PUBLISHED = "document_published", "发布文档"
        DOCUMENT_PUBLISH_FAILED = "document_publish_failed", "文档发布失败"
        DOCUMENT_DISCARDED = "document_discarded", "丢弃文档草稿"
        DOCUMENT_ROLLBACK_REQUESTED = "document_rollback_requested", "申请回滚文档"
        DOCUMENT_SCOPE_CHANGED = "document_scope_changed", "修改文档适用门店"
        DOCUMENT_DELETED = "document_deleted", "删除文档"

    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, verbose_name="操作人")
    actor_username = models.CharField("操作人用户名", max_length=150)
    action = models.CharField("动作", max_length=32, choices=Action.choices, db_index=True)
    target_type = models.ForeignKey(ContentType, on_delete=models.PROTECT, null=True, blank=True, verbose_name="对象类型")
    target_id = models.PositiveBigIntegerField("对象 ID", null=True, blank=True)
    target = GenericForeignKey("target_type", "target_id")
    target_repr = models.CharField("对象", max_length=200, blank=True)
    # A string reference, not an import: core sits below ops and never imports it.
    store = models.ForeignKey("ops.Store", on_delete=models.PROTECT, null=True, blank=True, verbose_name="门店")
    before = models.JSONField("变更前", null=True, blank=True)
    after = models.JSONField("变更后", null=True, blank=True)
    request_id = models.CharField("请求 ID", max_length=64, blank=True)
    remote_addr = models.GenericIPAddressField("来源地址", null=True, blank=True)
    created_at = models.DateTimeField("时间", auto_now_add=True, db_index=True)

    objects = AuditLogQuerySet.as_manager()

    class Meta:
        db_table = "workflow_auditlog"
        ordering = ["-created_at", "-id"]
        verbose_name = verbose_name_plural = "审计日志"

    def __str__(self) -> str:
        when = local_time(self.created_at, self.store) if self.created_at else None  # never the UTC wall clock
        return f"{when:%Y-%m-%d %H:%M} {self.actor_username} {self.get_action_display()} {self.target_repr}" if when else self.target_repr

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise PermissionError("审计日志只能追加，不能修改。")
        return super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise PermissionError("审计日志只能追加，不能删除。")


class DenialRepeat(models.Model):
    """How often the same refused attempt came again within a minute of its audit row.

    An identical denial (same person, attempt, reason and target) within DENIAL_WINDOW of the
    last one is counted here instead of writing another audit row: 300 denied confirms in 18
    seconds are one row that says 300, not 300 rows. The audit row itself never changes."""

    audit = models.OneToOneField(AuditLog, on_delete=models.PROTECT, related_name="repeat", verbose_name="审计记录")
    times = models.PositiveIntegerField("次数", default=1)
    last_at = models.DateTimeField("最近一次")

    class Meta:
        verbose_name = verbose_name_plural = "重复越权计数"

    def __str__(self) -> str:
        return f"{self.audit_id} ×{self.times}"


class RateCounter(models.Model):
    """One fixed window of one rate limit (core.ratelimit): what it counts, and how often so far."""

    key = models.CharField("计数键", max_length=255, primary_key=True)
    count = models.PositiveIntegerField("次数", default=0)
    window_ends = models.DateTimeField("窗口结束", db_index=True)

    class Meta:
        verbose_name = verbose_name_plural = "限流计数"

    def __str__(self) -> str:
        return f"{self.key} ×{self.count}"
