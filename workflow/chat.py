"""Chat-side helpers for proposals: the card's dict and the low-stock restock offer. A chat
request itself is handled over several turns by agent/slots.py. Nothing here writes
business records: proposals wait for a person."""
from __future__ import annotations

import hashlib
import json

from django.core.exceptions import PermissionDenied, ValidationError

from core.errors import Conflict
from core.localtime import local_time
from ops.models import Product, Store

from .models import Proposal
from .selectors import open_restock_quantities
from .services import can_confirm, proposal_create


def propose_from_chat(*, user, kind: str, store, payload: dict, key: str) -> tuple[Proposal, bool]:
    """proposal_create for a chat turn, whose idempotency key is made from the turn's words and
    day. The same turn retried gets its proposal back; but once that proposal was decided or
    expired, or the same words now propose something else (stock moved since), the turn is a
    new proposal. Asked again after a rejection, the rejected one came back presented as
    「待确认」, and different quantities raised Conflict (a 500 in the chat)."""
    for n in range(20):
        attempt = key if n == 0 else f"{key}:{n}"
        existing = Proposal.objects.filter(proposed_by=user, idempotency_key=attempt).only("status").first()
        if existing is not None and existing.status != Proposal.Status.PENDING:
            continue
        try:
            return proposal_create(user=user, kind=kind, store=store, payload=payload, source=Proposal.Source.CHAT,
                                   idempotency_key=attempt)
        except Conflict:
            continue
    raise Conflict("这个请求已经重复太多次，请稍后再试。")


def proposal_dict(p: Proposal, user) -> dict:
    allowed, why = can_confirm(user, p) if user is not None else (False, "")
    return {
        "id": p.pk, "kind": p.kind, "kind_display": p.get_kind_display(), "store": p.store.name, "status": p.status,
        "status_display": p.get_status_display(), "payload": p.payload, "source": p.source,
        "proposed_by": p.proposed_by.username, "created_at": local_time(p.created_at, p.store).isoformat(),
        "can_confirm": allowed and p.status == Proposal.Status.PENDING, "why_not": "" if allowed else why,
        # The person who proposed it may take it back or change it while it waits; a decider may change it too.
        "can_withdraw": p.status == Proposal.Status.PENDING and user is not None and p.proposed_by_id == user.pk,
        "can_amend": p.status == Proposal.Status.PENDING and user is not None and (allowed or p.proposed_by_id == user.pk),
        "decided_by": p.decided_by.username if p.decided_by_id else "", "decision_note": p.decision_note,
    }


def pending_restock_for(store: Store, skus: list[str], *, any_of: bool = False) -> Proposal | None:
    """The newest pending restock proposal of `store` for exactly these products (or, with
    `any_of`, for any of them), if any."""
    wanted = sorted(skus)
    for p in Proposal.objects.filter(kind=Proposal.Kind.RESTOCK, store=store, status=Proposal.Status.PENDING) \
            .select_related("store", "proposed_by").order_by("-created_at")[:20]:
        has = sorted(line.get("sku") for line in p.payload.get("lines", []))
        if has == wanted or (any_of and set(has) & set(wanted)):
            return p
    return None


def _pending_restocks_by_sku(store: Store) -> dict[str, Proposal]:
    """The store's pending restock proposals, read once (newest first), by the products on them."""
    by_sku: dict[str, Proposal] = {}
    for p in Proposal.objects.filter(kind=Proposal.Kind.RESTOCK, store=store, status=Proposal.Status.PENDING) \
            .select_related("store", "proposed_by").order_by("-created_at")[:20]:
        for line in p.payload.get("lines", []):
            by_sku.setdefault(line.get("sku"), p)
    return by_sku


def _already_asked(coming: dict[tuple[int, ...], list[str]], waiting: dict[int, tuple[Proposal, list[str]]]) -> list[str]:
    """What is not offered again, each product named: restocks confirmed and on their way (with
    what is coming), proposals waiting for the manager. 「科罗娜 … 建议补 116瓶」 above 「其余商品
    已有确认过、还没到货的补货」 read as if the suggestion were still to be ordered."""
    notes = []
    for pks, products in sorted(coming.items()):
        notes.append(f"{'、'.join(products)}已在确认过、还没到货的补货里（提案 {'、'.join(f'#{pk}' for pk in pks)}），"
                     "已够上面的建议量，到货前不再重复申请。")
    for proposal, products in waiting.values():
        notes.append(f"{'、'.join(products)}已在待确认的补货提案 #{proposal.pk}（{proposal.proposed_by.username} 提交）里，没有重复生成。")
    return notes


