"""Read-side helpers for the workflow domain."""
from __future__ import annotations

from collections import defaultdict

from ops.models import Store

from .models import Proposal, RestockLine, RestockRequest


def open_restock_quantities(store: Store, skus: list[str]) -> dict[str, tuple[int, list[int]]]:
    """Per product, what confirmed restock requests of `store` still have on the way (approved or
    ordered, not yet received), in the product's sales unit, with the requests' numbers: stock
    that is coming is not asked for again."""
    out: dict[str, list] = defaultdict(lambda: [0, []])
    lines = (RestockLine.objects.filter(request__store=store, product__sku__in=skus,
                                        request__status__in=[RestockRequest.Status.APPROVED, RestockRequest.Status.ORDERED])
             .select_related("product", "request").order_by("request_id"))
    for line in lines:
        qty = line.product.in_sales_units(line.quantity, line.unit)
        entry = out[line.product.sku]
        entry[0] += qty
        if line.request.proposal_id not in entry[1]:
            entry[1].append(line.request.proposal_id)
    return {sku: (qty, ids) for sku, (qty, ids) in out.items()}


def proposals_status_text(user, *, awaiting_me: bool = False, limit: int = 5) -> str:
    """「我提的补货申请批了没」: the asker's latest proposals with where each stands; 「有哪些待我确认的
    补货申请」 (awaiting_me): the pending ones the asker may decide. Within the asker's stores."""
    from core.localtime import local_time

    visible = Proposal.objects.restrict(user, "view").select_related("store", "decided_by").order_by("-created_at")
    if awaiting_me:  # each kind has its confirm permission: workflow.confirm_restock, workflow.confirm_ticket
        kinds = [kind for kind in Proposal.Kind.values if user.has_perm(f"workflow.confirm_{kind}")]
        waiting = visible.filter(status=Proposal.Status.PENDING, kind__in=kinds)
        items = list(waiting[:limit])
        if not items:
            return "你能确认的门店里，目前没有待确认的提案（「操作提案」页面：/proposals/）。"
        total = waiting.count() if len(items) == limit else len(items)
        head = f"待你确认的提案共 {total} 个" + (f"，最近 {limit} 个：" if total > limit else "：")
    else:
        items = list(visible.filter(proposed_by=user)[:limit])
        if not items:
            return "你还没有提交过提案。要补货可以说「帮我补两箱青岛」。"
        head = f"你最近提交的 {len(items)} 个提案："

    def stands(p: Proposal) -> str:
        when = local_time(p.decided_at, p.store).strftime("%m-%d %H:%M") if p.decided_at else ""
        if p.status == Proposal.Status.PENDING:
            return "待确认"
        if p.status == Proposal.Status.REJECTED:
            return f"已拒绝（{p.decided_by.username if p.decided_by else ''}，{when}）：{p.decision_note}"
        return f"{p.get_status_display()}（{p.decided_by.username if p.decided_by else '系统'}，{when}）"

    lines = [f"- #{p.pk} {p.get_kind_display()} · {p.store.name} · {p.content_text()} · {stands(p)}" for p in items]
    decides = any(user.has_perm(f"workflow.confirm_{p.kind}") for p in items)  # staff confirm tickets, not restocks
    where = "详情和确认、拒绝都在「操作提案」页面（/proposals/）。" if decides else "详情在「操作提案」页面（/proposals/）。"
    return "\n".join([head, *lines, where])
