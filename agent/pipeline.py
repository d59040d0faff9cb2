"""The agent, top to bottom like its diagram:

    route ─┬─ retrieve_guard ─┐
           └─ data_guard ─────┴─ merge → judge ─┬→ answer (cited)
                                       ▲        └→ rewrite → retrieve_again ┘ (≤ SM_AGENT_MAX_ATTEMPTS)
                                       └──────────── refuse (retrieval gate / judge)

One function per node; the state is passed explicitly; the trace is recorded as it goes.
This module never writes SQL and never performs a business write: actions become
proposals that a person confirms (workflow app).
"""
from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

import numpy as np
from django.conf import settings
from django.core.exceptions import ValidationError

from core.pools import submit, thread_pool
from core.scoping import warm
from knowledge import answerability
from knowledge.selectors import (
    IndexNotReady,
    SearchResult,
    corpus_states_a_price_of,
    current_index,
    index_read_once,
    nearest_section_titles,
    query_vector_with,
    search,
    visibility_for,
)
from knowledge.text import query_terms, tokenize
from ops.selectors import find_product_in_text, find_stores_in_text, product_candidates, store_list_read_once
from ops.tools import ToolResult, local_today, run_tool

from . import compose
from . import vocabulary as vocab
from .data_guard import DataPlan, compared_store, plan_data
from .llm import LLMUnavailable, get_llm, llm_budget, trim_history
from .router import ACTION, BOTH, DATA, OUT_OF_SCOPE, POLICY, Route, route
from .suggestions import follow_ups

GREY_ZONE = 0.15  # |answerability − threshold| below this goes to the LLM judge, when one is configured
REFUSAL_TEXT = (
    "抱歉，现有的门店制度文档里没有能回答这个问题的内容，我不能凭空作答。"
    "请咨询店长或区域经理；这个问题已记录到\"未解答问题\"，管理人员会据此补充制度。"
)
# 「比前天多还是少」; 「三百块的话」 after a refund rule asks about the same rule at that amount.
_FOLLOW_UP = re.compile(r"^(那|那么|那如果|如果|还有|另外|然后|再问一下)|^比[^，。？！]{1,8}(多|少|好|差|高|低)|[呢]\s*[？?]?$|的话\s*[？?]?$")
# A short question that starts by asking whether/who/how long and names no situation of its own
# (「要不要店长批？」「需要登记吗」 after a refund question) asks about the previous answer too.
_ELLIPTICAL = re.compile(r"^(要不要|需不需要|需要|用不用|还要|还得|得|能不能|可不可以|可以|是不是|多久|多长时间|谁来|找谁|归谁|要谁|谁批|谁审批|谁签)")
_ELLIPTICAL_MAX = 10


class Trace:
    def __init__(self, on_step=None):
        self.steps: list[dict] = []
        self.on_step = on_step  # told about each finished step (async progress); never changes the answer

    @contextmanager
    def step(self, name: str, **detail):
        started = time.perf_counter()
        entry = {"step": name, "ms": 0.0, "detail": dict(detail)}
        try:
            yield entry["detail"]
        finally:
            entry["ms"] = round((time.perf_counter() - started) * 1000, 2)
            self.steps.append(entry)
            if self.on_step is not None:
                self.on_step(entry)


@dataclass
class Round:
    attempt: int
    query: str
    result: SearchResult | None
    enough: bool = False
    layer: str = ""
    reason: str = ""
    score: float = 0.0
    verdict: Any = None

    @property
    def hits(self):
        return self.result.hits if self.result else []


