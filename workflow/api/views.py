"""Workflow API: thin views over workflow.services."""
from django.core.exceptions import ValidationError
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from core.localtime import local_time
from core.models import AuditLog
from core.roles import require
from core.selectors import AUDIT_READERS_ONLY, audit_entries
from core.validation import known_query, limit_param, reject_unknown
from ops.selectors import resolve_store_for

from ..chat import proposal_dict
from ..models import Proposal
from ..payloads import TICKET_CATEGORIES, TICKET_SEVERITIES
from ..selectors import proposals_visible
from ..services import REJECT_REASON_MAX, proposal_amend, proposal_confirm, proposal_create, proposal_reject, proposal_withdraw

ProposalIn = inline_serializer("ProposalCreate", {
    "kind": serializers.ChoiceField(choices=Proposal.Kind.choices), "store": serializers.CharField(),
    "payload": serializers.DictField(help_text="restock: {lines:[{sku, quantity, unit, reason}]}; ticket: {category, severity, description, order?, member?}"),
})


class ProposalOutSerializer(serializers.Serializer):
    """The shape of workflow.chat.proposal_dict (documentation only)."""

    id = serializers.IntegerField()
    kind = serializers.CharField(help_text="restock | ticket")
    kind_display = serializers.CharField()
    store = serializers.CharField()
    status = serializers.CharField(help_text="pending | confirmed | rejected | expired | withdrawn")
    status_display = serializers.CharField()
    payload = serializers.DictField()
    source = serializers.CharField()
    proposed_by = serializers.CharField()
    created_at = serializers.CharField()
    can_confirm = serializers.BooleanField()
    why_not = serializers.CharField(allow_blank=True)
    can_withdraw = serializers.BooleanField(help_text="你是提交人且它仍待确认：可以撤回（POST …/withdraw）")
    can_amend = serializers.BooleanField(help_text="仍待确认，且你是提交人或有权确认：可以修改（PATCH …/proposals/{id}）")
    decided_by = serializers.CharField(allow_blank=True, help_text="确认或拒绝的人（待确认时为空）")
    decision_note = serializers.CharField(allow_blank=True, help_text="拒绝原因")


ProposalOut = ProposalOutSerializer
ProposalList = ProposalOutSerializer(many=True)
RejectIn = inline_serializer("Reject", {"reason": serializers.CharField(max_length=REJECT_REASON_MAX)})
WithdrawIn = inline_serializer("Withdraw", {"reason": serializers.CharField(max_length=REJECT_REASON_MAX, required=False, allow_blank=True,
                                                                           help_text="撤回原因（可省略）")})
AmendIn = inline_serializer("ProposalAmend", {
    "payload": serializers.DictField(help_text="整份新内容，规则同提交：restock: {lines:[{sku, quantity, unit, reason}]}; "
                                               "ticket: {category, severity, description, order?, member?}"),
})
AuditEntries = inline_serializer("AuditEntry", many=True, fields={
    "id": serializers.IntegerField(), "at": serializers.CharField(), "actor": serializers.CharField(allow_blank=True),
    "action": serializers.CharField(), "target": serializers.CharField(allow_blank=True),
    "store": serializers.CharField(allow_null=True), "before": serializers.JSONField(allow_null=True),
    "after": serializers.JSONField(allow_null=True), "request_id": serializers.CharField(allow_blank=True),
    "times": serializers.IntegerField(help_text="同一人、同一渠道一分钟内重复同一动作的次数（只记一行）"),
    "last_at": serializers.CharField(help_text="最近一次的时间（times 为 1 时即 at）"),
})


def _body(request) -> dict:
    if request.data in (None, "") or request.data == {}:
        return {}
    if not isinstance(request.data, dict):
        raise ValidationError({"non_field_errors": ["请求体必须是 JSON 对象。"]})
    return request.data


