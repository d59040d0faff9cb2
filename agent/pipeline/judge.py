"""Node judge: is a round's evidence enough? One calibrated answerability score; with an LLM
configured, the LLM decides the grey zone."""
from __future__ import annotations

from dataclasses import replace

from knowledge import answerability
from knowledge.selectors import corpus_states_a_price_of
from ops.selectors import find_product_in_text, product_candidates

from .. import vocabulary as vocab
from ..llm import LLMUnavailable
from ..router import POLICY
from . import prompts
from .state import AgentState, Round

TAUGHT_SCORE = 2.0  # a section a manager linked to the question: above any score the model gives
LLM_ERROR_CHARS = 120  # of an LLM error, kept in the trace
GREY_ZONE = 0.15  # |answerability − threshold| below this goes to the LLM judge, when one is configured


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
    return replace(v, enough=False, uncovered={**vocab.UNPRICED, "words": [f"{said}的售价"],
                                                    "rule": "agent.pipeline.judge.unpriced"})


def judge(state: AgentState, rnd: Round) -> None:
    """Is this round's evidence enough? One calibrated answerability score over several
    signals (knowledge.answerability); with an LLM configured, the LLM decides the grey zone.
    Always measured with the question's own vector, never the rewritten query's."""
    with state.trace.step("judge", attempt=rnd.attempt) as detail:
        top = rnd.hits[0] if rnd.hits else None
        if top is not None and getattr(top, "taught", False):  # a manager linked this question to this section
            rnd.enough, rnd.layer, rnd.reason, rnd.score = True, "taught", "管理员已把这个问题关联到这一节", TAUGHT_SCORE
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
            # Which rule named it, so the trace answers "why" in one hop.
            detail.update(enough=False, layer=rnd.layer, reason=rnd.reason,
                          rule=v.uncovered.get("rule", "knowledge.answerability.uncovered_named"))
            return
        llm = state.llm
        if top is not None and llm.available and abs(v.score - v.threshold) < GREY_ZONE:
            try:
                answer = llm.chat(prompts.judge(state.question, top), max_tokens=prompts.JUDGE_MAX_TOKENS)
                rnd.enough = answer.strip().upper().startswith("OK")
                rnd.layer, rnd.reason = "llm", f"灰区（可答性 {v.score:.2f}），LLM 判定 {answer.strip()[:8]}"
            except LLMUnavailable as exc:
                detail["llm_error"] = str(exc)[:LLM_ERROR_CHARS]
        detail.update(enough=rnd.enough, layer=rnd.layer, reason=rnd.reason)