@dataclass
class AgentState:
    question: str
    user: Any
    today: date
    previous: dict = field(default_factory=dict)
    history: list[tuple[str, str]] = field(default_factory=list)
    max_attempts: int = 2
    trace: Trace = field(default_factory=Trace)
    on_delta: Any = None  # called with each piece of an LLM-written answer as it arrives (the chat page streams it)
    resolved_query: str = ""
    route: Route | None = None
    plan: DataPlan | None = None
    tool_result: ToolResult | None = None
    tool_error: str | None = None
    rounds: list[Round] = field(default_factory=list)
    chosen: Round | None = None
    refused: bool = False
    refusal_layer: str = ""
    answer: str = ""
    sources: compose.Sources = field(default_factory=compose.Sources)
    proposal: dict | None = None
    pending_action: dict | None = None  # an action still waiting for slots (agent/slots.py)
    decided_on: str | None = None  # the proposal a 「确认提案…」 turn was about
    clarify: bool = False
    audiences: Any = None  # who is reading (knowledge.selectors.Visibility): resolved once, in __post_init__
    first: SearchResult | None = None  # the question's own retrieval: what every round is judged against
    verdict: Any = None  # the chosen round's answerability verdict

    @property
    def rules_query(self) -> str:
        """What the rules are searched and judged with: the resolved question with a member's
        number or phone read as 「会员」 / 「手机号」 (the data tools get the number itself).
        「帮我查下M00010最近消费了啥」 was refused for want of a rule about 「m00010」."""
        return vocab.as_rule_words(self.resolved_query)

    def __post_init__(self):
        # Resolved once per question, here: the guard threads use their own connections and
        # must not look the user's role up again; the judge runs up to three times.
        self.audiences = self.audiences or visibility_for(self.user)

    @property
    def index(self):
        """The index metadata, read when a policy question first needs it (a data question
        never does) and then once per question (index_read_once)."""
        return current_index()


@dataclass
class AgentResult:
    answer: str
    intent: str
    route_reason: str
    refused: bool
    citations: list[dict]
    data: list[dict]
    proposal: dict | None
    trace: list[dict]
    context: dict

    def as_dict(self) -> dict:
        return {
            "answer": self.answer, "intent": self.intent, "route_reason": self.route_reason, "refused": self.refused,
            "citations": [{k: v for k, v in c.items() if k != "chunk_id"} for c in self.citations],
            "data": self.data, "proposal": self.proposal, "trace": self.trace,
            "suggestions": self.context.get("suggestions", []),
        }


def thresholds() -> tuple[float, float]:
    """The calibrated cosine thresholds (`eval calibrate`): no longer a refusal gate (the
    answerability score decides), still the scale the chat page grades relevance 高/中/低 on."""
    meta = current_index()
    refusal = meta.refusal_threshold if meta and meta.refusal_threshold is not None else settings.SM_REFUSAL_THRESHOLD
    judge = meta.judge_threshold if meta and meta.judge_threshold is not None else settings.SM_JUDGE_THRESHOLD
    return refusal, judge


# --- nodes ---------------------------------------------------------------------------------


def resolve_follow_up(state: AgentState) -> None:
    """Make a follow-up stand on its own: 「那退卡呢」 after a membership question searches
    退卡 within the previous answer's document."""
    prev = state.previous
    q = state.question.strip()
    state.resolved_query = q
    # 「要不要店长批」 names one thing; 「要不要给客人叫代驾」 (客人, 代驾) is a question of its own.
    elliptical = prev.get("intent") in (POLICY, BOTH) and len(q.rstrip("？?。")) <= _ELLIPTICAL_MAX and _ELLIPTICAL.search(q) \
        and len(_new_words(q)) <= 1
    if not prev or not (_FOLLOW_UP.search(q) or elliptical) or len(q) > 20:
        return
    if prev.get("intent") in (POLICY, BOTH) and prev.get("top_document"):
        core = re.sub(r"^(那么?|那如果|如果|还有|另外|然后|再问一下)|呢\s*[？?]?$", "", q).strip()
        # 「那退卡呢」 names a new thing: look for it in the previous answer's document, near its section
        # (the title alone drew the document's first section: 「那剩下的酒要倒掉吗」 → 适用范围,
        # 「要是吐了呢」 after a drunk guest → minors). 「那要不要打120」 names none: it continues the section.
        heading = (prev.get("top_section") or "").split(" > ")[-1]
        context = f"{prev['top_document']} {heading}".strip() if _names_a_new_thing(core) or not heading else heading
        state.resolved_query = f"{context} {core}".strip()