class ProposalsView(APIView):
    throttle_scope = "api_write"

    def get_throttles(self):
        return super().get_throttles() if self.request.method == "POST" else []

    @extend_schema(summary="提案列表（本人所属门店）", parameters=[OpenApiParameter("status", str, enum=Proposal.Status.values,
                                                                                examples=[OpenApiExample("待确认", value="pending")]),
                                                                OpenApiParameter("kind", str, enum=Proposal.Kind.values),
                                                                OpenApiParameter("store", str, description="门店编码、名称或别名",
                                                                                 examples=[OpenApiExample("天河店", value="GZ-TH")]),
                                                                OpenApiParameter("limit", {"type": "integer", "minimum": 1, "maximum": 200}, description="1–200，默认 200")],
                   responses=ProposalList)
    def get(self, request):
        query = known_query(request.query_params, ("status", "kind", "store", "limit"))  # 「?store=天河店」 was ignored
        for field, choices in (("status", Proposal.Status.values), ("kind", Proposal.Kind.values)):
            if field in query and query[field] not in choices:
                raise ValidationError({field: [f"只能是：{'、'.join(choices)}。"]})
        store = resolve_store_for(request.user, query["store"], "workflow.view_proposal", attempt="proposals filter") if "store" in query else None
        qs = proposals_visible(request.user, status=query.get("status"), kind=query.get("kind"), store=store)
        return Response([proposal_dict(p, request.user) for p in qs[:limit_param(query.get("limit"), 200, 200)]])

    @extend_schema(summary="提交提案（支持 Idempotency-Key 头）", request=ProposalIn, responses={201: ProposalOut, 200: ProposalOut},
                   examples=[
                       OpenApiExample("补货", request_only=True, value={"kind": "restock", "store": "GZ-TH", "payload": {"lines": [
                           {"sku": "B001", "quantity": 2, "unit": "箱", "reason": "周末备货"}]}}),
                       OpenApiExample("客诉工单", request_only=True, value={"kind": "ticket", "store": "GZ-TH", "payload": {
                           "category": TICKET_CATEGORIES[0], "severity": TICKET_SEVERITIES[0],
                           "description": "客人反映青岛啤酒有异味，已按制度换了一瓶并登记批次"}}),
                   ],
                   parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER, description="最长 128 个字符；同一个键重放返回原提案",
                                                examples=[OpenApiExample("POS 生成的键", value="th-restock-20261128-01")])])
    def post(self, request):
        body = _body(request)
        reject_unknown(body, {"kind", "store", "payload"})
        if not isinstance(body.get("store"), str):
            raise ValidationError({"store": ["必须给出门店编码或名称（字符串）。"]})
        proposal, created = proposal_create(
            user=request.user, kind=body.get("kind"), store=body["store"], payload=body.get("payload"),
            source=Proposal.Source.API, idempotency_key=request.headers.get("Idempotency-Key"),
        )
        return Response(proposal_dict(proposal, request.user), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class ProposalConfirmView(APIView):
    throttle_scope = "decide"

    @extend_schema(summary="确认提案（执行写入）", request=None, responses=ProposalOut)
    def post(self, request, pk: int):
        reject_unknown(_body(request), set())
        return Response(proposal_dict(proposal_confirm(proposal=pk, user=request.user), request.user))


class ProposalRejectView(APIView):
    throttle_scope = "decide"

    @extend_schema(summary="拒绝提案", request=RejectIn, responses=ProposalOut,
                   examples=[OpenApiExample("库存够用", request_only=True, value={"reason": "库存还够一周，下周一再补"})])
    def post(self, request, pk: int):
        body = _body(request)
        reject_unknown(body, {"reason"})
        reason = body.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise ValidationError({"reason": ["拒绝时请写明原因（字符串）。"]})
        return Response(proposal_dict(proposal_reject(proposal=pk, user=request.user, reason=reason or ""), request.user))


class ProposalView(APIView):
    throttle_scope = "api_write"

    @extend_schema(summary="修改待确认的提案（提交人，或有权确认的人，如店长改数量）", request=AmendIn, responses=ProposalOut,
                   examples=[OpenApiExample("改数量", request_only=True, value={"payload": {"lines": [
                       {"sku": "B001", "quantity": 3, "unit": "箱", "reason": "周末备货"}]}})])
    def patch(self, request, pk: int):
        body = _body(request)
        reject_unknown(body, {"payload"})
        if "payload" not in body:
            raise ValidationError({"payload": ["必须给出新的提案内容（payload）。"]})
        return Response(proposal_dict(proposal_amend(proposal=pk, user=request.user, payload=body["payload"]), request.user))


class ProposalWithdrawView(APIView):
    throttle_scope = "decide"

    @extend_schema(summary="撤回自己提交的待确认提案", request=WithdrawIn, responses=ProposalOut,
                   examples=[OpenApiExample("货已到", request_only=True, value={"reason": "供应商下午已经送到了"})])
    def post(self, request, pk: int):
        body = _body(request)
        reject_unknown(body, {"reason"})
        reason = body.get("reason", "")
        if not isinstance(reason, str):
            raise ValidationError({"reason": ["撤回原因必须是字符串。"]})
        return Response(proposal_dict(proposal_withdraw(proposal=pk, user=request.user, reason=reason), request.user))


class AuditView(APIView):
    """Read-only: there is no write method, for anyone."""

    @extend_schema(summary="审计日志（店长、总部；本人门店的记录）", parameters=[OpenApiParameter("action", str, enum=AuditLog.Action.values), OpenApiParameter("store", str, description="门店编码、名称或别名",
                                                                                                                  examples=[OpenApiExample("天河店", value="GZ-TH")]),
                               OpenApiParameter("actor", str),
                               OpenApiParameter("limit", {"type": "integer", "minimum": 1, "maximum": 500}, description="最多返回几条（1–500，默认 500）")],
                   responses=AuditEntries)
    def get(self, request):
        # 「?store=天河店」 (an alias) answered [], unknown parameters were ignored.
        query = known_query(request.query_params, ("action", "store", "actor", "limit"))
        # The permission before the store: staff asking ?store=GZ-TH were told the store did not exist (400).
        require(request.user, "core.view_auditlog", attempt="read audit log", message=AUDIT_READERS_ONLY)
        store = resolve_store_for(request.user, query["store"], "core.view_auditlog", attempt="audit filter") if "store" in query else None
        qs = audit_entries(request.user, action=query.get("action"), store=store, actor=query.get("actor"))
        return Response([_audit_entry(a) for a in qs[:limit_param(query.get("limit"), 500, 500)]])


def _audit_entry(a) -> dict:
    repeat = getattr(a, "repeat", None) if hasattr(a, "repeat") else None
    return {"id": a.pk, "at": local_time(a.created_at, a.store).isoformat(), "actor": a.actor_username, "action": a.action,
            "target": a.target_repr, "store": a.store.name if a.store else None, "before": a.before, "after": a.after,
            "request_id": a.request_id, "times": repeat.times if repeat else 1,
            "last_at": local_time(repeat.last_at if repeat else a.created_at, a.store).isoformat()}
