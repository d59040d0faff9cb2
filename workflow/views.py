"""The proposals panel (HTMX): pending proposals for the user's stores, confirm/reject in
place, recent audit entries. The same services as admin, API, chat and MCP."""
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from core.errors import Conflict, NotFound, refusal_of
from core.selectors import audit_entries
from core.throttling import throttle_web

from .chat import proposal_dict
from .models import Proposal
from .payloads import payload_from_form
from .selectors import proposals_visible
from .services import proposal_amend, proposal_confirm, proposal_reject, proposal_withdraw


def _audit(user):
    """The recent audit section, for those who may read the audit log (none for the others)."""
    if not user.has_perm("core.view_auditlog"):
        return None
    return audit_entries(user).order_by("-created_at", "-id")[:20]


@login_required
def proposals(request):
    pending = [proposal_dict(p, request.user) for p in proposals_visible(request.user).filter(status=Proposal.Status.PENDING)[:100]]
    return render(request, "workflow/proposals.html", {"proposals": pending, "audit": _audit(request.user)})


@login_required
def audit(request):
    """The audit log (core.view_auditlog): the full page, or on an HTMX request the list only."""
    try:
        rows = audit_entries(request.user).order_by("-created_at", "-id")
    except PermissionDenied as exc:
        if not request.htmx:
            raise  # the full 403 page (templates/403.html), not a bare fragment
        return render(request, "htmx/error.html", {"error": str(exc)}, status=403)
    # 100 a page, older ones a click away (only the latest 100 were ever shown; ?page=2 was the same list).
    page = Paginator(rows, 100).get_page(request.GET.get("page"))
    context = {"audit": page.object_list, "page": page}
    return render(request, "htmx/audit_list.html" if request.htmx else "workflow/audit.html", context)


def _amended_payload(request, pk: int) -> dict:
    """The card's form over the proposal's own payload (workflow.payloads.payload_from_form): a
    restock's quantities, a ticket's category and severity."""
    current = proposals_visible(request.user).filter(pk=pk).first() or Proposal.objects.filter(pk=pk, proposed_by=request.user).first()
    if current is None:
        raise NotFound(f"没有提案 #{pk}。")
    payload = payload_from_form(current, request.POST)
    if payload is None:
        raise ValidationError({"payload": ["没有要修改的内容：补货改数量，工单改类别或严重程度。"]})
    return payload


@login_required
@require_POST
def decide(request, pk: int, action: str):
    if (wait := throttle_web(request, "decide")) is not None:
        response = render(request, "htmx/error.html", {"error": f"操作太频繁，请 {int(wait) + 1} 秒后再试。"},
                          status=200 if request.htmx else 429)
        response["Retry-After"] = str(int(wait) + 1)
        return response
    # The services decide: 403 without the permission, "not found" outside the user's stores.
    error, status, current = "", 200, None
    try:
        if action == "confirm":
            current = proposal_confirm(proposal=pk, user=request.user)
        elif action == "reject":
            current = proposal_reject(proposal=pk, user=request.user, reason=request.POST.get("reason", ""))
        elif action == "withdraw":
            current = proposal_withdraw(proposal=pk, user=request.user, reason=request.POST.get("reason", ""))
        elif action == "amend":
            current = proposal_amend(proposal=pk, user=request.user, payload=_amended_payload(request, pk))
        else:
            raise NotFound("不支持的操作。")
    except (PermissionDenied, ValidationError, Conflict, NotFound) as exc:
        refusal = refusal_of(exc)
        # Not found and not the user's store read the same.
        error, status = refusal.message if refusal.status != 404 else "没有这个提案，或者它不属于你的门店。", refusal.status
    if current is None and status in (400, 403, 409):
        current = proposals_visible(request.user).filter(pk=pk).first()
    if not request.htmx:
        return redirect("workflow:proposals") if not error else render(request, "htmx/error.html", {"error": error}, status=status)
    if current is None:
        return render(request, "htmx/error.html", {"error": error})  # 200 so htmx swaps the message in
    # The audit list beside the cards exists on /proposals/ only, whose cards ask for it: sent to the
    # chat page too, htmx reported a missing #audit-list target there.
    with_audit = request.POST.get("with_audit") == "1"
    return render(request, "htmx/proposal_decided.html",
                  {"p": proposal_dict(current, request.user), "card_error": error, "audit": _audit(request.user) if with_audit else None,
                   "oob": True, "with_audit": with_audit})