# An amount names no new thing: 「那要是三千块呢」 after the write-off rule asks about that rule.
_AMOUNT = re.compile(r"^[\d零〇一二两三四五六七八九十百千万几]+(块钱?|元|箱|瓶|天|次|个|人|桌|分钟|小时)?$")


def _new_words(core: str) -> list[str]:
    return [t for t in tokenize(core) if len(t) >= 2 and not t.isdigit() and not _AMOUNT.match(t) and t not in vocab.FOLLOW_UP_FUNCTION_WORDS]


def _names_a_new_thing(core: str) -> bool:
    """Does a follow-up name something of its own (团购券, 退卡, 客人…不舒服), or only ask more
    about the last answer (要不要打120, 要多久, 要多少钱)?"""
    return bool(_new_words(core))


def route_node(state: AgentState) -> None:
    with state.trace.step("route") as detail:
        decision = route(state.resolved_query, get_llm(), state.today)
        prev_intent = state.previous.get("intent")
        if not decision.decided and prev_intent in (DATA, BOTH) and (state.resolved_query != state.question or _FOLLOW_UP.search(state.question)):
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


def retrieve_guard(state: AgentState) -> SearchResult | None:
    """Knowledge channel. Always returns; empty when the intent doesn't need documents."""
    if state.route.intent not in (POLICY, BOTH):
        return None
    return search(state.rules_query, audiences=state.audiences, k=5)


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
        messages = [m for ms in getattr(exc, "message_dict", {"": exc.messages}).values() for m in ms]
        if plan.store_words and plan.params.get("store"):
            # Echo the store as the question named it: 「福田店」 out of the asker's scope must not
            # come back as 「深圳福田店」 (that would confirm a store the asker cannot see).
            messages = [m.replace(f"「{plan.params['store']}」", f"「{plan.store_words}」") for m in messages]
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
        detail["retrieve_guard"] = {"span_ms": r_span, "hits": _hits_detail(result) if result else [], "skipped": result is None}
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


def _hits_detail(result: SearchResult) -> list[dict]:
    return [
        {"section_path": h.section_path, "score": round(h.score, 4), "vector_rank": h.vector_rank,
         "vector_score": round(h.vector_score, 4) if h.vector_score is not None else None,
         "lexical_rank": h.lexical_rank, "lexical_score": round(h.lexical_score, 3) if h.lexical_score is not None else None}
        for h in result.hits
    ]


def unpriced(state: AgentState, v: answerability.Verdict) -> answerability.Verdict:
    """A question about what a product sells for, when no line of the SOPs gives that product a
    price (「百威一瓶卖多少」 was answered from 员工消费, 「红酒多少钱一瓶」 from 无酒精饮品推荐): the price
    is the POS's, and the question is refused like a topic the SOPs leave to someone else, under
    the same guard (evidence 4 log-odds above the threshold keeps its answer)."""
    # Only a rules question: in one that also asks for figures, 「卖了多少钱」 is the figures' half.
    if (v.uncovered or not answerability.refusable_as_uncovered(v.score, v.threshold) or state.route.intent != POLICY
            or not vocab.PRICE_ASKED.search(state.question)):
        return v
    named = find_product_in_text(state.question)
    if named is None:
        return v
    said, product = named
    words = [w for w, name in product_candidates() if name == product]
    if corpus_states_a_price_of(words):
        return v
    return replace(v, enough=False, uncovered={**vocab.UNPRICED, "words": [f"{said}的售价"]})


