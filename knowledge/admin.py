from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path

from core.admin_base import ReadOnlyAdmin
from core.errors import NotFound, message_text

from .answerability import stored_model
from .chunking import chunk_sections
from .documents import (
    document_delete,
    document_publish,
    document_publish_many,
    document_rollback,
    document_scope,
    document_scope_set,
    document_upload,
    managed_store_ids,
    may_manage,
    version_discard,
    version_edit,
    version_for,
)
from .models import Chunk, Document, DocumentVersion, IndexMeta, SectionAlias
from .parsing import FileRejected, Section, files_in
from .selectors import changes_baseline, changes_label, document_file_for, documents_for, edits_undone, section_changes, status_of
from .services import generated_alias_delete
from .tasks import ingest_corpus_task


def _section_index(request) -> int:
    """The section a correction names, read once for the edit and the partial it redraws
    (「abc」 was a 500 while its 400 was being shown; -1 names no section and is refused)."""
    try:
        return int(request.POST.get("index", "-1"))
    except ValueError:
        return -1


@admin.register(Document)
class DocumentAdmin(ReadOnlyAdmin):
    """知识库 › 文档: the knowledge owner's desk. Upload (several files, or a ZIP), preview the
    split and correct it, set who it reaches, publish (a Celery task with a progress bar), see
    every version with its diff, roll back, download the original. Every button goes through
    knowledge.documents, the service REST uses too."""

    list_display = ["title", "status_label", "version_label", "audience", "scope_label", "source", "chunk_count", "ingested_at"]
    list_filter = ["source", "audience", "doc_type"]
    search_fields = ["title", "path", "body"]
    actions = ["reindex", "publish_drafts", "delete_documents"]
    change_list_template = "admin/knowledge/document/change_list.html"

    def get_queryset(self, request):

        ids = documents_for(request.user).values_list("pk", flat=True)
        return super().get_queryset(request).filter(pk__in=ids).select_related("current_version").prefetch_related("scope_stores")

    @admin.display(description="状态")
    def status_label(self, obj):

        return DocumentVersion.Status(status_of(obj)).label

    @admin.display(description="在用版本")
    def version_label(self, obj):
        return f"v{obj.current_version.number}" if obj.current_version else "—"

    @admin.display(description="适用门店")
    def scope_label(self, obj):
        parts = [*obj.scope_cities, *(s.name for s in obj.scope_stores.all())]
        return "、".join(parts) if parts else "全部门店"

    @admin.display(description="段落数")
    def chunk_count(self, obj):
        return obj.chunks.count()

    @admin.action(description="重新索引语料目录（增量，按内容哈希）")
    def reindex(self, request, queryset):
        if not request.user.has_perm("knowledge.manage_document"):
            self.message_user(request, "只有店长或总部可以重新索引。", messages.ERROR)
            return
        result = ingest_corpus_task.delay(actor_id=request.user.pk)
        try:
            self.message_user(request, result.get(timeout=120), messages.SUCCESS)
        except Exception as exc:  # the worker reports; the page must not 500
            self.message_user(request, f"已提交重新索引任务 {result.id}（{type(exc).__name__}）。", messages.INFO)

    @admin.action(description="发布所选文档的最新草稿")
    def publish_drafts(self, request, queryset):

        drafts = [d for d in (doc.versions.filter(status__in=["draft", "failed"]).order_by("-number").first() for doc in queryset) if d]
        try:
            done = document_publish_many(versions=drafts, user=request.user)
        except (PermissionDenied, ValidationError) as exc:
            self.message_user(request, message_text(exc), messages.ERROR)
            return
        self.message_user(request, f"已提交发布 {done} 篇文档的草稿（一起索引），完成前旧版本继续回答。", messages.SUCCESS if done else messages.WARNING)

    @admin.action(description="删除所选文档（移出索引，版本留在审计记录里）")
    def delete_documents(self, request, queryset):
        # A published SOP went at one click (a new-user walkthrough): the documents are listed
        # and the deletion asked once more, as Django's own delete does.
        if request.POST.get("post") != "yes":
            return TemplateResponse(request, "admin/knowledge/document/delete_confirmation.html",
                                    self._context(request, title="确认删除文档", documents=list(queryset.select_related("current_version"))))
        done = 0
        for doc in queryset:
            try:
                document_delete(document=doc, user=request.user)
                done += 1
            except PermissionDenied as exc:
                self.message_user(request, f"《{doc.title}》：{message_text(exc)}", messages.ERROR)
        if done:
            self.message_user(request, f"已删除 {done} 篇文档。", messages.SUCCESS)

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_staff

    def get_urls(self):
        view = self.admin_site.admin_view
        return [path("upload/", view(self.upload_view), name="knowledge_document_upload"),
                path("version/<int:pk>/", view(self.version_view), name="knowledge_documentversion_preview"),
                path("version/<int:pk>/file/", view(self.file_view), name="knowledge_documentversion_file"),
                *super().get_urls()]

    def _context(self, request, **extra):
        return {**self.admin_site.each_context(request), "opts": self.model._meta, **extra}

    def _scope_choices(self, request):
        from ops.models import Store


        ids = managed_store_ids(request.user)
        stores = Store.objects.all() if ids is None else Store.objects.filter(pk__in=ids or [])
        return {"stores": list(stores.order_by("code")), "cities": sorted({s.city for s in stores}), "all_stores": ids is None}

    def upload_view(self, request):
        """Several files or a ZIP at once: each becomes a draft; one draft opens its preview."""

        if not request.user.has_perm("knowledge.manage_document"):
            from core.audit import audit_denial

            audit_denial(actor=request.user, attempt="document_upload (admin)", reason="missing knowledge.manage_document")
            raise PermissionDenied
        results, errors = [], []
        if request.method == "POST":
            files = request.FILES.getlist("files")
            if not files:
                errors.append(("", "请选择要上传的文件（可以多选，也可以是一个 ZIP）。"))
            target = None
            if request.POST.get("document"):
                target = self.get_queryset(request).filter(pk=request.POST["document"]).first()
            for upload in files:
                try:
                    members = files_in(upload.name, upload.read())
                except FileRejected as exc:
                    errors.append((upload.name, exc.message))
                    continue
                for name, data in members:
                    try:
                        results.append(document_upload(
                            user=request.user, name=name, data=data, title=request.POST.get("title", "") if len(files) == 1 and len(members) == 1 else "",
                            audience=request.POST.get("audience") or None, cities=request.POST.getlist("cities") or None,
                            stores=request.POST.getlist("stores") or None, document=target if len(members) == 1 else None))
                    except (PermissionDenied, ValidationError) as exc:
                        errors.append((name, message_text(exc)))
            if results and not errors and len(results) == 1:
                if getattr(results[0], "replayed", False):  # it opened the existing version with no word
                    self.message_user(request, f"上传的文件与 v{results[0].number} 内容相同，没有生成新版本。", messages.INFO)
                return redirect("admin:knowledge_documentversion_preview", results[0].pk)
        context = self._context(request, title="上传文档", results=results, errors=errors, targets=self.get_queryset(request),
                                **self._scope_choices(request))
        return TemplateResponse(request, "admin/knowledge/document/upload.html", context, status=400 if errors and not results else 200)

    # What the preview's buttons do to a version: each returns the version to show next.
    VERSION_ACTIONS = {
        "section": lambda request, version: version_edit(
            version=version, user=request.user, section=_section_index(request), heading=request.POST.get("heading"),
            text=request.POST.get("text"), enabled=request.POST.get("enabled") == "on"),
        "scope": lambda request, version: version_edit(
            version=version, user=request.user, title=request.POST.get("title"), audience=request.POST.get("audience"),
            cities=request.POST.getlist("cities"), stores=request.POST.getlist("stores")),
        "document_scope": lambda request, version: _set_published_scope(request, version),
        "publish": lambda request, version: document_publish(version=version, user=request.user),
        "rollback": lambda request, version: document_rollback(document=version.document, user=request.user, number=version.number),
        "discard": lambda request, version: version_discard(version=version, user=request.user),
    }

    def version_view(self, request, pk):
        """The preview of a version: its outline and sections, corrections (HTMX: the section
        comes back in place), audience and scope, publish; while it is indexed, a progress bar."""
        try:
            version = version_for(request.user, pk)
        except NotFound:
            raise Http404("没有这个文档版本。") from None
        error = ""
        if request.method == "POST":
            action = request.POST.get("action")
            try:
                if action in self.VERSION_ACTIONS:
                    version = self.VERSION_ACTIONS[action](request, version)
            except (PermissionDenied, ValidationError, ValueError) as exc:
                error = message_text(exc)
            if request.htmx and action == "section":  # the section in place: saved, or with what was wrong
                return self._section_partial(request, version, error)
            if not error:
                return redirect("admin:knowledge_documentversion_preview", version.pk)
        if request.htmx and request.GET.get("part") == "status":
            return TemplateResponse(request, "admin/knowledge/document/_status.html", {"version": version})
        baseline = changes_baseline(version)
        changes = section_changes(version, baseline) if baseline else {}
        against = changes_label(version, baseline)
        sections = [{"index": i, **s, "changes": changes.get(i), "changes_against": against} for i, s in enumerate(version.sections)]
        chunks = len(chunk_sections(version.title, [Section.from_dict(s) for s in version.sections]))
        scope = (version.meta or {}).get("scope") or {}
        context = self._context(request, title=f"《{version.title}》v{version.number}", version=version, document=version.document,
                                sections=sections, chunk_estimate=chunks, error=error, scope=scope, edits_undone=edits_undone(version),
                                live_scope=document_scope(version.document).as_dict() if version.document.current_version_id else None,
                                versions=version.document.versions.order_by("-number"), **self._scope_choices(request))
        return TemplateResponse(request, "admin/knowledge/document/preview.html", context, status=400 if error else 200)

    @staticmethod
    def _section_partial(request, version, error: str):
        index = _section_index(request)
        if error:
            s = version.sections[index] if 0 <= index < len(version.sections) else {}
            return TemplateResponse(request, "admin/knowledge/document/_section.html",
                                    {"version": version, "s": {"index": index, **s}, "error": error}, status=400)
        return TemplateResponse(request, "admin/knowledge/document/_section.html",
                                {"version": version, "s": {"index": index, **version.sections[index]}, "saved": True})

    def file_view(self, request, pk):
        from urllib.parse import quote


        version = DocumentVersion.objects.filter(pk=pk).first()
        if version is None:
            raise Http404
        try:
            version, data = document_file_for(request.user, version.document_id, version.number)
        except NotFound:
            raise Http404("没有这个文件。") from None
        response = HttpResponse(data, content_type="application/octet-stream")
        response["Content-Disposition"] = f"attachment; filename*=UTF-8''{quote(version.original_name.rsplit('/', 1)[-1])}"
        return response

    def change_view(self, request, object_id, form_url="", extra_context=None):
        """A document's page, for its owner: its latest version's preview (versions, diff, rollback)."""

        document = self.get_queryset(request).filter(pk=object_id).first()
        version = document.versions.order_by("-number").first() if document is not None else None
        if version is not None and may_manage(request.user, document):
            return self.version_view(request, version.pk)
        return super().change_view(request, object_id, form_url, extra_context)


