"""Conversations and their messages (with the trace), and the questions nobody could answer."""
from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from core.scoping import StoreScopedQuerySet


class ConversationQuerySet(models.QuerySet):
    def of_owner(self, user):
        """A user's own threads, not deleted (every channel's)."""
        return self.filter(user=user, deleted_at__isnull=True)

    def in_sidebar(self, user):
        """The chat page's threads: the user's own started there. Threads an API client or an MCP
        client opened are theirs too, but were listed among the web ones (21 mixed after one tour)."""
        return self.of_owner(user).filter(channel=Conversation.Channel.WEB)


class Conversation(models.Model):
    class Channel(models.TextChoices):
        WEB = "web", "网页"
        REST = "rest", "API"
        MCP = "mcp", "MCP"
        WECOM = "wecom", "企业微信"
        DINGTALK = "dingtalk", "钉钉"
        FEISHU = "feishu", "飞书"

    # Unique per user, not globally: a client names its own threads, and another user's id
    # must neither reach their conversation nor reveal that it exists.
    thread_id = models.CharField("会话 ID", max_length=64, default=uuid.uuid4)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations", verbose_name="用户")
    title = models.CharField("标题", max_length=80, blank=True)
    channel = models.CharField("渠道", max_length=8, choices=Channel.choices, default=Channel.WEB, db_index=True)
    created_at = models.DateTimeField("创建时间", auto_now_add=True)
    updated_at = models.DateTimeField("更新时间", auto_now=True)
    deleted_at = models.DateTimeField("删除时间", null=True, blank=True, help_text="用户删除后不再显示；记录保留")

    objects = ConversationQuerySet.as_manager()

    class Meta:
        ordering = ["-updated_at"]
        verbose_name = verbose_name_plural = "会话"
        constraints = [models.UniqueConstraint(fields=["user", "thread_id"], name="conversation_thread_per_user")]

    def __str__(self) -> str:
        return self.title or self.thread_id


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user", "用户"
        ASSISTANT = "assistant", "助手"

    saved_feedback = None  # not a column: the asker's feedback, set by selectors.thread_turns for the page

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages", verbose_name="会话")
    role = models.CharField("角色", max_length=16, choices=Role.choices)
    content = models.TextField("内容")
    intent = models.CharField("意图", max_length=16, blank=True)
    route_reason = models.CharField("路由理由", max_length=255, blank=True)
    refused = models.BooleanField("拒答", default=False)
    citations = models.JSONField("引用", default=list, blank=True)
    data = models.JSONField("数据行", default=list, blank=True)
    proposal = models.JSONField("提案", null=True, blank=True)
    trace = models.JSONField("执行轨迹", default=list, blank=True)
    context = models.JSONField("上下文", default=dict, blank=True, help_text="追问用：解析后的问题、门店、时间、工具")
    created_at = models.DateTimeField("时间", auto_now_add=True)

    class Meta:
        ordering = ["conversation", "id"]
        verbose_name = verbose_name_plural = "消息"
        permissions = [("view_trace", "查看回答的执行过程和工具参数")]

    def __str__(self) -> str:
        return f"{self.get_role_display()}: {self.content[:30]}"


class UnansweredQuestionQuerySet(StoreScopedQuerySet):
    def restrict(self, user, action: str = "view"):
        # A question belongs to the stores of the person who asked it: a manager sees their own
        # stores' (the list named askers and their questions from every store).
        return super().restrict(user, action).distinct()  # an asker in two stores: one row