def judge(state: AgentState, rnd: Round) -> None:
    """Is this round's evidence enough? One calibrated answerability score over several
    signals (knowledge.answerability); with an LLM configured, the LLM decides the grey zone.
    Always measured with the question's own vector, never the rewritten query's."""
    with state.trace.step("judge", attempt=rnd.attempt) as detail:
        top = rnd.hits[0] if rnd.hits else None
        if top is not None and getattr(top, "taught", False):  # a manager linked this question to this section
            rnd.enough, rnd.layer, rnd.reason, rnd.score = True, "taught", "管理员已把这个问题关联到这一节", 2.0
            detail.update(enough=True, layer="taught", reason=rnd.reason)
            return
        v = unpriced(state, answerability.verdict(state.rules_query, state.first.qvec, rnd.result, top, state.index,
                                                  global_result=state.first))
        rnd.verdict, rnd.score, rnd.enough = v, v.score, v.enough
        rnd.layer = "answerability"
        rnd.reason = (f"可答性 {v.score:.2f} {'≥' if v.enough else '<'} 阈值 {v.threshold:.2f}" if top is not None
                      else "没有检索到任何片段")
        detail.update(answerability=v.as_dict())
        if v.uncovered:  # the SOPs leave this topic to someone else: no rewrite or LLM changes that
            rnd.layer = "uncovered"
            rnd.reason = f"{v.uncovered['topic']}：{'、'.join(v.uncovered['words'])}，应问{v.uncovered['ask']}"
            detail.update(enough=False, layer=rnd.layer, reason=rnd.reason)
            return
        llm = get_llm()
        if top is not None and llm.available and abs(v.score - v.threshold) < GREY_ZONE:
            try:
                answer = llm.chat([
                    {"role": "system", "content": "判断参考资料能否回答问题。只输出 OK 或 MISS。"},
                    {"role": "user", "content": f"问题：{state.question}\n\n参考资料：\n{top.section_path}\n{top.text}"},
                ], max_tokens=4)
                rnd.enough = answer.strip().upper().startswith("OK")
                rnd.layer, rnd.reason = "llm", f"灰区（可答性 {v.score:.2f}），LLM 判定 {answer.strip()[:8]}"
            except LLMUnavailable as exc:
                detail["llm_error"] = str(exc)[:120]
        detail.update(enough=rnd.enough, layer=rnd.layer, reason=rnd.reason)


def rewrite(state: AgentState, previous_round: Round) -> tuple[str, np.ndarray | None]:
    """Prepend the corpus's own terms to the question (never replace it). Returns the new
    query and, when the terms are section titles, its vector (None: embed the query)."""
    tried = {h.heading for r in state.rounds for h in r.hits[:1]}
    with state.trace.step("rewrite", attempt=previous_round.attempt + 1) as detail:
        terms: list[str] = []
        llm = get_llm()
        if llm.available:
            try:
                proposal = llm.chat([
                    {"role": "system", "content": "把店员的问题改写成门店制度文档里可能使用的 2 到 4 个检索词，用空格分隔，只输出检索词。"},
                    {"role": "user", "content": state.rules_query},
                ], max_tokens=24)
                terms = [t for t in re.split(r"[\s,，、]+", proposal) if t][:4]
                detail["source"] = "llm"
            except LLMUnavailable as exc:
                detail["llm_error"] = str(exc)[:120]
        vector = None
        if not terms:
            # No LLM, or it proposed nothing: the nearest section titles by embedding.
            terms = nearest_section_titles(state.rules_query, audiences=state.audiences, n=2, exclude=tried)
            detail["source"] = "nearest_section_titles"
            vector = _title_vector(state, terms)
        query = f"{' '.join(terms)} {state.rules_query}".strip()
        detail.update(terms=terms, query=query)
    return query, vector


def _title_vector(state: AgentState, titles: list[str]) -> np.ndarray | None:
    """The rewritten query's vector: the question's own plus the titles' (no model call for
    the rewritten text). On the tuning set this answers the same questions as embedding the
    rewritten text did (near-domain refusal 25 → 26 of 43)."""
    if not titles or state.first is None or state.first.qvec is None:
        return None
    return query_vector_with(state.first.qvec, titles)


def retrieve_again(state: AgentState, query: str, attempt: int, vector: np.ndarray | None = None) -> Round:
    with state.trace.step("retrieve_again", attempt=attempt, query=query) as detail:
        result = search(query, audiences=state.audiences, k=5, qvec=vector)
        detail["hits"] = _hits_detail(result)
    return Round(attempt, query, result)


