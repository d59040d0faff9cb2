"""Knowledge search API: the same selector as `manage.py search`, with the caller's visibility."""
from urllib.parse import quote

from django.core.exceptions import ValidationError
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from core.errors import Conflict, NotFound
from core.validation import as_read, known_query, reject_unknown, strict_positive_int

from ..documents import document_delete, document_publish, document_scope_set, document_upload
from ..models import Document, DocumentVersion
from ..selectors import (
    IndexNotReady,
    document_detail,
    document_file_for,
    document_summary,
    documents_for,
    edits_undone,
    managed_document,
    search,
)

MAX_QUERY = 500


class UsesTheAssistant(BasePermission):
    """The SOPs are read by people with a role (staff, manager, head office), as in chat and MCP:
    a role-less account got 200 here while both of those refused it."""

    message = "这个账号没有店员、店长或总部角色，不能读门店制度；请联系店长分配角色。"

    def has_permission(self, request, view):
        from core.audit import audit_denial
        from core.roles import USE_ASSISTANT

        if not (request.user and request.user.is_authenticated):
            return False
        if request.user.has_perm(USE_ASSISTANT):
            return True
        audit_denial(actor=request.user, attempt=f"knowledge {request.method} {request.path}"[:120], reason=f"missing {USE_ASSISTANT}")
        return False

HitSerializer = inline_serializer(
    "KnowledgeHit",
    {
        "document": serializers.CharField(), "path": serializers.CharField(), "section_path": serializers.CharField(),
        "text": serializers.CharField(), "score": serializers.FloatField(),
        "vector_rank": serializers.IntegerField(allow_null=True), "vector_score": serializers.FloatField(allow_null=True),
        "lexical_rank": serializers.IntegerField(allow_null=True), "lexical_score": serializers.FloatField(allow_null=True),
    },
)


class KnowledgeSearchView(APIView):
    permission_classes = [*APIView.permission_classes, UsesTheAssistant]
    @extend_schema(
        summary="知识库混合检索",
        parameters=[OpenApiParameter("q", str, required=True, description=f"1–{MAX_QUERY} 个字符",
                                     examples=[OpenApiExample("异味", value="客人说酒有异味怎么办")]),
                    OpenApiParameter("k", {"type": "integer", "minimum": 1, "maximum": 20}, description="1–20，默认 5")],
        responses=inline_serializer("KnowledgeSearch", {"query": serializers.CharField(), "terms": serializers.ListField(child=serializers.CharField()), "hits": serializers.ListField(child=HitSerializer)}),
    )
    def get(self, request):
        known_query(request.query_params, ("q", "k"), required=("q",))  # 「?limit=3」 was ignored: 5 hits, no word said
        q = as_read(request.query_params.get("q") or "")
        errors = {}
        if not q:
            errors["q"] = ["请提供查询内容 q。"]
        elif len(q) > MAX_QUERY:
            errors["q"] = [f"查询内容不能超过 {MAX_QUERY} 个字符。"]
        k = strict_positive_int(request.query_params.get("k", "5"))
        if k is None or not 1 <= k <= 20:
            errors["k"] = ["k 必须是 1 到 20 的整数。"]
        if errors:
            raise ValidationError(errors)
        try:
            result = search(q, user=request.user, k=k)
        except IndexNotReady as exc:
            return Response({"detail": str(exc)}, status=503)
        hits = [{key: v for key, v in h.as_dict().items() if key not in ("chunk_id", "document_id", "audience")} for h in result.hits]
        return Response({"query": result.query, "terms": result.terms, "hits": hits})


# --- documents: the knowledge owner's workflow over REST (knowledge.documents) ----------------

# One serializer class for a section, instantiated wherever a list of sections is declared (one
# component in the schema; an instance cannot be the child of two fields).
_Section = type(inline_serializer("DocumentSection", {
    "index": serializers.IntegerField(), "path": serializers.ListField(child=serializers.CharField()),
    "text": serializers.CharField(), "page": serializers.IntegerField(allow_null=True),
    "aliases": serializers.ListField(child=serializers.CharField()), "enabled": serializers.BooleanField()}))


def _section_out():
    return _Section()


STATUS_HELP = "、".join(f"{v}（{label}）" for v, label in DocumentVersion.Status.choices)


def _diff_out():
    return serializers.DictField(child=serializers.ListField(child=serializers.CharField()), help_text="added / changed / removed: 章节路径")


def _document_fields() -> dict:
    return {
        "id": serializers.IntegerField(), "title": serializers.CharField(),
        "status": serializers.CharField(help_text=STATUS_HELP + "；在用版本的状态，还没发布过时是最新版本的"),
        "version": serializers.IntegerField(allow_null=True, help_text="正在回答问题的版本"),
        "audience": serializers.ChoiceField(choices=Document.Audience.values), "cities": serializers.ListField(child=serializers.CharField()),
        "stores": serializers.ListField(child=serializers.CharField(), help_text="门店编码；空表示适用于全部门店"),
        "source": serializers.ChoiceField(choices=Document.Source.values), "chunks": serializers.IntegerField(),
        "can_manage": serializers.BooleanField()}


