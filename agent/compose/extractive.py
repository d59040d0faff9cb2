"""The extractive answer (SM_LLM_BACKEND=none, and the fallback when an LLM is down): which lines
of the chosen section answer the question, kept whole where a procedure or a table must be."""
from __future__ import annotations

import re

from knowledge.answerability import asked_types, states_type
from knowledge.chunking import TABLE_RULE, split_sentences
from knowledge.selectors import SectionUnit
from knowledge.text import tokenize

from .sources import Sources

MAX_LINES = 8  # an answer's length, unless the procedure or table it must keep whole is longer


TABLE_ROWS_WHOLE = 6  # a table with more body rows than this shows only the rows the question names, when it names some


def _shown(unit: SectionUnit, terms: set[str]) -> str:
    """A unit as the answer shows it. A long table (a storage chart of 30 items) shows its header
    and the rows that name one of the question's words, with a line saying how many it leaves
    out; a table whose rows the question names all or none of stays whole."""
    text = unit.text.rstrip()
    if unit.kind != "table":
        return text
    lines = text.split("\n")
    header = [ln for ln in lines[:2] if ln.strip()]
    if len(header) < 2 or not TABLE_RULE.match(header[1].strip()):
        return text
    body = [ln for ln in lines[2:] if ln.strip()]
    words = [t for t in terms if len(t) >= 2]
    named = [ln for ln in body if any(w in ln for w in words)]
    if len(body) <= TABLE_ROWS_WHOLE or not named or len(named) == len(body):
        return text
    return "\n".join([f"（表中共 {len(body)} 行，这里列出与问题相关的 {len(named)} 行）", *header, *named])


# An amount or a duration in the question, and the thresholds a rule states for one: 「交班现金差了20块」
# led with 「10 元以内的记录在交接单上」 when 「超过 10 元的当场报告值班主管」 is the rule for 20.
_NUM = r"(\d+(?:\.\d+)?|[零〇一二两三四五六七八九十百千万]+)"


_UNIT_WORDS = {"元": "元", "块": "元", "块钱": "元", "分钟": "分钟", "小时": "小时", "天": "天"}


_UNIT = r"(块钱|元|块|分钟|小时|天)"


_QUANTITY = re.compile(_NUM + r"\s*" + _UNIT)


_UP_TO = re.compile(r"(?:不超过|不满|少于|低于)?\s*" + _NUM + r"\s*" + _UNIT + r"\s*(?:（含）)?\s*(以内|以下|之内|内)")


_NOT_OVER = re.compile(r"(不超过|不满|少于|低于)\s*" + _NUM + r"\s*" + _UNIT)


_OVER = re.compile(r"(超过|超出|大于|高于|满)\s*" + _NUM + r"\s*" + _UNIT + r"|" + _NUM + r"\s*" + _UNIT + r"\s*(?:（含）)?\s*(以上|及以上)")


_BETWEEN = re.compile(_NUM + r"\s*(?:" + _UNIT + r")?\s*(?:至|到|~|－|-|—)\s*" + _NUM + r"\s*" + _UNIT)


def _number(text: str) -> float | None:
    from ops.periods import cn_number

    try:
        return float(text) if text[0].isdigit() else float(cn_number(text))
    except (ValueError, IndexError):
        return None


def question_quantity(question: str) -> tuple[float, str] | None:
    """The one amount or duration a question states (「差了20块」 → (20, 元)); None for none or several."""
    # 「第七天」 is a day's place, not a duration.
    found = [(n, _UNIT_WORDS[m.group(2)]) for m in _QUANTITY.finditer(question or "")
             if question[max(0, m.start() - 1):m.start()] != "第" and (n := _number(m.group(1))) is not None]
    return found[0] if len(found) == 1 else None


def condition_fit(text: str, quantity: tuple[float, str] | None) -> int:
    """+1 when the sentence states a threshold in the quantity's unit that the quantity meets,
    -1 when it states one the quantity does not meet, 0 when it states none."""
    if quantity is None:
        return 0
    value, unit = quantity
    verdicts = []
    for m in _BETWEEN.finditer(text):
        lo, hi = _number(m.group(1)), _number(m.group(3))
        if _UNIT_WORDS[m.group(4)] == unit and lo is not None and hi is not None:
            verdicts.append(lo <= value <= hi)
    text = _BETWEEN.sub("", text)
    for m in _NOT_OVER.finditer(text):
        if _UNIT_WORDS[m.group(3)] == unit and (n := _number(m.group(2))) is not None:
            verdicts.append(value <= n)
    text = _NOT_OVER.sub("", text)
    for m in _UP_TO.finditer(text):
        if _UNIT_WORDS[m.group(2)] == unit and (n := _number(m.group(1))) is not None:
            verdicts.append(value <= n)
    for m in _OVER.finditer(text):
        raw, u = (m.group(2), m.group(3)) if m.group(2) else (m.group(4), m.group(5))
        if _UNIT_WORDS[u] == unit and (n := _number(raw)) is not None:
            verdicts.append(value > n if m.group(1) in ("超过", "超出", "大于", "高于") else value >= n)
    return 0 if not verdicts else (1 if all(verdicts) else -1)


