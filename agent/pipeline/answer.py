"""Node answer: the cited answer, written by the LLM when one is configured, else extractive;
then the guards (citations, rows, mandatory clauses)."""
from __future__ import annotations

import re

from django.conf import settings

from knowledge import answerability
from knowledge.selectors import titles_closed_to
from knowledge.text import query_terms

from .. import compose
from ..llm import LLMUnavailable, trim_history
from ..router import BOTH
from . import prompts
from .judge import LLM_ERROR_CHARS
from .refusals import generic_refusal, uncovered_owner, uncovered_words, who_to_ask
from .state import AgentState

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


def _number_sources(state: AgentState) -> None:
    """The sections to cite and the rows, numbered once for the prompt and the answer alike."""
    policy_hits = []
    qvec = state.first.qvec if state.first is not None else None
    units: dict = {}  # each candidate section read once for selection and numbering
    # A question with figures keeps the closest rules (hedged), unless it asks about a topic
    # the SOPs leave to someone else.
    if state.chosen is not None and (state.chosen.enough or (state.route.intent == BOTH and state.chosen.layer != "uncovered")):
        policy_hits = compose.select_citation_hits(state.chosen.hits, qvec=qvec, units=units)
    state.sources = compose.number_sources(policy_hits, state.tool_result, qvec=qvec, units=units)


def _written_by_the_llm(state: AgentState, detail: dict) -> str | None:
    """The LLM's answer from the numbered sources, streamed when the page streams; None without an
    LLM, with nothing to cite, or when it is down (the answer is then extractive, and says so)."""
    llm = state.llm
    if not llm.available or not (state.sources.citations or state.sources.data):
        return None
    try:
        messages = [{"role": "system", "content": prompts.ANSWER_SYSTEM}]
        messages += trim_history(state.history, settings.SM_HISTORY_TOKENS)
        messages.append({"role": "user", "content": f"{compose.prompt_sources(state.sources)}\n\n问题：{state.question}"})
        return llm.chat_stream(messages, on_delta=state.on_delta) if state.on_delta else llm.chat(messages)
    except LLMUnavailable as exc:
        detail["degraded"] = f"LLM 不可用，已降级为抽取式回答：{str(exc)[:LLM_ERROR_CHARS]}"
        return None


def _extractive(state: AgentState, detail: dict, note: str, owner: str) -> list[str]:
    """The figures (and what they could not do as asked), then the rule's lines; a question with
    figures whose rules half found nothing says who answers it."""
    parts = []
    if state.tool_result is not None:
        # Named by the question itself (not carried from the last turn): 「那各店呢」 after 天河店 asks for all.
        parts.append(compose.extractive_data_answer(state.tool_result, state.sources, state.question,
                                                    store_named=bool(state.plan and state.plan.store_words)))
        parts.append(note)
    elif state.tool_error:
        parts.append(state.tool_error)
        state.clarify = True
    if state.sources.citations:
        if barely_enough(state):
            detail["hedged"] = state.hedged = True
            parts.append(compose.hedge(state.sources))
        parts.append(compose.extractive_policy_answer(state.question, state.sources, query_terms(state.rules_query)))
    elif state.route.intent == BOTH:
        parts.append(owner or f"制度文档里没有找到这部分的规定，{who_to_ask(state.user)}。")
    return parts


def scope_note(citations: list[dict]) -> str:
    """Sources from a store's own document beside the chain's (「滤芯每 2 个月更换」 for 天河店 beside
    「每 3 个月」 for every store) were quoted side by side with no word on which applies: say whose
    rule each is, and that the store's own rule is the one for that store."""
    own = [c for c in citations if c.get("scope")]
    if not own or len(own) == len(citations):
        return ""
    named = "；".join(dict.fromkeys(f"《{c['document']}》[{c['ref']}]是{c['scope']}自己的规定" for c in own))
    return f"注意：{named}。与通用规定不一致时，在这些门店以门店规定为准，拿不准请问店长。"


_NAMED_DOCUMENT = re.compile(r"《([^《》\n]{1,128})》")


def closed_reference_note(draft: str, audiences) -> str:
    """A rule that points to a document the reader may not open (「报损金额的审批权限见《店长手册》」
    to a bartender) left them nowhere: say it is closed to them and who can tell them."""
    closed = titles_closed_to(_NAMED_DOCUMENT.findall(draft), audiences)
    if not closed:
        return ""
    return f"注意：{'、'.join(f'《{t}》' for t in closed)}你没有权限查看，这部分请问店长。"


def compose_answer(state: AgentState) -> None:
    with state.trace.step("answer") as detail:
        _number_sources(state)
        written = _written_by_the_llm(state, detail)
        # What the figures could not do as asked: right after them, whoever wrote the answer. The rules
        # half of a question on a topic the SOPs leave to someone else: who answers it.
        note = state.plan.note if state.tool_result is not None and state.plan is not None else ""
        uncovered = state.chosen.verdict.uncovered if state.chosen and state.chosen.verdict and not state.chosen.enough else None
        owner = f"制度文档里没有关于{uncovered_words(uncovered)}的规定，{uncovered_owner(uncovered)}。" if uncovered else ""
        parts = [written, note, owner] if written is not None else _extractive(state, detail, note, owner)
        parts.append(scope_note(state.sources.citations))
        parts.append(closed_reference_note("\n".join(p for p in parts if p), state.audiences))
        draft = "\n".join(p for p in parts if p)
        answer, report = compose.apply_guards(state.question, draft, state.sources, state.tool_result, state.audiences,
                                              mandatory=bool(state.sources.citations))
        state.answer = answer or generic_refusal(state.user)
        detail.update(mode="llm" if written is not None else "extractive", guards=report,
                      citations=len(state.sources.citations), data_rows=len(state.sources.data))