def _edits_undone_out():
    return serializers.ListField(child=serializers.CharField(), help_text="在用版本里后台改过、这一版又不一样的节：发布会把那些修改改回去")


UploadOut = inline_serializer("DocumentUploaded", {
    "id": serializers.IntegerField(help_text="文档 id（发布、查询都用它）"), "version": serializers.IntegerField(),
    "status": serializers.CharField(help_text=STATUS_HELP), "title": serializers.CharField(),
    "sections": serializers.ListField(child=_section_out()), "warnings": serializers.ListField(child=serializers.CharField()),
    "diff": _diff_out(), "edits_undone": _edits_undone_out()})
VersionOut = inline_serializer("DocumentVersionSummary", {
    "version": serializers.IntegerField(), "status": serializers.CharField(help_text=STATUS_HELP),
    "status_label": serializers.CharField(), "file": serializers.CharField(), "kind": serializers.CharField(),
    "sections": serializers.IntegerField(), "chunks": serializers.IntegerField(), "progress": serializers.IntegerField(),
    "error": serializers.CharField(), "uploaded_at": serializers.DateTimeField(), "published_at": serializers.DateTimeField(allow_null=True),
    "diff": _diff_out(), "edits_undone": _edits_undone_out()})
DocumentOut = inline_serializer("Document", _document_fields())
DocumentListOut = inline_serializer("DocumentListItem", _document_fields(), many=True)
DocumentDetailOut = inline_serializer("DocumentDetail", {
    **_document_fields(), "versions": serializers.ListField(child=VersionOut), "sections": serializers.ListField(child=_section_out())})
UploadIn = inline_serializer("DocumentUpload", {
    "file": serializers.FileField(help_text="DOCX、PDF（有文字层）、XLSX、CSV、PPTX、Markdown、TXT 或 HTML；按内容识别类型"),
    "title": serializers.CharField(required=False, max_length=128, help_text="默认取文件里的标题；和已有文档同名则成为它的新版本"),
    "audience": serializers.ChoiceField(choices=Document.Audience.values, required=False, help_text="staff 全体员工（默认）或 manager 仅店长"),
    "stores": serializers.CharField(required=False, help_text="适用门店：门店编码或名称，逗号分隔；不填为全部门店"),
    "cities": serializers.CharField(required=False, help_text="适用城市，逗号分隔（该城市现在和将来的门店）"),
    "document": serializers.IntegerField(required=False, help_text="作为这篇文档的新版本上传")})
_NOT_A_LIST = {"not_a_list": "要写字符串列表，如 [\"GZ-TH\"]；[] 表示全部。"}
ScopeIn = inline_serializer("DocumentScope", {
    "audience": serializers.ChoiceField(choices=Document.Audience.values, required=False, allow_null=True,
                                        help_text="staff 全体员工或 manager 仅店长；不写或 null 为不改"),
    "stores": serializers.ListField(child=serializers.CharField(), required=False, allow_null=True, error_messages=_NOT_A_LIST,
                                    help_text="适用门店：编码或名称；[] 表示全部门店；不写或 null 为不改"),
    "cities": serializers.ListField(child=serializers.CharField(), required=False, allow_null=True, error_messages=_NOT_A_LIST,
                                    help_text="适用城市（该城市现在和将来的门店）；不写或 null 为不改")})
SCOPE_FIELDS = {"audience", "stores", "cities"}
PublishIn = inline_serializer("DocumentPublish", {"version": serializers.IntegerField(required=False, min_value=1, help_text="默认：最新的草稿")})
UPLOAD_FIELDS = {"file", "title", "audience", "stores", "cities", "document"}


def _csv(value) -> list[str] | None:
    if value in (None, ""):
        return None
    return [v.strip() for v in str(value).replace("，", ",").split(",") if v.strip()]


