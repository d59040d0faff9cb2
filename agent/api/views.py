"""Chat API: thin views over agent.services (and the Celery task for async)."""
import re

from django.conf import settings
from django.core.exceptions import ValidationError
from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from core.validation import reject_unknown

from ..services import THREAD_ID_MAX, answer_for, assistant_require, chat_ask, validate_query, validate_thread_id
from ..tasks import QueueUnavailable, submit_ask, task_state

_TASK_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
QUEUE_RETRY_AFTER = 10
CHAT_FIELDS = frozenset({"query", "thread_id", "async"})
ChatIn = inline_serializer("ChatRequest", {
    "query": serializers.CharField(max_length=settings.SM_MAX_QUERY_CHARS),
    "thread_id": serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=THREAD_ID_MAX,
                                       help_text="会话标识。省略、空或 null：新建会话，返回的 thread_id 用于追问；也可以用调用方自己的标识（字母、数字和 - _ . :），第一次出现时新建该会话，之后沿用"),
    "async": serializers.BooleanField(required=False, default=False),
})
ChatOut = inline_serializer("ChatResponse", {
    "answer": serializers.CharField(), "intent": serializers.CharField(), "route_reason": serializers.CharField(),
    "refused": serializers.BooleanField(), "citations": serializers.ListField(child=serializers.DictField()),
    "data": serializers.ListField(child=serializers.DictField()), "proposal": serializers.DictField(allow_null=True),
    "trace": serializers.ListField(child=serializers.DictField(), help_text="执行过程：只对有「查看执行过程」权限的用户返回，其余为空列表"),
    "thread_id": serializers.CharField(),
})
TaskAccepted = inline_serializer("ChatTaskAccepted", {"task_id": serializers.CharField(), "status_url": serializers.CharField()})
TaskStatus = inline_serializer("ChatTaskStatus", {
    "status": serializers.CharField(help_text="pending | done | failed"),
    "result": serializers.DictField(required=False, help_text="status=done 时：与同步提问的回答相同"),
    "detail": serializers.CharField(required=False),
})


class ChatView(APIView):
    throttle_scope = "chat"

    @extend_schema(summary="向门店助手提问（同步，或 async=true 时返回任务 ID）", request=ChatIn, responses={200: ChatOut, 202: TaskAccepted},
                   examples=[OpenApiExample("制度问题", request_only=True, value={"query": "客人说酒有异味怎么办"}),
                             OpenApiExample("数据问题", request_only=True, value={"query": "上周天河店卖了多少"})])
    def post(self, request):
        body = request.data
        if not isinstance(body, dict):
            raise ValidationError({"non_field_errors": ["请求体必须是 JSON 对象：{\"query\": \"...\"}。"]})
        reject_unknown(body, CHAT_FIELDS)
        query = validate_query(body.get("query"))
        thread_id = validate_thread_id(body.get("thread_id"))
        run_async = body.get("async", False)
        if not isinstance(run_async, bool):
            raise ValidationError({"async": ["async 必须是 true 或 false。"]})
        if run_async:
            assistant_require(request.user)
            try:
                task = submit_ask(request.user.pk, query, thread_id)
            except QueueUnavailable:
                return Response({"detail": "后台队列暂时不可用：请稍后重试，或不带 async 直接提问。"},
                                status=status.HTTP_503_SERVICE_UNAVAILABLE, headers={"Retry-After": str(QUEUE_RETRY_AFTER)})
            return Response({"task_id": task.id, "status_url": f"/api/v1/chat/tasks/{task.id}"}, status=status.HTTP_202_ACCEPTED)
        result, conv, _ = chat_ask(user=request.user, query=query, thread_id=thread_id)
        return Response(answer_for(request.user, result, thread_id=conv.thread_id))


class ChatTaskView(APIView):
    @extend_schema(summary="异步提问的结果", responses=TaskStatus)
    def get(self, request, task_id: str):
        if not _TASK_ID.fullmatch(task_id):
            return Response({"detail": "没有这个任务。"}, status=status.HTTP_404_NOT_FOUND)
        state, payload = task_state(task_id, request.user.pk)  # the database only: a broker restart loses nothing here
        if state == "missing" or (state == "done" and payload.get("user_id") != request.user.pk):
            return Response({"detail": "没有这个任务。"}, status=status.HTTP_404_NOT_FOUND)
        if state == "done":
            return Response({"status": "done", "result": {k: v for k, v in payload.items() if k not in ("user_id", "message_id")}})
        if state == "failed":
            return Response({"status": "failed", "detail": "回答时出错或任务已丢失，请重新提问。"}, status=status.HTTP_200_OK)
        return Response({"status": "pending"})
