"""Read-side helpers for the workflow domain."""
from __future__ import annotations

from collections import defaultdict

from django.db.models import Q

from ops.models import Store

from .models import CONFIRM_PERMS, Proposal, RestockLine, RestockRequest


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


def proposals_for_status(user, *, awaiting_me: bool = False, kind: str | None = None, limit: int = 5) -> tuple[list[Proposal], int]:
    """「我提的补货申请批了没」: the asker's latest proposals; 「有哪些待我确认的补货申请」 (awaiting_me):
    the pending ones the asker may decide — per kind, in the stores where they hold its confirm
    permission (not merely where they may view). Returns (at most `limit` of them, how many in all)."""
    visible = Proposal.objects.restrict(user, "view").select_related("store", "decided_by").order_by("-created_at")
    if awaiting_me:
        decidable = Q()
        for each, perm in CONFIRM_PERMS.items():
            decidable |= Q(pk__in=Proposal.objects.restrict(user, perm).filter(kind=each).values("pk"))
        chosen = visible.filter(decidable, status=Proposal.Status.PENDING)
    else:
        chosen = visible.filter(proposed_by=user)
    if kind:
        chosen = chosen.filter(kind=kind)
    items = list(chosen[:limit])
    return items, (chosen.count() if len(items) == limit else len(items))


def proposal_for_status(user, pk: int) -> Proposal | None:
    """One proposal by number for 「提案6是什么」, if the asker may see it (another store's reads
    like a missing one)."""
    return Proposal.objects.restrict(user, "view").select_related("store", "decided_by", "proposed_by").filter(pk=pk).first()


def deciders_for(proposal: Proposal) -> list:
    """The active people who may confirm or reject `proposal`: its kind's permission (from a role
    or given directly), held for its store. Whom a messaging channel tells it is waiting."""
    from django.contrib.auth import get_user_model

    from core.scoping import ALL, store_ids_for

    perm = CONFIRM_PERMS[proposal.kind]
    app, codename = perm.split(".")
    holders = get_user_model().objects.filter(is_active=True).filter(
        Q(groups__permissions__codename=codename, groups__permissions__content_type__app_label=app)
        | Q(user_permissions__codename=codename, user_permissions__content_type__app_label=app)).distinct()
    out = []
    for user in holders:
        ids = store_ids_for(user, perm)
        if ids is ALL or proposal.store_id in ids:
            out.append(user)
    return out


def proposals_visible(user, *, status: str | None = None, kind: str | None = None, store=None):
    """The proposals `user` may see, newest first as the model orders them, narrowed to a
    status, kind or store (a Store the caller resolved within the user's stores)."""
    rows = Proposal.objects.restrict(user, "view").select_related("store", "proposed_by", "decided_by")
    filters = {k: v for k, v in {"status": status, "kind": kind, "store": store}.items() if v is not None}
    return rows.filter(**filters) if filters else rows
