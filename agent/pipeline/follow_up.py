"""Node resolve_follow_up: a follow-up made to stand on its own (「那退卡呢」 after a membership
question searches 退卡 within the previous answer's document)."""
from __future__ import annotations

import re

from knowledge.text import tokenize
from ops.tools import TOOLS

from .. import vocabulary as vocab
from ..router import BOTH, DATA, POLICY
from .state import AgentState

FOLLOW_UP_MAX_CHARS = 20  # longer than this, a question stands on its own
# 「比前天多还是少」「比上上个月涨了还是跌了」; 「三百块的话」 after a refund rule asks about the same rule at that amount.
FOLLOW_UP = re.compile(r"^(那|那么|那如果|如果|还有|另外|然后|再问一下)|^比[^，。？！]{1,8}(多|少|好|差|高|低|涨|跌|增|减|变化|怎么样|如何|咋样)|[呢]\s*[？?]?$|的话\s*[？?]?$")


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
    refers_back = prev.get("intent") in (POLICY, BOTH) and bool(vocab.REFERS_BACK.search(q))
    if prev.get("intent") == DATA and prev.get("tool") in TOOLS and vocab.ABOUT_THE_FIGURES.search(q) and len(q) <= FOLLOW_UP_MAX_CHARS:
        # 「他能打印出来给他吗」 right after a member's balance asks a rule about that balance (it was
        # searched alone and refused): the rules are searched with what the figures were about.
        state.data_subject = TOOLS[prev["tool"]].title
        return
    if not prev or not (FOLLOW_UP.search(q) or elliptical or refers_back) or len(q) > FOLLOW_UP_MAX_CHARS:
        return
    if prev.get("intent") in (POLICY, BOTH) and prev.get("top_document"):
        core = re.sub(r"^(那么?|那如果|如果|还有|另外|然后|再问一下)|呢\s*[？?]?$", "", q).strip()
        # 「那退卡呢」 names a new thing: look for it in the previous answer's document, near its section
        # (the title alone drew the document's first section: 「那剩下的酒要倒掉吗」 → 适用范围,
        # 「要是吐了呢」 after a drunk guest → minors). 「那要不要打120」 names none: it continues the section.
        heading = (prev.get("top_section") or "").split(" > ")[-1]
        new_thing = _names_a_new_thing(core)
        context = f"{prev['top_document']} {heading}".strip() if new_thing or not heading else heading
        state.resolved_query = f"{context} {core}".strip()
        if new_thing:
            state.follow_up_alone = core


def _coverage(words: list[str], hit) -> float:
    """The share of a follow-up's new words that a section's own heading or text contains (not
    the document's title: 「开店」 is in 「开店与闭店流程」, whichever of its sections it is)."""
    if hit is None or not words:
        return 0.0
    text = f"{hit.heading} {hit.text}"
    return sum(1 for w in words if w in text) / len(words)


def read_follow_up(state: AgentState, resolved, search_alone):
    """A follow-up that names a new thing, read both ways: within the previous answer (the
    resolved query) and on its own. The previous section's words in the resolved query pulled
    it back to that section (「那换桶呢」 after a sour-beer question answered the sour-beer steps
    again; 「开店呢」 after 关店流程 the closing section): the reading on its own is taken when its
    best section holds more of the new words than the resolved reading's best does. Returns the
    search result to use; `search_alone(query)` searches a query."""
    core = state.follow_up_alone
    if not core or resolved is None:
        return resolved
    words = _new_words(core)
    within = _coverage(words, resolved.top)
    if within == 1.0:  # the reading within the previous answer already holds every new word
        return resolved
    alone = search_alone(core)
    own = _coverage(words, alone.top)
    with state.trace.step("follow_up_reading") as detail:
        detail.update(new_words=words, within_previous=round(within, 2), on_its_own=round(own, 2),
                      chosen="on_its_own" if own > within else "within_previous")
    if own > within:
        state.resolved_query = core
        return alone
    return resolved


# An amount names no new thing: 「那要是三千块呢」 after the write-off rule asks about that rule.
_AMOUNT = re.compile(r"^[\d零〇一二两三四五六七八九十百千万几]+(块钱?|元|箱|瓶|天|次|个|人|桌|分钟|小时)?$")


def _new_words(core: str) -> list[str]:
    return [t for t in tokenize(core) if len(t) >= 2 and not t.isdigit() and not _AMOUNT.match(t) and t not in vocab.FOLLOW_UP_FUNCTION_WORDS]


def _names_a_new_thing(core: str) -> bool:
    """Does a follow-up name something of its own (团购券, 退卡, 客人…不舒服), or only ask more
    about the last answer (要不要打120, 要多久, 要多少钱)?"""
    return bool(_new_words(core))
