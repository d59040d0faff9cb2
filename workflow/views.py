"""The proposals panel (HTMX): pending proposals for the user's stores, confirm/reject in
place, recent audit entries. The same services as admin, API, chat and MCP."""
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from ops.errors import Conflict, NotFound
from ops.selectors import stores_for_user
from storemind.throttling import throttle_web

from .chat import proposal_dict
from .models import AuditLog, Proposal
from .services import proposal_confirm, proposal_reject, proposals_visible


def _audit(user):
    qs = AuditLog.objects.select_related("store").order_by("-created_at", "-id")
    if not user.is_superuser:
        qs = qs.filter(store__in=stores_for_user(user))
    return qs[:20]


@login_required
def proposals(request):
    pending = [proposal_dict(p, request.user) for p in proposals_visible(request.user).filter(status=Proposal.Status.PENDING)[:100]]
    return render(request, "workflow/proposals.html", {"proposals": pending, "audit": _audit(request.user)})


@login_required
@require_POST
def decide(request, pk: int, action: str):
    if (wait := throttle_web(request, "decide")) is not None:
        response = render(request, "htmx/error.html", {"error": f"操作太频繁，请 {int(wait) + 1} 秒后再试。"},
                          status=200 if request.htmx else 429)
        response["Retry-After"] = str(int(wait) + 1)
        return response
    proposal = Proposal.objects.select_related("store", "proposed_by").filter(pk=pk).first()
    if proposal is None or proposal not in proposals_visible(request.user):
        error, current = "没有这个提案，或者它不属于你的门店。", None
    else:
        error = ""
        try:
            if action == "confirm":
                current = proposal_confirm(proposal=proposal, user=request.user)
            elif action == "reject":
                current = proposal_reject(proposal=proposal, user=request.user, reason=request.POST.get("reason", ""))
            else:
                raise NotFound("不支持的操作。")
        except (PermissionDenied, ValidationError) as exc:
            error = str(exc) if isinstance(exc, PermissionDenied) else "；".join(m for ms in exc.message_dict.values() for m in ms)
            current = proposal
        except (Conflict, NotFound) as exc:
            error, current = exc.message, proposal
        current.refresh_from_db()
    if not request.htmx:
        return redirect("workflow:proposals")
    if current is None:
        return render(request, "htmx/error.html", {"error": error})
    return render(request, "htmx/proposal_decided.html",
                  {"p": proposal_dict(current, request.user), "card_error": error, "audit": _audit(request.user), "oob": True})