# A first round scoring below this share of the refusal threshold is not rewritten. On the
# tuning set a rewrite round lifted a question over the threshold only from a first-round
# score of 0.22 × threshold or more (four questions: two answerable ones, both then answered
# from the wrong section, and two near-domain ones, answered when they should not have been);
# below it sit the far questions (「比特币现在多少钱一个」: 0.001) and most near-domain ones,
# for which the two rewrite rounds were two thirds of the cost of a refusal.
REWRITE_FLOOR = 0.2
# Without an LLM, an answer whose answerability score is within this many log-odds above the
# threshold is said to be the closest rule, not the rule (at the shipped threshold, 0.12, that is
# a score under 0.24): on the tuning set that band holds 21 of the 89 answered near-domain
# questions (「客人想带狗进来坐行不行」 answered from 包厢服务标准) and 29 of the 415 answered
# answerable ones (7 %), which still get the same answer after one line.
HEDGE_LOGITS = 0.85


def barely_enough(state: AgentState) -> bool:
    """Answered, but only just: the chosen round's score is within HEDGE_LOGITS of the threshold,
    or under it in a question that also asked for figures (answered from the rules all the same).
    Not when an LLM judge decided the round (its layer says so): it has read the section."""
    v = state.chosen.verdict if state.chosen is not None else None
    if v is None or state.chosen.layer == "llm" or not 0 < v.threshold < 1:
        return False
    if not v.enough:
        return state.route.intent == BOTH
    return answerability.logit(v.score) - answerability.logit(v.threshold) < HEDGE_LOGITS


def hopeless(rnd: Round) -> bool:
    """Is the first round's evidence too thin for a rewrite to find any? Never under `eval
    calibrate`'s never-enough model (threshold above 1): it collects every round there is."""
    v = rnd.verdict
    return v is not None and rnd.layer == "answerability" and 0 < v.threshold <= 1 and v.score < REWRITE_FLOOR * v.threshold


def agent_loop(state: AgentState, first: SearchResult) -> None:
    """Judge each round on its own; use the first round judged enough, else the best one.
    Rounds are never pooled: mixing three retrievals gives the answer a muddle."""
    rnd = Round(0, state.rules_query, first)
    state.rounds.append(rnd)
    judge(state, rnd)
    # Measured without an LLM; with one, its rewrite (its own search terms) still gets its rounds.
    # A topic the SOPs leave to someone else stays that whatever the search terms.
    uncovered = rnd.layer == "uncovered"
    if not rnd.enough and rnd.attempt < state.max_attempts and (uncovered or hopeless(rnd) and not get_llm().available):
        with state.trace.step("rewrite", attempt=1) as detail:
            detail.update(skipped=True, reason="问的是制度不管的话题，改写重试也不会有依据" if uncovered
                          else f"可答性 {rnd.score:.3f} 远低于阈值，改写重试也找不到依据")
        rnd = None
    while rnd is not None and not rnd.enough and rnd.attempt < state.max_attempts:
        query, vector = rewrite(state, rnd)
        rnd = retrieve_again(state, query, rnd.attempt + 1, vector)
        state.rounds.append(rnd)
        judge(state, rnd)
    enough = [r for r in state.rounds if r.enough]
    state.chosen = enough[0] if enough else max(state.rounds, key=lambda r: r.score)
    with state.trace.step("select_round", chosen=state.chosen.attempt, rounds=len(state.rounds),
                          enough=bool(enough)):
        pass


def refuse(state: AgentState, layer: str, reason: str) -> None:
    state.refused, state.refusal_layer = True, layer
    state.answer = refusal_text(state) if layer in ("answerability", "uncovered") else REFUSAL_TEXT
    with state.trace.step("refuse", layer=layer, reason=reason):
        pass


