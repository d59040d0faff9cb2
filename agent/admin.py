from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html

from core.admin_base import ReadOnlyInline, ScopedAdmin
from core.errors import message_text

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


class OpenFirstFilter(admin.SimpleListFilter):
    """未处理 by default: the questions already linked or marked stayed listed among the open ones."""

    title = "处理状态"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("open", "未处理"), ("done", "已处理"), ("all", "全部")]

    def choices(self, changelist):
        for value, label in self.lookup_choices:
            yield {"selected": (self.value() or "open") == value, "query_string": changelist.get_query_string({self.parameter_name: value}),
                   "display": label}

    def queryset(self, request, queryset):
        value = self.value() or "open"
        return queryset if value == "all" else queryset.filter(resolved=value == "done")


@admin.register(UnansweredQuestion)
class UnansweredQuestionAdmin(ScopedAdmin):
    # The action right after the question: at 1280 px it sat off-screen after nine columns.
    list_display = ["question", "learn", "times_asked", "source", "reason", "user", "created_at"]
    list_filter = [OpenFirstFilter, "resolution", "source", ("created_at", admin.DateFieldListFilter)]
    search_fields = ["question", "note"]
    # What the chat recorded is read-only (a manager could set 提问次数 to 999); 已处理 is set by the list action or the
    # 关联章节 page, through the service that records who and when (ticked here, 处理人 and 处理时间 stayed empty).
    readonly_fields = ["question", "user", "message", "source", "reason", "top_score", "times_asked", "last_asked_at", "resolved",
                       "created_at", "resolved_by", "resolved_at", "resolution", "linked_document", "linked_section"]
    actions = ["mark_resolved"]

    def get_queryset(self, request):
        """Off-topic questions only when the source filter asks for them: they are no SOP gap."""
        rows = super().get_queryset(request)
        if request.resolver_match and request.resolver_match.url_name.endswith("changelist") and "source__exact" not in request.GET:
            rows = rows.exclude(source=UnansweredQuestion.Source.OFF_TOPIC)
        return rows

    @admin.action(description="标记为已处理（如已补充文档）")
    def mark_resolved(self, request, queryset):
        from .services import unanswered_resolve

        count = 0
        for item in queryset.filter(resolved=False):
            unanswered_resolve(item=item, user=request.user, note=f"{timezone.localdate()} 在后台标记")
            count += 1
        self.message_user(request, f"已标记 {count} 条为已处理。")

    @admin.display(description="处理")
    def learn(self, obj):
        if obj.resolved:
            return obj.linked_section or obj.note
        return format_html('<a class="button learn-link" href="{}">关联章节 / 制度缺失</a>',
                           reverse("admin:agent_unansweredquestion_learn", args=[obj.pk]))

    def get_urls(self):
        return [path("<int:pk>/learn/", self.admin_site.admin_view(self.learn_view), name="agent_unansweredquestion_learn"),
                path("gaps/", self.admin_site.admin_view(self.gaps_view), name="agent_unansweredquestion_gaps"),
                *super().get_urls()]

    def gaps_view(self, request):
        """The corpus-gaps page: questions no SOP section answers, with the manager's note."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        gaps = self.get_queryset(request).filter(resolution="gap").select_related("resolved_by", "user").order_by("-resolved_at")
        from knowledge.selectors import aliases_with_status

        orphans = [a for a in aliases_with_status() if a["orphan"]]
        context = {**self.admin_site.each_context(request), "title": "制度缺失", "gaps": gaps, "orphans": orphans,
                   "opts": self.model._meta}
        return TemplateResponse(request, "admin/agent/corpus_gaps.html", context)

    def learn_view(self, request, pk):
        """Pick the section that answers the question (search over sections, with their text),
        or mark it 「制度缺失」 with a note. Both go through agent.services."""
        from .selectors import section_candidates
        from .services import unanswered_link_section, unanswered_mark_gap

        if not self.has_change_permission(request):
            raise PermissionDenied
        item = get_object_or_404(self.get_queryset(request), pk=pk)  # another store's: not found
        if not self.has_change_permission(request, item):
            raise PermissionDenied
        gap_error, note = "", ""
        if request.method == "POST":
            try:
                if request.POST.get("action") == "link":
                    unanswered_link_section(item=item, user=request.user, document_path=request.POST.get("document_path", ""),
                                            section_path=request.POST.get("section_path", ""))
                    self.message_user(request, f"已把「{item.question[:40]}」加为「{item.linked_section}」的常见问法，立即生效。")
                    return redirect("admin:agent_unansweredquestion_changelist")
                if request.POST.get("action") == "gap":
                    note = request.POST.get("note", "")
                    unanswered_mark_gap(item=item, user=request.user, note=note)
                    self.message_user(request, f"已标记为制度缺失：「{item.question[:40]}」。")
                    return redirect("admin:agent_unansweredquestion_gaps")
            except PermissionDenied as exc:
                self.message_user(request, str(exc) or "没有权限。", messages.ERROR)
                return redirect("admin:agent_unansweredquestion_changelist")
            except ValidationError as exc:
                if request.POST.get("action") == "gap":
                    gap_error = message_text(exc)
                else:
                    self.message_user(request, message_text(exc), messages.ERROR)
        q = request.GET.get("q") or item.question
        context = {**self.admin_site.each_context(request), "title": "处理未解答问题", "item": item, "q": q,
                   "hits": section_candidates(q, user=request.user), "gap_error": gap_error, "note": note,
                   "opts": self.model._meta}
        return TemplateResponse(request, "admin/agent/link_section.html", context, status=400 if gap_error else 200)


@admin.register(Feedback)
class FeedbackAdmin(admin.ModelAdmin):
    list_display = ["message", "user", "helpful", "reason", "created_at"]
    list_filter = ["helpful", ("created_at", admin.DateFieldListFilter)]
    search_fields = ["reason", "message__content"]
    readonly_fields = ["message", "user", "helpful", "reason", "created_at"]

    def has_add_permission(self, request):
        return False
