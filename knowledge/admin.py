from django.contrib import admin, messages

from core.admin_base import ReadOnlyAdmin, ReadOnlyInline

from .models import Chunk, Document, IndexMeta, SectionAlias
from .tasks import ingest_corpus_task


class ChunkInline(ReadOnlyInline):
    model = Chunk
    fields = ["ordinal", "section_path", "text", "n_terms"]


@admin.register(Document)
class DocumentAdmin(ReadOnlyAdmin):
    list_display = ["title", "path", "doc_type", "audience", "version", "updated", "chunk_count", "ingested_at"]
    list_filter = ["doc_type", "audience"]
    search_fields = ["title", "path", "body"]
    inlines = [ChunkInline]
    actions = ["reindex"]

    @admin.display(description="切片数")
    def chunk_count(self, obj):
        return obj.chunks.count()

    @admin.action(description="重新索引语料（增量，按内容哈希）")
    def reindex(self, request, queryset):
        if not request.user.is_superuser and not request.user.groups.filter(name="manager").exists():
            self.message_user(request, "只有店长可以重新索引。", messages.ERROR)
            return
        result = ingest_corpus_task.delay(actor_id=request.user.pk)
        try:
            self.message_user(request, result.get(timeout=120), messages.SUCCESS)
        except Exception as exc:  # the worker reports; the page must not 500
            self.message_user(request, f"已提交重新索引任务 {result.id}（{type(exc).__name__}）。", messages.INFO)

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_staff


@admin.register(Chunk)
class ChunkAdmin(ReadOnlyAdmin):
    list_display = ["section_path", "document", "ordinal", "audience", "n_terms"]
    list_filter = ["audience", "document__doc_type"]
    search_fields = ["section_path", "text"]
    list_select_related = ["document"]
    exclude = ["embedding"]


@admin.register(IndexMeta)
class IndexMetaAdmin(ReadOnlyAdmin):
    list_display = ["signature", "n_chunks", "avg_terms", "refusal_threshold", "judge_threshold", "updated_at"]


class OrphanFilter(admin.SimpleListFilter):
    title = "章节是否还在"
    parameter_name = "orphan"

    def lookups(self, request, model_admin):
        return [("yes", "孤立（章节已不存在）"), ("no", "章节还在")]

    def queryset(self, request, queryset):
        if self.value() not in ("yes", "no"):
            return queryset
        from django.db.models import Exists, OuterRef

        live = Chunk.objects.filter(document__path=OuterRef("document_path"), section_path=OuterRef("section_path"))
        return queryset.annotate(live=Exists(live)).filter(live=self.value() == "no")


@admin.register(SectionAlias)
class SectionAliasAdmin(ReadOnlyAdmin):
    """Question aliases (常见问法): from the corpus, taught from an unanswered question, or written
    by the product at ingest (自动生成的问法, kept apart by the 来源 filter; a knowledge owner can
    delete them, and a deleted one is not written again). An admin alias whose section
    disappeared in a re-ingest is an orphan: listed here and by `manage.py export_aliases`, so
    the corpus owners can point it somewhere again."""

    list_display = ["question", "section_path", "document_path", "source", "active", "created_by", "created_at", "section_status"]
    list_filter = ["source", OrphanFilter, "active"]
    search_fields = ["question", "section_path", "document_path"]
    actions = ["delete_generated"]

    @admin.action(description="删除所选的自动生成问法（不影响手写的问法）")
    def delete_generated(self, request, queryset):
        from django.core.exceptions import PermissionDenied, ValidationError

        from .services import generated_alias_delete

        done = 0
        try:
            for alias in queryset.filter(source=SectionAlias.Source.GENERATED, active=True):
                generated_alias_delete(alias=alias, user=request.user)
                done += 1
        except (PermissionDenied, ValidationError) as exc:
            self.message_user(request, " ".join(getattr(exc, "messages", [str(exc)])), messages.ERROR)
            return
        skipped = queryset.count() - done
        self.message_user(request, f"已删除 {done} 条自动生成的问法" + (f"；{skipped} 条不是启用中的自动生成问法，未改动" if skipped else "") + "。",
                          messages.SUCCESS if done else messages.WARNING)

    @admin.display(description="章节")
    def section_status(self, obj):
        exists = Chunk.objects.filter(document__path=obj.document_path, section_path=obj.section_path).exists()
        return "还在" if exists else "孤立（章节已不存在）"
