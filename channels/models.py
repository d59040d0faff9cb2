"""Who a person is on a messaging platform, what arrived from it, and what was sent back.

- Identity: a platform's user id bound to a StoreMind user (in the admin, or by the user
  following a one-time link after logging in); the user's roles and stores apply as on the
  chat page. Binding and unbinding are audited.
- Inbound: each delivered message or card click, by the platform's own id (WeCom `MsgId`), so
  a retried delivery is answered exactly once.
- Delivery: each message sent (an answer, a card, a card update), with its attempts and the
  platform's last error: the admin's 「消息渠道」 page.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models


class Platform(models.TextChoices):
    WECOM = "wecom", "企业微信"
    DINGTALK = "dingtalk", "钉钉"
    FEISHU = "feishu", "飞书"


class Identity(models.Model):
    platform = models.CharField("平台", max_length=16, choices=Platform.choices)
    external_id = models.CharField("平台用户 ID", max_length=128)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="channel_identities",
                             verbose_name="StoreMind 账号")
    bound_at = models.DateTimeField("绑定时间", auto_now_add=True)
    bound_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
                                 verbose_name="绑定人")

    class Meta:
        verbose_name = verbose_name_plural = "渠道账号绑定"
        constraints = [models.UniqueConstraint(fields=["platform", "external_id"], name="channel_identity_once_per_platform")]

    def __str__(self) -> str:
        return f"{self.get_platform_display()} {self.external_id} → {self.user}"


class BindingLink(models.Model):
    """A one-time link sent to an unbound platform user; whoever opens it logged in is bound."""

    token = models.CharField("令牌", max_length=64, unique=True)
    platform = models.CharField("平台", max_length=16, choices=Platform.choices)
    external_id = models.CharField("平台用户 ID", max_length=128)
    created_at = models.DateTimeField("创建时间", auto_now_add=True)
    used_at = models.DateTimeField("使用时间", null=True, blank=True)

    class Meta:
        verbose_name = verbose_name_plural = "绑定链接"

    def __str__(self) -> str:
        return f"{self.get_platform_display()} {self.external_id}"


class Inbound(models.Model):
    class Status(models.TextChoices):
        RECEIVED = "received", "已收到"
        ANSWERING = "answering", "回答中"
        ANSWERED = "answered", "已回复"
        IGNORED = "ignored", "未处理"
        FAILED = "failed", "失败"

    platform = models.CharField("平台", max_length=16, choices=Platform.choices)
    message_id = models.CharField("平台消息 ID", max_length=128)
    external_id = models.CharField("发送人", max_length=128)
    chat_id = models.CharField("群聊", max_length=128, blank=True)
    kind = models.CharField("类型", max_length=16, default="text")  # text | card (a button pressed)
    text = models.TextField("内容", blank=True)
    reply_to = models.CharField("回复地址", max_length=512, blank=True, help_text="平台给的会话回复地址（钉钉 sessionWebhook 等）")
    status = models.CharField("状态", max_length=16, choices=Status.choices, default=Status.RECEIVED)
    received_at = models.DateTimeField("收到时间", auto_now_add=True)
    answered_at = models.DateTimeField("回复时间", null=True, blank=True)

    class Meta:
        ordering = ["-received_at"]
        verbose_name = verbose_name_plural = "收到的消息"
        constraints = [models.UniqueConstraint(fields=["platform", "message_id"], name="channel_inbound_once")]

    def __str__(self) -> str:
        return f"{self.get_platform_display()} {self.external_id}：{self.text[:30]}"


class Delivery(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "待发送"
        SENT = "sent", "已发送"
        FAILED = "failed", "失败"

    platform = models.CharField("平台", max_length=16, choices=Platform.choices)
    to = models.CharField("接收人", max_length=128)
    kind = models.CharField("类型", max_length=16, default="markdown")  # markdown | card | card_update | text
    payload = models.JSONField("内容")
    inbound = models.ForeignKey(Inbound, on_delete=models.SET_NULL, null=True, blank=True, related_name="deliveries", verbose_name="回复的消息")
    proposal_id = models.BigIntegerField("提案", null=True, blank=True)
    status = models.CharField("状态", max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    attempts = models.PositiveSmallIntegerField("尝试次数", default=0)
    last_error = models.CharField("最近错误", max_length=255, blank=True)
    created_at = models.DateTimeField("创建时间", auto_now_add=True)
    sent_at = models.DateTimeField("发送时间", null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = verbose_name_plural = "消息渠道"
        constraints = [models.UniqueConstraint(fields=["platform", "to", "kind", "proposal_id"], condition=models.Q(kind="card"),
                                               name="channel_one_card_per_proposal_and_person")]

    def __str__(self) -> str:
        return f"{self.get_platform_display()} → {self.to}（{self.get_status_display()}）"