def _lead(units: list[SectionUnit], terms: set[str], quantity: tuple[float, str] | None = None,
          asked: tuple[str, ...] = ()) -> SectionUnit:
    """The unit that answers the question: closest to it by its own vector; words in common
    break ties (and decide alone when no vectors were compared). When the question states an
    amount or a duration and the closest units (within 0.05) state alternative thresholds for it
    (「10 元以内…」「超过 10 元…」), the one the amount meets goes first. A lone threshold decides
    nothing: 「停电快40分钟」 met 「闭店后 45 分钟内完成闭店工作」, which is about something else.
    A question asking for a kind of figure (`asked`: 「洗手洗几秒」 a duration) is led, among the
    closest units, by one that states such a figure."""
    best = max((u.similarity for u in units), default=0.0)
    band = {id(u) for u in units if u.similarity >= best - 0.05}
    fits = {id(u): condition_fit(u.text, quantity) for u in units if id(u) in band} if quantity else {}
    alternatives = 1 in fits.values() and -1 in fits.values()

    def key(iu):
        i, u = iu
        return (id(u) in band, fits.get(id(u), 0) if alternatives else 0, bool(asked) and states_type(asked, u.text), round(u.similarity, 3),
                len(terms & set(tokenize(u.text))), -i)
    return max(enumerate(units), key=key)[1]


def _add_block(units: list[SectionUnit], lines: list[SectionUnit], block: int) -> None:
    """A numbered or bulleted run whole, with the sentence that introduces it (「…如下：」)."""
    for u in _intro_of(units, block) + [u for u in units if u.block == block]:
        if u not in lines:
            lines.append(u)


def _intro_of(units: list[SectionUnit], block: int) -> list[SectionUnit]:
    """The sentence that introduces a run (「…如下：」), when there is one."""
    return [u for u in units if u.block == block - 1 and u.kind == "sentence" and u.text.rstrip().endswith(("：", ":"))][-1:]


def _relevant(units: list[SectionUnit], lead: SectionUnit, term_set: set[str], budget: int) -> list[SectionUnit]:
    """The lead, then the section's units that are relevant (all of a short section), a run kept whole."""
    lines: list[SectionUnit] = []
    if lead.kind == "item":
        _add_block(units, lines, lead.block)
    else:
        lines.append(lead)
    bar = lead.similarity - 0.04
    if len(units) <= budget:
        rest = [u for u in units if u not in lines]
    else:
        # Past the budget, the closest lines are the ones kept (the answer shows them in the
        # document's order all the same).
        rest = sorted((u for u in units if u not in lines and (u.similarity >= bar or term_set & set(tokenize(u.text)))),
                      key=lambda u: -u.similarity)
    for u in rest:
        if u in lines:
            continue
        if u.kind == "item" and len(lines) + sum(1 for x in units if x.block == u.block) <= budget:
            _add_block(units, lines, u.block)
        elif u.kind == "item":
            # A run too long to give whole gives the items as close to the question as the lead,
            # each after the run's intro: 「洗手方法：…揉搓不少于 20 秒」 was dropped with the
            # fourteen lines of its run, and 「洗手洗几秒」 was answered 「必须洗手的时机：」 alone.
            if len(lines) < budget and u.similarity >= bar:
                lines.extend(i for i in _intro_of(units, u.block) if i not in lines)
                lines.append(u)
        elif len(lines) < budget or len(units) <= budget:
            lines.append(u)
    if lead.kind == "sentence" and lead.text.rstrip().endswith(("：", ":")):
        items = [u for u in units if u.block == lead.block + 1 and u.kind == "item"]
        if items and not any(u in lines for u in items):  # an intro never stands without its list
            lines.append(max(items, key=lambda u: u.similarity))
    return lines


def _head(units: list[SectionUnit], first: SectionUnit, lead_fits: bool, quantity, budget: int) -> list[SectionUnit]:
    """What the answer opens with: the lead, after what it points back to or the opening of its run."""
    # A one-line extract (a second section's lead) keeps its lead: the opening of its run would
    # push out the very clause that answers («一个月内迟到 3 次扣除当月全勤奖» lost to «迟到 10 分钟以内…»).
    before = _what_it_points_back_to(units, first) if budget > 1 else []
    if before:
        return [*before, first]
    if lead_fits and condition_fit(first.text, quantity) > 0:  # 「超过 10 元的…」 stands on its own in its 「；」 run
        return [first]
    return [_start_of_enumeration(units, first) if budget > 1 else first]