class DocumentsView(APIView):
    permission_classes = [*APIView.permission_classes, UsesTheAssistant]
    throttle_scope = "api_write"
    parser_classes = [MultiPartParser]

    def get_throttles(self):
        return super().get_throttles() if self.request.method == "POST" else []

    @extend_schema(summary="知识库文档列表（你能看到的；店长、总部另见自己管理的草稿）", responses=DocumentListOut)
    def get(self, request):
        known_query(request.query_params, ())
        return Response([document_summary(d, request.user) for d in documents_for(request.user)])

    @extend_schema(summary="上传文档（生成草稿，发布前可预览）", request={"multipart/form-data": UploadIn}, responses={201: UploadOut, 200: UploadOut})
    def post(self, request):
        reject_unknown({k: None for k in request.data.keys()}, UPLOAD_FIELDS)
        upload = request.FILES.get("file")
        if upload is None:
            raise ValidationError({"file": ["请用 multipart/form-data 上传文件，字段名 file。"]})
        document = None
        if request.data.get("document"):
            # 404 like POST /knowledge/documents/{id}/publish: an id that names nothing of yours.
            document = managed_document(request.user, strict_positive_int(str(request.data["document"])),
                                        missing="没有这篇文档（或它不归你管理）：document 填要上传新版本的文档 id。")
        version = document_upload(user=request.user, name=upload.name or "document", data=upload.read(), title=request.data.get("title") or "",
                                  audience=request.data.get("audience") or None, stores=_csv(request.data.get("stores")),
                                  cities=_csv(request.data.get("cities")), document=document)
        created = not getattr(version, "replayed", False)  # the same file again: that version, 200 (counting rows raced other uploads)
        body = {"id": version.document_id, "version": version.number, "status": version.status, "title": version.title,
                "sections": [{"index": i, **s} for i, s in enumerate(version.sections)], "warnings": version.warnings, "diff": version.diff,
                "edits_undone": edits_undone(version)}
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class DocumentDetailView(APIView):
    permission_classes = [*APIView.permission_classes, UsesTheAssistant]
    throttle_scope = "api_write"

    def get_throttles(self):
        return super().get_throttles() if self.request.method in ("DELETE", "PATCH") else []

    @extend_schema(summary="一篇文档：状态、在用版本、所有版本及与上一版的差异、在用（或最新草稿）的章节", responses=DocumentDetailOut)
    def get(self, request, pk: int):
        known_query(request.query_params, ())
        return Response(document_detail(pk, request.user))

    @extend_schema(summary="修改文档的可见范围和适用门店/城市（立即生效，记入审计）", request=ScopeIn, responses=DocumentOut)
    def patch(self, request, pk: int):
        known_query(request.query_params, ())
        body = request.data if isinstance(request.data, dict) else None
        if not body:
            raise ValidationError({"detail": ["请求体要是 JSON 对象，写 audience、stores、cities 中的至少一项。"]})
        reject_unknown(body, SCOPE_FIELDS)
        scope = type(ScopeIn)(data=body)  # the documented request body is what is checked
        scope.is_valid(raise_exception=True)
        document = document_scope_set(document=managed_document(request.user, pk), user=request.user, **{
            name: scope.validated_data.get(name) for name in ("audience", "stores", "cities")})
        return Response(document_summary(document, request.user))

    @extend_schema(summary="删除文档（立即不再回答；各版本和原文件留在审计记录里）", responses={204: None})
    def delete(self, request, pk: int):
        known_query(request.query_params, ())
        document_delete(document=managed_document(request.user, pk), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class DocumentPublishView(APIView):
    permission_classes = [*APIView.permission_classes, UsesTheAssistant]
    throttle_scope = "api_write"

    @extend_schema(summary="发布草稿（异步索引；完成前旧版本继续回答，完成后原子切换）", request=PublishIn, responses={202: DocumentOut, 200: DocumentOut})
    def post(self, request, pk: int):
        body = request.data if isinstance(request.data, dict) else {}
        reject_unknown(body, {"version"})
        document = managed_document(request.user, pk)
        versions = document.versions.all()
        if body.get("version") is not None:
            number = strict_positive_int(str(body["version"]))
            version = versions.filter(number=number).first() if number else None
            if version is None:  # a version is a sub-resource: 404, as an unknown document is
                raise NotFound(f"这篇文档没有 v{body['version']}。")
        else:
            version = versions.filter(status__in=[DocumentVersion.Status.DRAFT, DocumentVersion.Status.FAILED]).order_by("-number").first()
            if version is None:  # the document's state, not the request, is what is wrong
                raise Conflict("这篇文档没有待发布的草稿；上传新文件会生成草稿。")
        version = document_publish(version=version, user=request.user)
        document.refresh_from_db()
        done = version.status == DocumentVersion.Status.PUBLISHED
        return Response(document_summary(document, request.user), status=status.HTTP_200_OK if done else status.HTTP_202_ACCEPTED)


class DocumentFileView(APIView):
    permission_classes = [*APIView.permission_classes, UsesTheAssistant]
    @extend_schema(summary="下载原文件（能看到这篇文档的人）", parameters=[OpenApiParameter("version", {"type": "integer", "minimum": 1, "maximum": 999999}, description="默认：在用的版本")],
                   responses={(200, "application/octet-stream"): bytes})
    def get(self, request, pk: int):
        query = known_query(request.query_params, ("version",))
        number = strict_positive_int(query["version"]) if "version" in query else None
        if "version" in query and not number:  # 「?version=0」 was read as the version in use
            raise ValidationError({"version": ["版本号必须是正整数。"]})
        version, data = document_file_for(request.user, pk, number)
        response = HttpResponse(data, content_type="application/octet-stream")
        response["Content-Disposition"] = f"attachment; filename*=UTF-8''{quote(version.original_name.rsplit('/', 1)[-1])}"
        return response
