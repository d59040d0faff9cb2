"""Propose → confirm → audit. The model proposes; a person with the right role confirms;
the confirmation performs the write. AuditLog rows are append-only."""
from __future__ import annotations

from django.conf import settings
from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.db import models

from core.scoping import StoreScopedQuerySet
from ops.models import Order, Product, Store


class Proposal(models.Model):
    class Kind(models.TextChoices):
        RESTOCK = "restock", "补货申请"
        TICKET = "ticket", "客诉工单"

    class Status(models.TextChoices):
        PENDING = "pending", "待确认"
        CONFIRMED = "confirmed", "已确认"
        REJECTED = "rejected", "已拒绝"
        EXPIRED = "expired", "已过期"
        WITHDRAWN = "withdrawn", "已撤回"

    class Source(models.TextChoices):
        CHAT = "chat", "聊天"
        API = "api", "API"
        ADMIN = "admin", "后台"
        MCP = "mcp", "MCP"

    kind = models.CharField("类型", max_length=16, choices=Kind.choices)
    store = models.ForeignKey(Store, on_delete=models.PROTECT, related_name="proposals", verbose_name="门店")
    payload = models.JSONField("内容")
    status = models.CharField("状态", max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    source = models.CharField("来源", max_length=8, choices=Source.choices)
    idempotency_key = models.CharField("幂等键", max_length=128)
    proposed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="proposals", verbose_name="提议人")
    created_at = models.DateTimeField("提议时间", auto_now_add=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="decided_proposals", verbose_name="处理人"
    )
    decided_at = models.DateTimeField("处理时间", null=True, blank=True)
    decision_note = models.CharField("处理说明", max_length=255, blank=True)
    result_type = models.ForeignKey(ContentType, on_delete=models.PROTECT, null=True, blank=True, verbose_name="结果类型")
    result_id = models.PositiveBigIntegerField("结果 ID", null=True, blank=True)
    result = GenericForeignKey("result_type", "result_id")

    objects = StoreScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = verbose_name_plural = "操作提案"
        indexes = [models.Index(fields=["store", "status"], name="proposal_store_status_idx")]
        # One user's key never finds another user's proposal.
        constraints = [models.UniqueConstraint(fields=["proposed_by", "idempotency_key"], name="proposal_idempotency_per_user")]
        permissions = [("confirm_restock", "确认补货申请"), ("confirm_ticket", "确认客诉工单")]

    def __str__(self) -> str:
        return f"#{self.pk} {self.get_kind_display()} · {self.store} · {self.get_status_display()}"

    def content_text(self) -> str:
        """What is proposed, in one line: 「科罗娜啤酒 86瓶、百威啤酒 137瓶」 or a ticket's category and start."""
        if self.kind == self.Kind.RESTOCK:
            return "、".join(f"{line['product']} {line['quantity']}{line['unit']}" for line in self.payload.get("lines", []))
        return f"{self.payload.get('category')}（{self.payload.get('severity')}）{self.payload.get('description', '')[:30]}"


# Who may decide a proposal of each kind: the permission, held for the proposal's store.
CONFIRM_PERMS = {Proposal.Kind.RESTOCK: "workflow.confirm_restock", Proposal.Kind.TICKET: "workflow.confirm_ticket"}


class RestockRequest(models.Model):
    class Status(models.TextChoices):
        APPROVED = "approved", "已批准待下单"
        ORDERED = "ordered", "已下单"
        RECEIVED = "received", "已到货"

    proposal = models.OneToOneField(Proposal, on_delete=models.PROTECT, related_name="restock_request", verbose_name="提案")
    store = models.ForeignKey(Store, on_delete=models.PROTECT, verbose_name="门店")
    status = models.CharField("状态", max_length=16, choices=Status.choices, default=Status.APPROVED)
    approved_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, verbose_name="批准人")
    created_at = models.DateTimeField("创建时间", auto_now_add=True)

    objects = StoreScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = verbose_name_plural = "补货单"

    def __str__(self) -> str:
        return f"补货单 #{self.pk} · {self.store}"


class RestockLine(models.Model):
    request = models.ForeignKey(RestockRequest, on_delete=models.CASCADE, related_name="lines", verbose_name="补货单")
    product = models.ForeignKey(Product, on_delete=models.PROTECT, verbose_name="商品")
    quantity = models.PositiveIntegerField("数量")
    unit = models.CharField("单位", max_length=4)
    reason = models.CharField("原因", max_length=200, blank=True)

    class Meta:
        verbose_name = verbose_name_plural = "补货明细"

    def __str__(self) -> str:
        return f"{self.product} × {self.quantity}{self.unit}"


class Ticket(models.Model):
    class Category(models.TextChoices):
        DRINKS = "酒水品质", "酒水品质"
        FOOD_SAFETY = "食品安全", "食品安全"
        SERVICE = "服务态度", "服务态度"
        CHECKOUT = "收银结账", "收银结账"
        HYGIENE = "环境卫生", "环境卫生"
        MEMBERSHIP = "会员储值", "会员储值"
        OTHER = "其他", "其他"

    class Severity(models.TextChoices):
        LOW = "一般", "一般"
        MEDIUM = "较重", "较重"
        HIGH = "严重", "严重"

    class Status(models.TextChoices):
        OPEN = "open", "处理中"
        CLOSED = "closed", "已结案"

    proposal = models.OneToOneField(Proposal, on_delete=models.PROTECT, related_name="ticket", verbose_name="提案")
    store = models.ForeignKey(Store, on_delete=models.PROTECT, verbose_name="门店")
    category = models.CharField("类别", max_length=32, choices=Category.choices)
    severity = models.CharField("严重程度", max_length=8, choices=Severity.choices)
    description = models.TextField("描述")
    order = models.ForeignKey(Order, on_delete=models.SET_NULL, null=True, blank=True, verbose_name="关联订单")
    member_number = models.CharField("会员号", max_length=16, blank=True)
    status = models.CharField("状态", max_length=8, choices=Status.choices, default=Status.OPEN)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, verbose_name="确认人")
    created_at = models.DateTimeField("创建时间", auto_now_add=True)

    objects = StoreScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = verbose_name_plural = "客诉工单"

    def __str__(self) -> str:
        return f"工单 #{self.pk} · {self.category} · {self.severity}"
