from django.contrib import admin
from django.utils import timezone

from core.admin_base import ReadOnlyInline

from .models import Conversation, Feedback, Message, UnansweredQuestion


class MessageInline(ReadOnlyInline):
    model = Message
    fields = ["role", "content", "intent", "refused", "created_at"]


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ["title", "user", "thread_id", "updated_at"]
    search_fields = ["title", "thread_id", "user__username"]
    readonly_fields = ["thread_id", "user", "created_at", "updated_at"]
    inlines = [MessageInline]


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ["conversation", "role", "intent", "refused", "short", "created_at"]
    list_filter = ["role", "intent", "refused"]
    search_fields = ["content"]
    readonly_fields = [f.name for f in Message._meta.fields]

    @admin.display(description="内容")
    def short(self, obj):
        return obj.content[:60]

    def has_add_permission(self, request):
        return False


@admin.register(UnansweredQuestion)
class UnansweredQuestionAdmin(admin.ModelAdmin):
    list_display = ["question", "source", "reason", "top_score", "user", "created_at", "resolved", "resolved_by"]
    list_filter = ["resolved", "source", ("created_at", admin.DateFieldListFilter)]
    search_fields = ["question", "note"]
    readonly_fields = ["question", "user", "message", "source", "reason", "top_score", "created_at", "resolved_by", "resolved_at"]
    actions = ["mark_resolved"]

    @admin.action(description="标记为已处理（如已补充文档）")
    def mark_resolved(self, request, queryset):
        from .services import unanswered_resolve

        count = 0
        for item in queryset.filter(resolved=False):
            unanswered_resolve(item=item, user=request.user, note=f"{timezone.localdate()} 在后台标记")
            count += 1
        self.message_user(request, f"已标记 {count} 条为已处理。")


@admin.register(Feedback)
class FeedbackAdmin(admin.ModelAdmin):
    list_display = ["message", "user", "helpful", "reason", "created_at"]
    list_filter = ["helpful", ("created_at", admin.DateFieldListFilter)]
    search_fields = ["reason", "message__content"]
    readonly_fields = ["message", "user", "helpful", "reason", "created_at"]

    def has_add_permission(self, request):
        return False