def restock_offer(*, user, rows: list[dict]):
    """After a stock answer for one store (its low stock, or one product below its safety level):
    an offer of a restock proposal with the suggested quantities (safety stock + 7 days of sales −
    on hand) for what is neither on its way nor already waiting for the manager. Nothing is
    proposed until the person says yes (「现在有什么酒快没货了」 created proposal #3 unasked):
    returns (the waiting proposal or None, a note for the answer, the offer {store, lines} or None).
    `rows`: the stock tool's rows, as the person was shown them."""
    stores = {r["store"] for r in rows}
    if len(stores) != 1:
        return None, "", None
    store = Store.objects.for_user(user, "workflow.add_proposal").filter(name__in=stores).first()
    if store is None:
        return None, "", None
    wanted = [r for r in rows if r["suggested_qty"] > 0 and r["on_hand"] < r["safety_stock"]]
    # Stock already on its way (a confirmed restock not yet received) is not asked for again:
    # after a manager confirmed one, the next 「什么快没货了」 proposed the same lines anew.
    coming = open_restock_quantities(store, [r["sku"] for r in wanted])
    lines, covered, waiting = [], {}, {}
    pending_by_sku = _pending_restocks_by_sku(store)
    for r in wanted:
        on_way, requests = coming.get(r["sku"], (0, []))
        qty = r["suggested_qty"] - on_way
        if qty <= 0:
            covered.setdefault(tuple(requests), []).append(f"{r['product']}（在途 {on_way}{r['unit']}）")
            continue
        # A product already on a proposal waiting for the manager is not proposed twice
        # (「科罗娜快没货了吗」 after 「什么快没货了」 proposed 百威、科罗娜 …).
        if (pending := pending_by_sku.get(r["sku"])) is not None:
            waiting.setdefault(pending.pk, (pending, []))[1].append(r["product"])
            continue
        reason = f"在库 {r['on_hand']} < 安全库存 {r['safety_stock']}，近7天日均 {r['velocity_per_day']}"
        lines.append({"sku": r["sku"], "quantity": qty, "unit": r["unit"],
                      "reason": reason + (f"，已扣除在途 {on_way}{r['unit']}" if on_way else "")})
    notes = _already_asked(covered, waiting)
    if not lines:
        first = next((p for p, _ in waiting.values()), None)
        return (proposal_dict(first, user) if first else None), "\n".join(notes), None
    names = {r["sku"]: r["product"] for r in wanted}
    said = "、".join(f"{names[line['sku']]} {line['quantity']}{line['unit']}" for line in lines)
    question = (f"要我为{store.name}生成补货提案吗？建议补：{said}（安全库存 + 近7天销量 − 在库）。"
                f"回复「好」生成，店长确认之前不会下单。")
    return None, "\n".join([*notes, question]), {"store": store.name, "lines": lines}


def restock_offer_accept(*, user, store: str, lines: list[dict], today, changed: list[str] | None = None) -> tuple[Proposal | None, str]:
    """The person said yes to an offered restock: propose the offered lines, as they changed them
    (`changed`: what they changed, as the reply says it); idempotent: saying yes twice to the same
    offer gives one proposal, unless one is already waiting."""
    store_obj = Store.objects.get(name=store)
    waiting = pending_restock_for(store_obj, [line["sku"] for line in lines], any_of=True)
    if waiting is not None:
        return waiting, f"{store_obj.name}已有待确认的补货提案 #{waiting.pk}（{waiting.proposed_by.username} 提交），没有重复生成。"
    digest = hashlib.sha256(json.dumps([store, lines, str(today)], sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]
    try:
        proposal, _ = propose_from_chat(user=user, kind=Proposal.Kind.RESTOCK, store=store_obj, payload={"lines": lines},
                                        key=f"chat:{user.pk}:offer:{digest}")
    except (PermissionDenied, ValidationError) as exc:
        messages = exc.messages if isinstance(exc, ValidationError) else [str(exc)]
        return None, "不能提交这个提案：" + "；".join(messages)
    if changed:
        names = dict(Product.objects.filter(sku__in=[line["sku"] for line in lines]).values_list("sku", "name"))
        said = "、".join(f"{names.get(line['sku'], line['sku'])} {line['quantity']}{line['unit']}" for line in lines)
        return proposal, (f"已按你的改动（{'，'.join(changed)}）为{proposal.store.name}生成补货提案 #{proposal.pk}：{said}"
                          "（待店长确认，确认前不会下单）。")
    return proposal, f"已按建议量为{proposal.store.name}生成补货提案 #{proposal.pk}（待店长确认，确认前不会下单）。"