class UnansweredQuestion(models.Model):
    store_path = "user__stores"

    class Source(models.TextChoices):
        REFUSAL = "refusal", "拒答"
        FEEDBACK = "feedback", "差评反馈"
        # Declined as unrelated to the store (「hi」「明天股市会涨吗」): no SOP gap, so hidden from the
        # list a manager works through unless asked for; kept for when the router misjudged one.
        OFF_TOPIC = "off_topic", "与门店无关"
        # Answered with the closest rule and said so (an answer that only just passed): likely a
        # gap in the SOPs all the same.
        CLOSEST = "closest", "只找到相近规定"
        # A topic the SOPs leave to someone else (corpus/uncovered.txt: 工资, 宠物 …): refused and
        # sent to its owner; a manager may still decide the chain's rules should cover it.
        UNCOVERED = "uncovered", "制度不管的话题"

    question = models.TextField("问题")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, verbose_name="提问人")
    message = models.ForeignKey(Message, on_delete=models.SET_NULL, null=True, blank=True, verbose_name="回答")
    source = models.CharField("来源", max_length=16, choices=Source.choices, default=Source.REFUSAL)
    reason = models.CharField("原因", max_length=255, blank=True)
    top_score = models.FloatField("最高检索分", null=True, blank=True)
    times_asked = models.PositiveIntegerField("提问次数", default=1, help_text="同一人同一天重复问同一个问题只记一行，次数累加")
    last_asked_at = models.DateTimeField("最近一次提问", null=True, blank=True)
    resolved = models.BooleanField("已处理", default=False)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", verbose_name="处理人"
    )
    resolved_at = models.DateTimeField("处理时间", null=True, blank=True)
    note = models.CharField("处理说明", max_length=255, blank=True)
    # The learning loop: linked to the section that answers it (the question became that
    # section's question alias), or marked as a gap in the corpus.
    resolution = models.CharField("处理方式", max_length=16, choices=[("linked", "已关联章节"), ("gap", "制度缺失")], blank=True)
    linked_document = models.CharField("关联文档路径", max_length=255, blank=True)
    linked_section = models.CharField("关联章节", max_length=512, blank=True)
    created_at = models.DateTimeField("时间", auto_now_add=True)

    objects = UnansweredQuestionQuerySet.as_manager()

    class Meta:
        ordering = ["resolved", "-created_at"]
        verbose_name = verbose_name_plural = "未解答问题"

    def __str__(self) -> str:
        return self.question[:40]


class Feedback(models.Model):
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="feedback", verbose_name="回答")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, verbose_name="用户")
    helpful = models.BooleanField("有帮助")
    reason = models.CharField("原因", max_length=255, blank=True)
    created_at = models.DateTimeField("时间", auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = verbose_name_plural = "回答反馈"
        constraints = [models.UniqueConstraint(fields=["message", "user"], name="feedback_once_per_user")]

    def __str__(self) -> str:
        return f"{'有用' if self.helpful else '没用'} {self.reason}"


class UserPreference(models.Model):
    """Per-user display choices. `show_details` (managers and developers only) shows the
    execution trace, tool names, parameters and raw scores under each answer."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="storemind_preference",
                                verbose_name="用户")
    show_details = models.BooleanField("显示执行过程", default=False, help_text="在每个回答下显示执行过程、工具和参数（店长和开发者可用）")
    updated_at = models.DateTimeField("更新时间", auto_now=True)

    class Meta:
        verbose_name = verbose_name_plural = "个人偏好"

    def __str__(self) -> str:
        return f"{self.user}"


class ChatTask(models.Model):
    """A question asked with async=true: the task id a client holds, kept with its state and
    answer in the database. The id lived only in Redis (owner and result), so after a Redis
    restart every id given out before it was a 404 although its answer was in the thread."""

    class Status(models.TextChoices):
        PENDING = "pending", "处理中"
        DONE = "done", "已完成"
        FAILED = "failed", "失败"

    id = models.UUIDField("任务 ID", primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_tasks", verbose_name="提问人")
    query = models.TextField("问题")
    thread_id = models.CharField("会话 ID", max_length=64, blank=True)
    status = models.CharField("状态", max_length=16, choices=Status.choices, default=Status.PENDING)
    steps = models.JSONField("已完成步骤", default=list, blank=True)
    message = models.ForeignKey(Message, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", verbose_name="回答")
    result = models.JSONField("回答", null=True, blank=True, help_text="与同步提问的回答相同（按提问人的权限）")
    created_at = models.DateTimeField("提交时间", auto_now_add=True, db_index=True)
    finished_at = models.DateTimeField("完成时间", null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = verbose_name_plural = "异步提问"

    def __str__(self) -> str:
        return f"{self.id} {self.get_status_display()}"
