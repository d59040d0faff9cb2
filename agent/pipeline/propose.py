"""Nodes propose, pending_action and offer_restock: writes are never performed here; the
workflow app turns a request into a proposal that a person confirms."""
from __future__ import annotations

from .. import compose
from .. import vocabulary as vocab
from ..router import ACTION, Route
from .state import AgentState


def action_node(state: AgentState) -> None:
    """Writes are never performed here: the workflow app turns the request into a proposal."""
    with state.trace.step("propose") as detail:
        from ..actions import propose_from_question

        outcome = propose_from_question(state)
        state.proposal, state.answer, state.pending_action = outcome.proposal, outcome.message, outcome.pending
        if outcome.tool_result is not None:
            state.tool_result = outcome.tool_result
            state.sources = compose.number_sources([], outcome.tool_result)
        detail.update(outcome.detail)


def pending_action_node(state: AgentState) -> bool:
    """A pending action from the previous turn: this message may fill a slot, change one or
    cancel; anything else lets it expire. True when this turn was about the action."""
    with state.trace.step("pending_action") as detail:
        from ..actions import continue_pending

        outcome, why = continue_pending(state)
        detail["outcome"] = why
        if outcome is None:
            detail["expired"] = True
            return False
        kind = "补货申请" if outcome.detail.get("kind") == "restock" else "客诉工单"
        state.route = Route(ACTION, f"接着上一轮的{kind}：{why}", state.route.scores if state.route else {})
        state.proposal, state.answer, state.pending_action = outcome.proposal, outcome.message, outcome.pending
        detail.update(outcome.detail)
        return True


def maybe_offer_restock(state: AgentState) -> None:
    """A stock answer with items below their safety stock offers a restock proposal (quantities
    from safety stock and velocity): proposed when the person says yes, in the next turn."""
    if state.tool_result is None or state.tool_result.tool not in vocab.STOCK_TOOLS or not state.tool_result.rows:
        return
    from ..actions import offer_restock

    with state.trace.step("offer_restock") as detail:
        state.proposal, note, offer = offer_restock(state)
        detail["proposal"], detail["offer"] = state.proposal, offer
        if offer:
            state.pending_action = offer
        if note:
            state.answer = state.answer.rstrip() + "\n" + note
