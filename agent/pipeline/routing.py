"""Node route: the intent (policy, data, both, action, out of scope) of the resolved question;
an undecided follow-up keeps the previous turn's intent."""
from __future__ import annotations

from ops.selectors import find_stores_in_text

from .. import vocabulary as vocab
from ..data_guard import compared_store
from ..router import ACTION, BOTH, DATA, POLICY, Route, Turn, route
from .follow_up import FOLLOW_UP
from .state import AgentState


def route_node(state: AgentState) -> None:
    with state.trace.step("route") as detail:
        turn = Turn(state.question, state.previous.get("proposal_id"), state.user is not None,
                    pending=bool(state.previous.get("pending_action")), steps=len(state.previous.get("steps") or []),
                    ticket=state.previous.get("proposal_kind") == "ticket", answered=bool(state.previous.get("top_document")),
                    after_data=state.previous.get("intent") in (DATA, BOTH) and bool(state.previous.get("tool")))
        decision = route(state.resolved_query, state.llm, state.today, turn)
        offered = bool((state.previous.get("pending_action") or {}).get("offer_lines"))
        if (vocab.SHOULD_RESTOCK.fullmatch(state.question) and state.previous.get("tool") in vocab.STOCK_TOOLS
                and (offered or not turn.pending)):  # 「要补吗」 asks; only 「好」 accepts an offer
            decision = Route(ACTION, "问要不要补：按上一轮查到的库存回答", decision.scores, handler="restock_advice",
                             target={"tool": state.previous["tool"], "params": state.previous.get("params") or {}})
        prev_intent = state.previous.get("intent")
        if not decision.decided and prev_intent in (DATA, BOTH) and (state.resolved_query != state.question or FOLLOW_UP.search(state.question)):
            decision = Route(DATA, f"追问，沿用上一轮的数据意图（{prev_intent}）", decision.scores)
        elif not decision.decided and prev_intent == POLICY and state.resolved_query != state.question:
            decision = Route(POLICY, "追问，沿用上一轮的规则意图", decision.scores)
        elif not decision.decided and prev_intent in (DATA, BOTH) and compared_store(state.question):
            decision = Route(DATA, "追问，和另一家门店相比", decision.scores)  # 「上周卖了多少」 → 「跟福田比」
        elif not decision.decided and vocab.STORES_COMPARED.search(state.question) and len(find_stores_in_text(state.question)) >= 2:
            decision = Route(DATA, "两家以上门店相比", decision.scores)  # 「天河跟福田比」 names no figure
        state.route = decision
        detail.update(decision.as_dict())
        if state.resolved_query != state.question:
            detail["resolved_query"] = state.resolved_query