def decide_in_chat(state: AgentState) -> bool:
    """「确认提案7」: a proposal is confirmed or rejected by a person on its card (the chat page,
    /proposals/, the admin), never by the assistant; say where, instead of refusing."""
    if vocab.ASKS_WHERE_IT_STANDS.search(state.question):
        return False
    m = vocab.DECIDE_PROPOSAL.search(state.question)
    after = None if m else vocab.DECIDE_PROPOSAL_AFTER.search(state.question)
    # 「确认提案」 right after the proposal was made in this thread was declined as unrelated to the store.
    this = None if m or after else (state.previous.get("proposal_id") and vocab.DECIDE_THIS.fullmatch(state.question))
    if not (m or after or this):
        return False
    pk = next(g for g in m.groups()[1:] if g) if m else after.group(1) if after else state.previous["proposal_id"]
    state.decided_on = str(pk)
    state.route = Route(ACTION, f"确认或驳回提案 #{pk}：在提案卡片上完成，助手不代为决定")
    from workflow.selectors import proposal_for_status

    if state.user is not None and str(pk).isdigit() and proposal_for_status(state.user, int(pk)) is None:
        # 「确认提案99999」 sent people to /proposals/ to look for a proposal that does not exist.
        state.answer = compose.proposal_number_answer(state.user, int(pk), None)
    else:
        state.answer = (f"提案 #{pk} 要由有权限的人在提案卡片上点「确认」或「拒绝」：打开顶部菜单的「操作提案」页面（/proposals/）找到 #{pk}；"
                        "店长也可以在后台的「操作提案」里处理。我不会替任何人确认或拒绝。")
    with state.trace.step("route") as detail:
        detail.update(state.route.as_dict())
    return True


def proposal_status(state: AgentState) -> bool:
    """「我提的补货申请批了没」「有哪些待我确认的补货申请」: the proposals themselves (the asker's
    stores only), not a rule about proposals."""
    question = state.question.strip()
    number = vocab.PROPOSAL_NUMBER.search(question)
    if number and len(question) <= 40 and state.user is not None and not vocab.ASKS_HOW.search(question):
        from workflow.selectors import proposal_for_status

        pk = int(next(g for g in number.groups() if g))
        state.route = Route(ACTION, f"查提案 #{pk}")  # 「提案6是什么」 was declined as unrelated to the store
        state.answer = compose.proposal_number_answer(state.user, pk, proposal_for_status(state.user, pk))
        with state.trace.step("route") as detail:
            detail.update(state.route.as_dict())
        return True
    awaiting = bool(vocab.AWAITING_ME.search(question))
    # 「科罗娜为什么被拒了」: a product named with 被拒 asks about its restock proposal.
    product_refused = bool(vocab.WHY_REFUSED.search(question)) and find_product_in_text(question) is not None
    if len(question) > 40 or not (awaiting or product_refused or vocab.PROPOSAL_STATUS.search(question)) or state.user is None \
            or vocab.ASKS_HOW.search(question):  # 「补货申请被拒了怎么办」 asks for the rule
        return False
    from workflow.selectors import proposals_for_status

    state.route = Route(ACTION, "查提案进度：" + ("待我确认的提案" if awaiting else "我提交的提案"))
    kind = "restock" if "补货" in question or product_refused else "ticket" if re.search(r"工单|客诉|投诉", question) else None
    items, total = proposals_for_status(state.user, awaiting_me=awaiting, kind=kind)
    state.answer = compose.proposals_status_answer(state.user, items, total, awaiting_me=awaiting)
    with state.trace.step("route") as detail:
        detail.update(state.route.as_dict())
    return True


def point_to_page(state: AgentState) -> bool:
    """「查看审计记录」: a short request to see a page of the product gets its address (the page
    itself checks who may open it)."""
    question = state.question.strip()
    if len(question) > 24 or not vocab.SHOW_ME.search(question):
        return False
    page = next(((name, url, also) for pattern, name, url, also in vocab.PAGES if pattern.search(question)), None)
    if page is None:
        return False
    name, url, also = page
    state.route = Route(ACTION, f"找页面：{name}（{url}）")
    state.answer = f"「{name}」在 {url}（{also}）。能看到哪些内容取决于你的角色和门店。"
    with state.trace.step("route") as detail:
        detail.update(state.route.as_dict())
    return True


def far_from_domain(state: AgentState) -> bool:
    """A refused question that is not about the store or the job at all (no word of that
    world: 店, 客人, 酒, 上班 …) is out of scope, not a gap in the rules, and its intent says
    so. How close the nearest section scores says little here: 「红烧肉怎么做」 lands near the
    recipes, 「店里WiFi密码多久换」 near nothing."""
    # A product the bar sells is the store's world too (「那百威呢」 was declined as unrelated), and so
    # is a topic the SOPs leave to someone else (「在职证明找谁开」 is the job's, and its owner is named).
    if state.chosen is not None and state.chosen.layer == "uncovered":
        return False
    return not vocab.about_the_store(state.question) and find_product_in_text(state.question) is None


