"""The agent's graph: `run()` below and this diagram name the same nodes, in the same order
(a test holds them equal). One module per node; the state is passed explicitly; each node records
its step in the trace.

    resolve_follow_up                                    follow_up.py
    route_node                                           routing.py
    answer_request: decide_in_chat │ withdraw_in_chat │ ticket_change │ restock_advice │ point_to_page │ proposal_status │ nothing_pending │ small_talk │ repeat_step │ ticket_details → done   requests.py
    pending_action_node → done (a slot filled)           propose.py
    ├ out of scope → refuse → done                       refusals.py
    ├ action → action_node → done                        propose.py
    guards_node: retrieve_guard ∥ data_guard             guards.py
    ├ data → compose_answer → maybe_offer_restock → done answer.py, propose.py
    agent_loop: judge → rewrite → retrieve_again (≤ SM_AGENT_MAX_ATTEMPTS)   loop.py, judge.py
    ├ not enough → far_from_domain → refuse → done       refusals.py
    compose_answer → maybe_offer_restock → done          answer.py, propose.py

This package never writes SQL and never performs a business write: actions become proposals that
a person confirms (workflow app)."""
from __future__ import annotations

from datetime import date

from core.scoping import warm
from knowledge.selectors import IndexNotReady, index_read_once
from ops.selectors import store_list_read_once
from ops.tools import local_today

from .. import compose
from .. import vocabulary as vocab
from ..llm import llm_budget
from ..router import ACTION, BOTH, DATA, OUT_OF_SCOPE, POLICY, Route
from ..suggestions import follow_ups
from .answer import compose_answer
from .follow_up import resolve_follow_up
from .guards import guards_node
from .loop import agent_loop
from .propose import action_node, maybe_offer_restock, pending_action_node
from .refusals import far_from_domain, refuse
from .requests import answer_request
from .routing import route_node
from .state import AgentResult, AgentState, start


def run(state: AgentState) -> AgentState:
    resolve_follow_up(state)
    route_node(state)
    if answer_request(state):  # 「确认提案7」「查看审计记录」「我的补货申请批了吗」
        return state
    if state.previous.get("pending_action") and pending_action_node(state):
        return state
    if state.route.intent == OUT_OF_SCOPE:
        refuse(state, "router", state.route.reason)
        if state.route.decline:  # declined in one line, not answered from the nearest SOP
            state.answer = state.route.decline
        return state
    if state.route.intent == ACTION:
        action_node(state)
        return state
    try:
        first = guards_node(state)
    except IndexNotReady as exc:
        state.answer = str(exc)
        state.refused = True
        return state
    if state.route.intent == DATA:
        compose_answer(state)
        maybe_offer_restock(state)
        return state
    state.first = first
    agent_loop(state, first)
    if not state.chosen.enough and state.route.intent == POLICY:
        far = far_from_domain(state)
        if far:
            state.route = Route(OUT_OF_SCOPE, f"与门店制度无关：{state.route.reason}", state.route.scores, state.route.layer,
                                decline=vocab.DECLINE["与门店无关"])
        refuse(state, "uncovered" if state.chosen.layer == "uncovered" else "answerability", state.chosen.reason)
        if far:  # declined in one line like the router's out-of-scope: no "nearest SOP" for the weather
            state.answer = state.route.decline
        return state
    compose_answer(state)
    maybe_offer_restock(state)
    return state


