"""Where managers confirm. Actions call the same services as every other entry point,
object by object, and report per object what happened."""
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Case, IntegerField, Value, When
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.utils.html import format_html, format_html_join

from core.admin_base import ReadOnlyInline, ScopedAdmin
from core.errors import Conflict, NotFound

from .models import CONFIRM_PERMS, Proposal, RestockLine, RestockRequest, Ticket
from .payloads import payload_from_form, ticket_choices
from .services import (
    REJECT_REASON_MAX,
    can_confirm,
    proposal_amend,
    proposal_confirm,
    proposal_reject,
    proposals_decide_many,
    reject_reason_clean,
)


class StoreScopedAdmin(ScopedAdmin):
    """Rows of the user's stores only (Proposal.objects.restrict and friends)."""


@admin.register(Proposal)
class ProposalAdmin(StoreScopedAdmin):
    list_display = ["id", "kind", "store", "status", "summary", "proposed_by", "source", "created_at", "decided_by"]
    list_filter = ["status", "kind", "store", "source"]
    search_fields = ["id", "payload", "proposed_by__username", "idempotency_key"]
    readonly_fields = ["kind", "store", "status", "source", "proposed_by", "created_at", "decided_by",
                       "decided_at", "decision_note", "payload_table", "result_link"]
    exclude = ["payload", "result_type", "result_id", "idempotency_key"]  # the key is the API's, not a manager's
    actions = ["confirm_selected", "reject_selected"]
    list_select_related = ["store", "proposed_by", "decided_by"]

    def get_queryset(self, request):
        pending_first = Case(When(status=Proposal.Status.PENDING, then=Value(0)), default=Value(1), output_field=IntegerField())
        return super().get_queryset(request).annotate(_pending=pending_first).order_by("_pending", "-created_at")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="内容")
    def summary(self, obj):
        return obj.content_text()

    @admin.display(description="提案内容")
    def payload_table(self, obj):
        if obj.kind == Proposal.Kind.RESTOCK:
            rows = format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                                    ((line["sku"], line["product"], f"{line['quantity']}{line['unit']}", line.get("reason", ""))
                                     for line in obj.payload.get("lines", [])))
            return format_html("<table><tr><th>SKU</th><th>商品</th><th>数量</th><th>原因</th></tr>{}</table>", rows)
        p = obj.payload
        return format_html("类别：{}<br>严重程度：{}<br>描述：{}<br>订单：{}<br>会员：{}", p.get("category"), p.get("severity"),
                           p.get("description"), p.get("order", "—"), p.get("member", "—"))

    def change_view(self, request, object_id, form_url="", extra_context=None):
        """Decided on its own page (the desk linked here, and it offered only 关闭): 确认 / 拒绝, the
        quantities first if the manager corrects them, and each line's stock beside them."""
        proposal = self.get_object(request, object_id) if str(object_id).isdigit() else None
        if proposal is not None and request.method == "POST" and request.POST.get("_decide"):
            self._decide_one(request, proposal)
            return HttpResponseRedirect(request.get_full_path())
        if proposal is not None:
            extra_context = {**(extra_context or {}), "decision": self._decision(request, proposal)}
        return super().change_view(request, object_id, form_url, extra_context)

    def _decide_one(self, request, proposal):
        action = request.POST["_decide"]
        try:
            if action in ("amend", "confirm") and proposal.status == Proposal.Status.PENDING \
                    and (payload := payload_from_form(proposal, request.POST)) is not None:
                proposal_amend(proposal=proposal.pk, user=request.user, payload=payload)
            if action == "confirm":
                done = proposal_confirm(proposal=proposal.pk, user=request.user)
                self.message_user(request, f"#{done.pk} 已确认：{done.content_text()}", messages.SUCCESS)
            elif action == "reject":
                proposal_reject(proposal=proposal.pk, user=request.user, reason=request.POST.get("reason", ""))
                self.message_user(request, f"#{proposal.pk} 已拒绝", messages.SUCCESS)
            elif action == "amend":
                what = "数量" if proposal.kind == Proposal.Kind.RESTOCK else "类别和严重程度"
                self.message_user(request, f"#{proposal.pk} 的{what}已保存（已记入审计）", messages.SUCCESS)
        except ValidationError as exc:
            self.message_user(request, "；".join(exc.messages), messages.ERROR)
        except PermissionDenied as exc:
            self.message_user(request, f"没有权限：{exc}", messages.ERROR)
        except (Conflict, NotFound) as exc:
            self.message_user(request, exc.message, messages.ERROR)

    def _decision(self, request, proposal) -> dict:
        allowed, why = can_confirm(request.user, proposal)
        pending = proposal.status == Proposal.Status.PENDING
        lines = proposal.payload.get("lines", []) if proposal.kind == Proposal.Kind.RESTOCK else []
        ticket = proposal.kind == Proposal.Kind.TICKET and allowed and pending
        return {"can_decide": allowed and pending, "why_not": why if pending else "", "reason_max": REJECT_REASON_MAX,
                "lines": lines if allowed and pending else [], "stock": self._stock(request, proposal, lines),
                "ticket": ticket_choices(proposal.payload) if ticket else None}

    @staticmethod
    def _stock(request, proposal, lines) -> list[dict]:
        """Each line's stock at the proposal's store (在库, 安全库存, 近7天日均, 建议补货), read
        through the same tool as chat, with the reader's permissions."""
        from ops.tools import run_tool

        rows = []
        for line in lines:
            try:
                result = run_tool("product_stock", {"product": line["sku"], "store": proposal.store.code}, user=request.user)
            except (ValidationError, PermissionDenied):
                continue
            for r in result.rows[:1]:
                rows.append({"product": line["product"], "asked": f"{line['quantity']}{line['unit']}", "on_hand": f"{r['on_hand']}{r['unit']}",
                             "safety_stock": r["safety_stock"], "velocity": r["velocity_per_day"], "suggested": f"{r['suggested_qty']}{r['unit']}"})
        return rows

    @admin.display(description="确认后生成")
    def result_link(self, obj):
        return str(obj.result) if obj.result else "—"

    @staticmethod
    def _may_decide(user) -> bool:
        return any(user.has_perm(p) for p in CONFIRM_PERMS.values())

    def get_actions(self, request):
        """Head office decides nothing: it was offered 确认/拒绝 in the list, only to be refused."""
        actions = super().get_actions(request)
        if not self._may_decide(request.user):
            for name in ("confirm_selected", "reject_selected"):
                actions.pop(name, None)
        return actions

    def changelist_view(self, request, extra_context=None):
        # A decision posted by someone the list offers none to still goes to the services: it is
        # refused there, and audited, like the same attempt through the API or chat.
        name = request.POST.get("action") if request.method == "POST" else None
        if name in ("confirm_selected", "reject_selected") and not self._may_decide(request.user):
            ids = [i for i in request.POST.getlist(admin.helpers.ACTION_CHECKBOX_NAME) if i.isdigit()]  # 「x」 was a 500
            selected = list(self.get_queryset(request).filter(pk__in=ids))
            if selected:
                self._decide(request, selected, "confirm" if name == "confirm_selected" else "reject", "在后台操作")
            else:
                self.message_user(request, "没有选中可以处理的提案。", messages.WARNING)
            return HttpResponseRedirect(request.get_full_path())
        return super().changelist_view(request, extra_context)

    def _decide(self, request, queryset, action, reason: str = ""):
        outcomes = proposals_decide_many(proposals=list(queryset), user=request.user, action=action,
                                         reason=reason or "在后台批量确认")
        for o in outcomes:
            self.message_user(request, o.message, messages.SUCCESS if o.ok else messages.ERROR)

    @admin.action(description="确认所选提案")
    def confirm_selected(self, request, queryset):
        self._decide(request, queryset, "confirm")

    @admin.action(description="拒绝所选提案（需写明原因）")
    def reject_selected(self, request, queryset):
        """Asks for the reason first, like every other channel (it rejected at once with a fixed
        「在后台批量拒绝」); the services check the reason and each proposal as usual."""
        reason, error = (request.POST.get("reason") or "").strip(), ""
        if request.POST.get("apply"):
            try:
                return self._decide(request, queryset, "reject", reject_reason_clean(reason))
            except ValidationError as exc:
                error = "；".join(exc.messages)
        return TemplateResponse(request, "admin/workflow/reject_reason.html", {
            **self.admin_site.each_context(request), "title": "拒绝所选提案", "proposals": list(queryset.select_related("store")),
            "reason": reason, "error": error, "max_length": REJECT_REASON_MAX, "opts": self.model._meta,
        })