def refusal_text(state: AgentState) -> str:
    """Say what the corpus does not cover, and where the nearest thing it covers is; for a topic
    the SOPs leave to someone else, who answers it instead."""
    v = state.chosen.verdict if state.chosen else None
    if v is not None and v.uncovered:
        return (f"抱歉，门店制度不涉及{uncovered_words(v.uncovered)}，我不能凭空作答。{uncovered_owner(v.uncovered)}；"
                "这个问题已记录到\"未解答问题\"。")
    missing = "、".join(f"「{t}」" for t in (v.missing_terms if v else [])[:3])
    # Named only when the question shares a word with that section: 「团建经费有多少」 was pointed at
    # 《团购与平台券核销》 for the character 团.
    related = v is None or v.signals.get("section_coverage", 1.0) > 0
    nearest = state.chosen.hits[0].document if state.chosen and state.chosen.hits and related else ""
    head = f"制度里没有关于{missing}的规定" if missing else "现有的门店制度文档里没有能回答这个问题的内容"
    near = f"；相近的内容在《{nearest}》" if nearest else ""
    return (f"抱歉，{head}{near}，我不能凭空作答。请咨询店长或区域经理；这个问题已记录到\"未解答问题\"，"
            "管理人员会据此补充制度。")


def uncovered_words(uncovered: dict) -> str:
    return "、".join(f"「{w}」" for w in uncovered["words"][:3])


def uncovered_owner(uncovered: dict) -> str:
    return f"{uncovered['topic']}方面的问题请问{uncovered['ask']}"


def compose_answer(state: AgentState) -> None:
    with state.trace.step("answer") as detail:
        policy_hits = []
        qvec = state.first.qvec if state.first is not None else None
        units: dict = {}  # each candidate section read once for selection and numbering
        # A question with figures keeps the closest rules (hedged), unless it asks about a topic
        # the SOPs leave to someone else.
        if state.chosen is not None and (state.chosen.enough or (state.route.intent == BOTH and state.chosen.layer != "uncovered")):
            policy_hits = compose.select_citation_hits(state.chosen.hits, qvec=qvec, units=units)
        state.sources = compose.number_sources(policy_hits, state.tool_result, qvec=qvec, units=units)
        terms = query_terms(state.rules_query)
        parts = []
        llm = get_llm()
        used_llm = False
        if llm.available and (state.sources.citations or state.sources.data):
            try:
                messages = [{"role": "system", "content": compose.SYSTEM_PROMPT}]
                messages += trim_history(state.history, settings.SM_HISTORY_TOKENS)
                messages.append({"role": "user", "content": f"{compose.prompt_sources(state.sources)}\n\n问题：{state.question}"})
                parts.append(llm.chat_stream(messages, on_delta=state.on_delta) if state.on_delta else llm.chat(messages))
                used_llm = True
            except LLMUnavailable as exc:
                detail["degraded"] = f"LLM 不可用，已降级为抽取式回答：{str(exc)[:120]}"
        # What the figures could not do as asked: right after them, whoever wrote the answer. The rules
        # half of a question on a topic the SOPs leave to someone else: who answers it.
        note = state.plan.note if state.tool_result is not None and state.plan is not None else ""
        uncovered = state.chosen.verdict.uncovered if state.chosen and state.chosen.verdict and not state.chosen.enough else None
        owner = f"制度文档里没有关于{uncovered_words(uncovered)}的规定，{uncovered_owner(uncovered)}。" if uncovered else ""
        if used_llm:
            parts += [note, owner]
        if not used_llm:
            if state.tool_result is not None:
                # Named by the question itself (not carried from the last turn): 「那各店呢」 after 天河店 asks for all.
                parts.append(compose.extractive_data_answer(state.tool_result, state.sources, state.question,
                                                            store_named=bool(state.plan and state.plan.store_words)))
                if note:
                    parts.append(note)
            elif state.tool_error:
                parts.append(state.tool_error)
                state.clarify = True
            if state.sources.citations:
                if barely_enough(state):
                    detail["hedged"] = True
                    parts.append(compose.hedge(state.sources))
                parts.append(compose.extractive_policy_answer(state.question, state.sources, terms))
            elif state.route.intent == BOTH:
                parts.append(owner or "制度文档里没有找到这部分的规定，请咨询店长。")
        draft = "\n".join(p for p in parts if p)
        answer, report = compose.apply_guards(state.question, draft, state.sources, state.tool_result, state.audiences,
                                              mandatory=bool(state.sources.citations))
        state.answer = answer or REFUSAL_TEXT
        detail.update(mode="llm" if used_llm else "extractive", guards=report,
                      citations=len(state.sources.citations), data_rows=len(state.sources.data))