def context_for_next_turn(state: AgentState) -> dict:
    ctx = {"query": state.resolved_query, "intent": state.route.intent if state.route else ""}
    # What the next 「那上个月呢」 builds on: this turn's plan when it ran or asked for what it lacks,
    # not one its tool refused (「那福田店呢」 outside the asker's stores was carried into every later turn).
    if state.plan and state.plan.tool and (state.tool_result is not None or state.plan.clarify):
        ctx["tool"], ctx["params"] = state.plan.tool, state.plan.params
    elif state.plan and state.plan.tool and "store" in state.plan.refused and state.plan.params.get("store"):
        # Refused for its store (「福田店上周卖了多少」 by a 天河 manager): the question stands without
        # that store, so 「那我们店呢」 asks it of the asker's own (it was asked back 「想查哪项经营数据？」).
        ctx["tool"], ctx["params"] = state.plan.tool, {k: v for k, v in state.plan.params.items() if k != "store"}
    elif state.previous.get("tool") and state.route and state.route.intent in (DATA, BOTH):
        ctx["tool"], ctx["params"] = state.previous["tool"], state.previous.get("params")
    elif state.previous.get("tool") and not state.previous.get("tool_kept"):
        # One turn about something else between two data questions (「上个月卖了多少」, a question the
        # rules answered, then 「按销售额呢」): the figures' period and stores stay for one turn. The
        # follow-ups after it were each asked 「请问要查哪段时间？」.
        ctx["tool"], ctx["params"], ctx["tool_kept"] = state.previous["tool"], state.previous.get("params"), True
    if state.pending_action:
        ctx["pending_action"] = state.pending_action
    if state.proposal and state.proposal.get("id"):
        ctx["proposal_id"] = state.proposal["id"]
        ctx["proposal_kind"] = state.proposal.get("kind", "")
    elif state.decided_on:  # 「确认提案」 then 「批了吧」: still that proposal
        ctx["proposal_id"] = state.decided_on
        if state.route and state.route.handler in ("ticket_details", "ticket_change"):  # more details may follow
            ctx["proposal_kind"] = "ticket"
    if state.chosen and state.chosen.hits:
        ctx["top_document"] = state.chosen.hits[0].document
        ctx["top_section"] = state.chosen.hits[0].section_path
    if state.route and state.route.handler == "repeat_step":  # 「第二步是啥」 then 「那第三步呢」: the same list
        ctx.update({k: state.previous[k] for k in ("steps", "step_sources", "top_document", "top_section") if k in state.previous})
    elif not state.refused and (steps := numbered_steps(state.answer)):
        cited = {r for step in steps for r in step["refs"]}
        ctx["steps"], ctx["step_sources"] = steps, [c for c in state.sources.citations if c["ref"] in cited]
    return ctx


def numbered_steps(answer: str) -> list[dict]:
    """The first numbered list of an answer (「1. 先向客人道歉…[1]」), each line with the source
    markers it carries, for a later 「第二步是啥」 (a second list starting again at 1 is not read)."""
    steps: list[dict] = []
    for raw in (answer or "").splitlines():
        m = vocab.NUMBERED_LINE.fullmatch(raw)
        if m is None:
            continue
        if steps and int(m.group("n")) <= steps[-1]["n"]:
            break
        steps.append({"n": int(m.group("n")), "line": m.group("line").strip(),
                      "refs": list(dict.fromkeys(m_.group(1) for m_ in compose.DOC_REF.finditer(m.group("line"))))})
    return steps


def answer_question(question: str, *, user, previous: dict | None = None, history: list[tuple[str, str]] | None = None,
                    today: date | None = None, max_attempts: int | None = None, on_step=None,
                    on_delta=None) -> tuple[AgentResult, AgentState]:
    """Run the whole pipeline for one question (no persistence: see agent.services)."""
    warm(user)  # permissions and stores read here: the guard threads' connections may not see the user
    # One deadline for every LLM call; the store list and the index metadata read once per question.
    with llm_budget(), store_list_read_once(), index_read_once():
        state = start(question, user=user, today=today or local_today(), previous=previous, history=history,
                      max_attempts=max_attempts, on_step=on_step, on_delta=on_delta)
        run(state)
    intent = state.route.intent if state.route else POLICY
    context = context_for_next_turn(state)
    context["suggestions"] = follow_ups(
        intent=intent, tool=state.plan.tool if state.plan and state.tool_result is not None else None,
        params=state.tool_result.params if state.tool_result is not None else None, citations=state.sources.citations,
        refused=state.refused or bool(state.pending_action), question=question)
    result = AgentResult(
        answer=state.answer, intent=intent, route_reason=state.route.reason if state.route else "",
        refused=state.refused, citations=state.sources.citations, data=state.sources.data, proposal=state.proposal,
        trace=state.trace.steps, context=context, refusal_layer=state.refusal_layer, refusal_reason=state.refusal_reason,
        score=best_score(state), hedged=state.hedged,
        uncovered_reason=state.chosen.reason if not state.refused and state.chosen is not None and state.chosen.layer == "uncovered" else "",
    )
    return result, state


def best_score(state: AgentState) -> float | None:
    """The best answerability score of the question's rounds, as the trace shows it (a section a
    manager linked counts 0 here: it was never scored); None when no round was judged."""
    return max((round(r.verdict.score, 4) if r.verdict is not None else 0 for r in state.rounds), default=None)
