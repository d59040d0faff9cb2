"""Node guards: the knowledge channel (retrieve_guard) and the data channel (data_guard), run
concurrently when the question needs both."""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from django.core.exceptions import ValidationError

from core.errors import messages_of
from core.pools import submit, thread_pool
from knowledge.selectors import SearchResult, search
from ops.tools import ToolResult, run_tool

from .. import vocabulary as vocab
from ..data_guard import DataPlan, plan_data
from ..router import BOTH, DATA, POLICY
from .follow_up import read_follow_up
from .state import AgentState

RETRIEVAL_K = 5  # sections a round retrieves (the first round and each rewrite)


def retrieve_guard(state: AgentState) -> SearchResult | None:
    """Knowledge channel. Always returns; empty when the intent doesn't need documents."""
    if state.route.intent not in (POLICY, BOTH):
        return None
    return search(state.rules_query, audiences=state.audiences, k=RETRIEVAL_K)


def data_guard(state: AgentState) -> tuple[DataPlan | None, ToolResult | None, str | None]:
    """Data channel. Always returns; empty when the intent doesn't need facts."""
    if state.route.intent not in (DATA, BOTH):
        return None, None, None
    plan = plan_data(state.question, today=state.today, previous=state.previous)
    if plan.clarify or not plan.tool:
        return plan, None, plan.clarify
    try:
        return plan, run_tool(plan.tool, plan.params, user=state.user, today=state.today), None
    except ValidationError as exc:
        messages = messages_of(exc)
        if plan.store_words and plan.params.get("store"):
            # Echo the store as the question named it: 「福田店」 out of the asker's scope must not
            # come back as 「深圳福田店」 (that would confirm a store the asker cannot see).
            messages = [m.replace(f"「{plan.params['store']}」", f"「{plan.store_words}」") for m in messages]
        plan.refused = tuple(getattr(exc, "error_dict", {}) or ())
        return plan, None, "；".join(messages)


def guard_pool() -> ThreadPoolExecutor:
    """Two long-lived guard threads per process, made after any fork: their database
    connections persist (CONN_MAX_AGE) like the request thread's, instead of two new
    connections, and two PostgreSQL backends, per question."""
    return thread_pool("guard", 2)


def guards_node(state: AgentState) -> SearchResult | None:
    """retrieve_guard and data_guard run concurrently when the question needs both; merge
    waits for both. A question that needs one runs it in the request thread."""
    with state.trace.step("guards") as detail:
        started = time.perf_counter()
        if state.route.intent == BOTH:
            pool = guard_pool()
            # Each guard runs in a copy of the request's context (its per-question memos).
            retrieval = submit(pool, _timed, retrieve_guard, state, started)
            data = submit(pool, _timed, data_guard, state, started)
            (result, r_span), ((plan, tool_result, error), d_span) = retrieval.result(), data.result()
        else:
            (result, r_span) = _timed(retrieve_guard, state, started)
            ((plan, tool_result, error), d_span) = _timed(data_guard, state, started)
        state.plan, state.tool_result, state.tool_error = plan, tool_result, error
        # On the request thread: it may change the resolved query and records a step of its own.
        result = read_follow_up(state, result, lambda q: search(vocab.as_rule_words(q), audiences=state.audiences, k=RETRIEVAL_K))
        detail["retrieve_guard"] = {"span_ms": r_span, "hits": hits_detail(result) if result else [], "skipped": result is None}
        detail["data_guard"] = {
            "span_ms": d_span, "skipped": plan is None, "plan": plan.as_dict() if plan else None,
            "rows": len(tool_result.rows) if tool_result else 0, "error": error,
        }
        if tool_result is not None and tool_result.tool in vocab.STOCK_TOOLS:
            detail["data_guard"]["restock_figures"] = [
                {k: r[k] for k in ("store", "product", "on_hand", "safety_stock", "sold_7d", "velocity_per_day", "suggested_qty")}
                for r in tool_result.rows
            ]
    return result


def _timed(fn, state, started):
    begin = (time.perf_counter() - started) * 1000
    out = fn(state)
    return out, [round(begin, 2), round((time.perf_counter() - started) * 1000, 2)]


def hits_detail(result: SearchResult) -> list[dict]:
    return [
        {"section_path": h.section_path, "score": round(h.score, 4), "vector_rank": h.vector_rank,
         "vector_score": round(h.vector_score, 4) if h.vector_score is not None else None,
         "lexical_rank": h.lexical_rank, "lexical_score": round(h.lexical_score, 3) if h.lexical_score is not None else None}
        for h in result.hits
    ]