def _set_published_scope(request, version: DocumentVersion) -> DocumentVersion:
    """A published document's reach, changed at once on its page (a new-user walkthrough found no
    way to see or change it there: the scope form was a draft's only)."""
    document_scope_set(document=version.document, user=request.user, audience=request.POST.get("audience"),
                       cities=request.POST.getlist("cities"), stores=request.POST.getlist("stores"))
    return version


@admin.register(Chunk)
class ChunkAdmin(ReadOnlyAdmin):
    list_display = ["section_path", "document", "ordinal", "audience", "n_terms"]
    list_filter = ["audience", "document__doc_type"]
    search_fields = ["section_path", "text"]
    list_select_related = ["document"]
    exclude = ["embedding"]


@admin.register(IndexMeta)
class IndexMetaAdmin(ReadOnlyAdmin):
    list_display = ["signature", "n_chunks", "avg_terms", "threshold_label", "refusal_threshold", "judge_threshold", "updated_at"]

    @admin.display(description="拒答阈值（可答性）及其来历")
    def threshold_label(self, obj):

        model = stored_model(obj)
        if not model:
            return "没有为这个嵌入器拟合的模型：不按分数拒答"
        corpora = "、".join(f"{k}（{v} 题）" for k, v in (model.get("fitted_on") or {}).items()) if isinstance(model.get("fitted_on"), dict) \
            else f"{model.get('fitted_on')} 题"
        return f"{model['threshold']:.3f}：{model.get('threshold_rule', '调参集误拒 2%')}；拟合于 {corpora}"


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
