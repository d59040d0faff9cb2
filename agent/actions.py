"""Agent → workflow hand-over: requests become pending proposals; nothing is written to the
business records until a person with the right role confirms. A request may take several
turns: the pending action and its slots travel in the thread's context (agent/slots.py)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ops.selectors import UnknownProduct, resolve_product

from . import slots
from . import vocabulary as vocab
from .router import ACTION, BOTH, DATA, OUT_OF_SCOPE, POLICY

SLOT_NAMES = {"store": "门店", "product": "商品", "qty": "数量", "description": "投诉经过"}


@dataclass
class ActionOutcome:
    message: str
    proposal: dict | None = None
    tool_result: object | None = None
    detail: dict = field(default_factory=dict)
    pending: dict | None = None  # the action still waiting for slots, kept for the next turn


def _suggest(state):
    """Suggested quantities from the low-stock tool, for a request that names no quantity."""
    def suggest(store_name: str) -> dict[str, int]:
        from ops.tools import run_tool

        rows = run_tool("low_stock", {"store": store_name}, user=state.user, today=state.today).rows
        return {r["sku"]: r["suggested_qty"] for r in rows if r["suggested_qty"] > 0}
    return suggest


def _outcome(step: slots.Step, state, **detail) -> ActionOutcome:
    from workflow.chat import proposal_dict

    pending = step.pending.as_dict() if step.pending else None
    proposal = proposal_dict(step.proposal, state.user) if step.proposal is not None else None
    return ActionOutcome(step.message, proposal, None, {**detail, **step.detail, "pending": pending}, pending)


def propose_from_question(state) -> ActionOutcome:
    """A new request: fill what its first sentence says, then ask for the rest or propose."""
    pending, parsed = slots.start(state.question, user=state.user, history=state.history)
    if parsed.store_problem:
        return ActionOutcome(parsed.store_problem, detail={"kind": pending.kind, "pending": pending.as_dict()}, pending=pending.as_dict())
    changed = slots.merge(pending, parsed, "")
    if pending.kind == slots.TICKET and len(slots.own_complaint(state.question)) < 5 and (made := _ticket_just_made(state)):
        # 「建个工单」 again right after one was proposed filed a second ticket for the same complaint.
        from workflow.chat import proposal_dict

        return ActionOutcome(f"刚才已生成客诉工单提案 #{made.pk}，没有重复生成。要补充情况直接说，比如「桌号A5 他吃了一口」；"
                             "要登记另一件事，把经过一起说出来。", proposal_dict(made, state.user), None,
                             {"kind": pending.kind, "already_made": made.pk})
    if pending.kind == slots.RESTOCK and not pending.skus and not pending.not_a_product:
        # 「芝华士快没了」 → 「帮我补一箱」: the product the previous answer was about.
        product = (state.previous.get("params") or {}).get("product") if state.previous.get("tool") in vocab.PRODUCT_TOOLS else None
        if product:
            try:
                pending.skus = [resolve_product(product).sku]
                changed.append("product")
            except UnknownProduct:  # renamed since: ask, as for any order without a product
                pass
        if not pending.skus and not parsed.qty and (waiting := _restock_just_shown(state)) is not None:
            return _already_waiting(waiting, pending, state)
    step = slots.advance(pending, user=state.user, today=state.today, suggest=_suggest(state))
    return _outcome(step, state, kind=pending.kind, filled=changed)


def _restock_just_shown(state):
    """The restock proposal the previous answer made or pointed at, while it still waits for the manager."""
    from workflow.models import Proposal

    return _proposal_just_shown(state, Proposal.Kind.RESTOCK)


def _ticket_just_made(state):
    from workflow.models import Proposal

    return _proposal_just_shown(state, Proposal.Kind.TICKET)


def _proposal_just_shown(state, kind):
    from workflow.models import Proposal
    from workflow.selectors import proposal_for_status

    proposal_id = state.previous.get("proposal_id")
    if not str(proposal_id or "").isdigit():
        return None
    proposal = proposal_for_status(state.user, int(proposal_id))
    if proposal is None or proposal.kind != kind or proposal.status != Proposal.Status.PENDING:
        return None
    return proposal


def _already_waiting(proposal, pending, state) -> ActionOutcome:
    """「帮我补吧」 right after an answer that showed a waiting restock: that one, not a new one (the
    conversation still takes a product and a quantity for something else)."""
    from workflow.chat import proposal_dict

    message = (f"这些商品已在待确认的补货提案 #{proposal.pk} 里，店长确认之前不会下单，没有重复生成。"
               "要补别的商品，请说商品名和数量，例如「青岛啤酒，补20箱」。")
    return ActionOutcome(message, proposal_dict(proposal, state.user), None,
                         {"kind": pending.kind, "already_waiting": proposal.pk, "pending": pending.as_dict()}, pending.as_dict())


def continue_pending(state) -> tuple[ActionOutcome | None, str]:
    """A follow-up to a pending action: fill or change a slot, or cancel. Returns (None, why)
    when the message is about something else: the pending action then expires."""
    pending = slots.PendingAction.from_dict(state.previous.get("pending_action"))
    if pending is None:
        return None, "没有待办动作"
    parsed = slots.parse(state.question)
    if parsed.cancel:
        return _outcome(slots.cancelled(pending), state, kind=pending.kind), "取消"
    if pending.offer_lines:  # 「要我生成补货提案吗？」: a yes, or changes to it, propose; anything else is a new question
        return _answer_to_offer(pending, parsed, state)
    route = state.route
    if pending.kind == slots.RESTOCK and "product" in pending.missing() and not parsed.products and not parsed.not_a_product:
        # 「喜力啊」 answering 「要补哪个商品？」 was declined as off-topic: a name alone answers the question asked.
        parsed.not_a_product = slots.bare_product_answer(state.question)
    if route.intent == ACTION and not (pending.kind == slots.RESTOCK and vocab.is_bare_restock_order(state.question)):
        # 「补两箱」 alone is an order too, but here it fills the restock being asked for.
        return None, "新的请求取代了它"
    if route.decided and route.intent in (DATA, BOTH, POLICY, OUT_OF_SCOPE) and not (parsed.qty or parsed.yes or parsed.not_a_product):
        return None, f"与它无关的问题（{route.intent}），待办动作过期"
    if parsed.store_problem:
        return ActionOutcome(parsed.store_problem, detail={"kind": pending.kind}, pending=pending.as_dict()), "门店不认识"
    changed = slots.merge(pending, parsed, state.question)
    if not changed and pending.kind == slots.RESTOCK and parsed.not_a_product:
        step = slots.advance(pending, user=state.user, today=state.today)  # says it is not sold, and what is
        return _outcome(step, state, kind=pending.kind, filled=[]), f"「{parsed.not_a_product}」不是在售商品"
    if not changed:
        return None, "没有补上任何一项，待办动作过期"
    # No suggested quantity here: in a conversation we ask, so the person says how much.
    step = slots.advance(pending, user=state.user, today=state.today)
    return _outcome(step, state, kind=pending.kind, filled=changed), "补上了" + "、".join(SLOT_NAMES[c] for c in changed)


def _answer_to_offer(pending, parsed, state) -> tuple[ActionOutcome | None, str]:
    """「好」 proposes the offered lines; 「金汤力补20杯就够了 红牌先不要」 proposes them as changed
    (it proposed the offer unchanged); what cannot be read is asked back with the offer kept."""
    from workflow.chat import proposal_dict, restock_offer_accept

    changes = slots.offer_changes(state.question, pending.offer_lines)
    if changes.unclear:
        return ActionOutcome(changes.unclear + "（或回复「好」按建议量生成，「算了」不补。）", detail={"kind": pending.kind, "unclear": changes.unclear},
                             pending=pending.as_dict()), "补货建议的改动没看懂"
    if not changes.changed and not (parsed.yes or vocab.ACCEPT_RESTOCK_OFFER.fullmatch(state.question)):
        return None, "没有接受补货建议，建议过期"
    if not changes.lines:
        return ActionOutcome("好的，建议里的商品都不补了，没有生成补货提案。", detail={"kind": pending.kind, "changed": changes.changed}), "都不补了"
    proposal, message = restock_offer_accept(user=state.user, store=pending.store, lines=changes.lines, today=state.today,
                                             changed=changes.changed)
    return ActionOutcome(message, proposal_dict(proposal, state.user) if proposal else None,
                         detail={"kind": pending.kind, "accepted_offer": True, "changed": changes.changed,
                                 "proposal_id": proposal.pk if proposal else None}), "接受补货建议"


def offer_restock(state):
    """(a proposal already waiting, a note, the pending offer for the next turn or None)."""
    from workflow.chat import restock_offer

    waiting, note, offer = restock_offer(user=state.user, rows=state.tool_result.rows)
    pending = slots.PendingAction(kind=slots.RESTOCK, store=offer["store"], offer_lines=offer["lines"]).as_dict() if offer else None
    return waiting, note, pending