def action_node(state: AgentState) -> None:
    """Writes are never performed here: the workflow app turns the request into a proposal."""
    with state.trace.step("propose") as detail:
        from .actions import propose_from_question

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
        from .actions import continue_pending

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


# --- the graph -----------------------------------------------------------------------------


def run(state: AgentState) -> AgentState:
    resolve_follow_up(state)
    if decide_in_chat(state) or point_to_page(state) or proposal_status(state):
        return state
    route_node(state)
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


def maybe_offer_restock(state: AgentState) -> None:
    """A stock answer with items below their safety stock offers a restock proposal (quantities
    from safety stock and velocity): proposed when the person says yes, in the next turn."""
    if state.tool_result is None or state.tool_result.tool not in vocab.STOCK_TOOLS or not state.tool_result.rows:
        return
    from .actions import offer_restock

    with state.trace.step("offer_restock") as detail:
        state.proposal, note, offer = offer_restock(state)
        detail["proposal"], detail["offer"] = state.proposal, offer
        if offer:
            state.pending_action = offer
        if note:
            state.answer = state.answer.rstrip() + "\n" + note


def context_for_next_turn(state: AgentState) -> dict:
    ctx = {"query": state.resolved_query, "intent": state.route.intent if state.route else ""}
    # What the next 「那上个月呢」 builds on: this turn's plan when it ran or asked for what it lacks,
    # not one its tool refused (「那福田店呢」 outside the asker's stores was carried into every later turn).
    if state.plan and state.plan.tool and (state.tool_result is not None or state.plan.clarify):
        ctx["tool"], ctx["params"] = state.plan.tool, state.plan.params
    elif state.previous.get("tool") and state.route and state.route.intent in (DATA, BOTH):
        ctx["tool"], ctx["params"] = state.previous["tool"], state.previous.get("params")
    if state.pending_action:
        ctx["pending_action"] = state.pending_action
    if state.proposal and state.proposal.get("id"):
        ctx["proposal_id"] = state.proposal["id"]
    elif state.decided_on:  # 「确认提案」 then 「批了吧」: still that proposal
        ctx["proposal_id"] = state.decided_on
    if state.chosen and state.chosen.hits:
        ctx["top_document"] = state.chosen.hits[0].document
        ctx["top_section"] = state.chosen.hits[0].section_path
    return ctx


def answer_question(question: str, *, user, previous: dict | None = None, history: list[tuple[str, str]] | None = None,
                    today: date | None = None, max_attempts: int | None = None, on_step=None,
                    on_delta=None) -> tuple[AgentResult, AgentState]:
    """Run the whole pipeline for one question (no persistence: see agent.services)."""
    warm(user)  # permissions and stores read here: the guard threads' connections may not see the user
    # One deadline for every LLM call; the store list and the index metadata read once per question.
    with llm_budget(), store_list_read_once(), index_read_once():
        state = AgentState(
            question=question, user=user, today=today or local_today(), previous=previous or {}, history=history or [],
            max_attempts=settings.SM_AGENT_MAX_ATTEMPTS if max_attempts is None else max_attempts, trace=Trace(on_step),
            on_delta=on_delta,
        )
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
        trace=state.trace.steps, context=context,
    )
    return result, state


__all__ = ["answer_question", "AgentState", "AgentResult"]
