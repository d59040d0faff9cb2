"""Knowledge search API: the same selector as `manage.py search`, with the caller's visibility."""
from django.core.exceptions import ValidationError
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from ops.validation import as_read, known_query, strict_positive_int

from ..selectors import IndexNotReady, search

MAX_QUERY = 500

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
    @extend_schema(
        summary="知识库混合检索",
        parameters=[OpenApiParameter("q", str, required=True, description=f"1–{MAX_QUERY} 个字符"),
                    OpenApiParameter("k", int, description="1–20，默认 5")],
        responses=inline_serializer("KnowledgeSearch", {"query": serializers.CharField(), "terms": serializers.ListField(child=serializers.CharField()), "hits": serializers.ListField(child=HitSerializer)}),
    )
    def get(self, request):
        known_query(request.query_params, ("q", "k"))  # 「?limit=3」 was ignored: 5 hits, no word said
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