class RestockLineInline(ReadOnlyInline):
    model = RestockLine
    fields = ["product", "quantity", "unit", "reason"]


@admin.register(RestockRequest)
class RestockRequestAdmin(StoreScopedAdmin):
    list_display = ["id", "store", "status", "approved_by", "created_at"]
    list_filter = ["status", "store"]
    readonly_fields = ["proposal", "store", "approved_by", "created_at"]
    inlines = [RestockLineInline]

    def has_add_permission(self, request):
        return False


@admin.register(Ticket)
class TicketAdmin(StoreScopedAdmin):
    # The chat card says 「客诉工单 #19」 (the proposal's number): shown beside the ticket's own id
    # so a manager following up by that number finds it.
    list_display = ["id", "from_proposal", "store", "category", "severity", "status", "created_by", "created_at"]
    list_filter = ["status", "severity", "category", "store"]
    search_fields = ["description", "member_number"]
    readonly_fields = ["proposal", "store", "category", "severity", "description", "order", "member_number", "created_by", "created_at"]

    def has_add_permission(self, request):
        return False

    @admin.display(description="提案编号", ordering="proposal_id")
    def from_proposal(self, obj):
        return f"#{obj.proposal_id}" if obj.proposal_id else "—"

    def get_search_results(self, request, queryset, search_term):
        """「19」 or 「#19」 finds the ticket made from proposal #19 as well."""
        queryset, distinct = super().get_search_results(request, queryset, search_term)
        number = search_term.strip().lstrip("#")
        if number.isdigit() and len(number) < 10:
            queryset |= self.get_queryset(request).filter(proposal_id=int(number))
        return queryset, distinct
