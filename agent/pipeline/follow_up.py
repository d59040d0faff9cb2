"""Node resolve_follow_up: a follow-up made to stand on its own (「那退卡呢」 after a membership
question searches 退卡 within the previous answer's document)."""
from __future__ import annotations

import re

from knowledge.text import tokenize

from .. import vocabulary as vocab
from ..router import BOTH, POLICY
from .state import AgentState

FOLLOW_UP_MAX_CHARS = 20  # longer than this, a question stands on its own
# 「比前天多还是少」; 「三百块的话」 after a refund rule asks about the same rule at that amount.
FOLLOW_UP = re.compile(r"^(那|那么|那如果|如果|还有|另外|然后|再问一下)|^比[^，。？！]{1,8}(多|少|好|差|高|低)|[呢]\s*[？?]?$|的话\s*[？?]?$")


# A short question that starts by asking whether/who/how long and names no situation of its own
# (「要不要店长批？」「需要登记吗」 after a refund question) asks about the previous answer too.
_ELLIPTICAL = re.compile(r"^(要不要|需不需要|需要|用不用|还要|还得|得|能不能|可不可以|可以|是不是|多久|多长时间|谁来|找谁|归谁|要谁|谁批|谁审批|谁签)")


_ELLIPTICAL_MAX = 10


def resolve_follow_up(state: AgentState) -> None:
    """Make a follow-up stand on its own: 「那退卡呢」 after a membership question searches
    退卡 within the previous answer's document."""
    repaired = vocab.sound_repaired(state.question)
    if repaired != state.question:  # 「上周卖了躲少」: read as typed by sound, said in the trace
        with state.trace.step("repair") as detail:
            detail.update({"typed": state.question, "read_as": repaired})
        state.question = repaired
    prev = state.previous
    q = state.question.strip()
    state.resolved_query = q
    # 「要不要店长批」 names one thing; 「要不要给客人叫代驾」 (客人, 代驾) is a question of its own.
    elliptical = prev.get("intent") in (POLICY, BOTH) and len(q.rstrip("？?。")) <= _ELLIPTICAL_MAX and _ELLIPTICAL.search(q) \
        and len(_new_words(q)) <= 1
    if not prev or not (FOLLOW_UP.search(q) or elliptical) or len(q) > FOLLOW_UP_MAX_CHARS:
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