def section_lines(units: list[SectionUnit], terms: list[str], *, budget: int = MAX_LINES,
                  quantity: tuple[float, str] | None = None, asked: tuple[str, ...] = ()) -> list[str]:
    """Lead with the unit that answers the question, then the rest of the section that is
    relevant, in the document's order. A numbered or bulleted procedure and a table stay
    whole; a short section is given whole. `quantity`: the amount or duration the question
    states (question_quantity), which picks among a rule's thresholds; `asked`: the kinds of
    figure it asks for (asked_types)."""
    if not units:
        return []
    term_set = set(terms)
    lead = _lead(units, term_set, quantity, asked)
    # Chosen among alternative thresholds: it stands on its own, not after the others.
    lead_fits = quantity is not None and condition_fit(lead.text, quantity) > 0 \
        and any(condition_fit(u.text, quantity) < 0 for u in units)
    lines = _relevant(units, lead, term_set, budget)
    head = _head(units, lines[0], lead_fits, quantity, budget)
    for u in head:
        if u not in lines:
            lines.append(u)
    ordered = head + [u for u in units if u in lines and u not in head]
    return [_shown(u, term_set) for u in ordered]


# A sentence that opens by pointing back at what came before it: 「超出以上权限的一律交给店长」
# led the answer to 「客人要求赔钱 我能答应吗」 without the 权限 it refers to.
_POINTS_BACK = re.compile(r"(超出|除)?(以上|上述|前述|上面)|此外|另外|同时|否则|但|不过|这些|这种情况|除此之外")


def _what_it_points_back_to(units: list[SectionUnit], lead: SectionUnit) -> list[SectionUnit]:
    """The sentences of the lead's paragraph before it, when the lead points back at them."""
    if lead.kind != "sentence" or not _POINTS_BACK.match(lead.text.lstrip()):
        return []
    i = next((n for n, u in enumerate(units) if u is lead), 0)
    j = i
    while j > 0 and units[j - 1].block == lead.block and units[j - 1].kind == "sentence":
        j -= 1
    return units[j:i]


def _start_of_enumeration(units: list[SectionUnit], lead: SectionUnit) -> SectionUnit:
    """A clause in the middle of a 「；」 run reads wrong alone: 「安排员工关注，防止跌倒；」 led an
    answer without its 「对醉酒客人：」. Lead with the clause that opens the run instead."""
    i = next((n for n, u in enumerate(units) if u is lead), 0)
    while i > 0 and lead.kind == "sentence" and units[i - 1].block == lead.block and units[i - 1].kind == "sentence" \
            and units[i - 1].text.rstrip().endswith(("；", ";")):
        i -= 1
    return units[i]


def hedge(sources: Sources) -> str:
    """The line before an answer that only just passed: what follows is the closest rule found."""
    first = sources.citations[0]
    return (f"制度里没有找到完全对应的规定，下面是最接近的《{first['document']}》里的内容，仅供参考；"
            "情况不一样的话请问值班主管或店长。")


def second_section_lines(units: list[SectionUnit], terms: list[str], *, quantity: tuple[float, str] | None = None,
                         asked: tuple[str, ...] = ()) -> list[str]:
    """A second section adds the one unit that answers, with what it cannot stand without: a
    list item with its intro, a clause of a 「；」 run with the run's opening (which names what the
    run is: 「禁止发布：」, 「单次报损金额…」), a list's intro with its closest item. One line came out as
    「会员信息、订单截图、销售数据和后台系统页面；」 without 禁止, or as 「出现以下任一情况…必须立即叫店长：」
    with no list after it."""
    if not units:
        return []
    lead = _lead(units, set(terms), quantity, asked)
    if lead.kind == "table":
        return [_shown(lead, set(terms))]
    if lead.kind == "item":
        return [u.text.rstrip() for u in [*_intro_of(units, lead.block), lead]]
    opener = _start_of_enumeration(units, lead)
    if opener is not lead:  # 「300 元至 2000 元由区域经理审批；」 alone lacks the 「单次报损金额」 its run opens with
        return [opener.text.rstrip(), lead.text.rstrip()]
    if lead.text.rstrip().endswith(("：", ":")):
        items = [u for u in units if u.block == lead.block + 1 and u.kind == "item"]
        if items:
            return [lead.text.rstrip(), max(items, key=lambda u: u.similarity).text.rstrip()]
    return [lead.text.rstrip()]


def extractive_policy_answer(question: str, sources: Sources, terms: list[str]) -> str:
    """Answer from the chosen section (a second section, when cited, adds only its lead)."""
    out = []
    for i, c in enumerate(sources.citations):
        units = sources.sections.get(c["ref"]) or [SectionUnit("sentence", s, 0) for s in split_sentences(c["text"])]
        quantity, asked = question_quantity(question), asked_types(question)
        chosen = (section_lines(units, terms, quantity=quantity, asked=asked) if i == 0
                  else second_section_lines(units, terms, quantity=quantity, asked=asked))
        out += [f"{line}[{c['ref']}]" for line in chosen]
    return "\n".join(out)
