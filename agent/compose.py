"""Answer composition and the four guards that hold whatever wrote the draft to the sources.

Numbering: document chunks are [1], [2] …; data rows are [D1], [D2] …. The same function
numbers the prompt and the response's source lists, so they can't disagree.

Guards (in code, not in the prompt):
1. a citation that points at no source is removed;
2. documents and data rows are numbered separately;
3. when a tool returns a list, every row appears in the answer (missing ones appended);
4. a mandatory conditional clause (corpus metadata: triggers → clause) is always included
   when the question matches its scenario.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

from knowledge.chunking import split_sentences
from knowledge.models import Chunk, Document
from knowledge.selectors import Hit, SectionUnit, index_cached, section_units
from knowledge.text import tokenize
from ops.tools import ToolResult

from . import vocabulary as vocab

_DOC_REF = re.compile(r"\[(\d+)\]")
_DATA_REF = re.compile(r"\[D(\d+)\]")


@dataclass
class Sources:
    citations: list[dict] = field(default_factory=list)  # [{"ref": "1", document, section_path, score, text, chunk_id}]
    data: list[dict] = field(default_factory=list)  # [{"ref": "D1", tool, params, row}]
    sections: dict[str, list[SectionUnit]] = field(default_factory=dict)  # ref → the whole section, unit by unit (not serialised)

    def doc_refs(self) -> set[str]:
        return {c["ref"] for c in self.citations}

    def data_refs(self) -> set[str]:
        return {d["ref"] for d in self.data}


def _units(hit: Hit, qvec, memo: dict | None) -> list[SectionUnit]:
    """A section's units, read once per question (selection and numbering share `memo`)."""
    if memo is None:
        return section_units(hit, qvec)
    if hit.chunk_id not in memo:
        memo[hit.chunk_id] = section_units(hit, qvec)
    return memo[hit.chunk_id]


def number_sources(hits: list[Hit], tool_result: ToolResult | None, *, qvec=None, units: dict | None = None) -> Sources:
    """The single place where source numbers are assigned (prompt and response alike). A
    cited source is the whole section its chunk belongs to: an answer (and the LLM's prompt)
    never stops at a chunk boundary halfway through a procedure."""
    sources = Sources()
    for i, hit in enumerate(hits, start=1):
        section = _units(hit, qvec, units)
        ref = str(i)
        sources.sections[ref] = section
        sources.citations.append({
            "ref": ref, "document": hit.document, "section_path": hit.section_path, "score": round(hit.score, 4),
            "vector_score": round(hit.vector_score, 4) if hit.vector_score is not None else None,
            "text": section_text(section) or hit.text, "chunk_id": hit.chunk_id, "document_id": hit.document_id,
            "version": hit.version, "page": hit.page,
            # A manager linked this question to this section: the most relevant source there is,
            # whatever its similarity (its grade says so, so it is not listed 中 above a 高).
            **({"taught": True} if getattr(hit, "taught", False) else {}),
        })
    if tool_result is not None:
        columns = list(tool_result.columns) + [k for k in (tool_result.rows[0] if tool_result.rows else {}) if k not in tool_result.columns]
        for i, row in enumerate(tool_result.rows, start=1):
            # jsonb does not keep key order: the column order travels with the row.
            sources.data.append({"ref": f"D{i}", "tool": tool_result.tool, "params": tool_result.params, "row": row,
                                 "columns": columns, "shown": list(tool_result.columns)})
    return sources


def prompt_sources(sources: Sources) -> str:
    parts = []
    if sources.citations:
        parts.append("参考资料：")
        parts += [f"[{c['ref']}] {c['section_path']}\n{c['text']}" for c in sources.citations]
    if sources.data:
        parts.append("经营数据：")
        parts += [f"[{d['ref']}] {d['tool']} {d['row']}" for d in sources.data]
    return "\n\n".join(parts)


# --- extractive composition (SM_LLM_BACKEND=none, and the fallback when an LLM is down) --------


MAX_LINES = 8  # an answer's length, unless the procedure or table it must keep whole is longer
SECOND_SECTION_MARGIN = 0.01  # a second section's best sentence must be this close to the first's


def section_text(units: list[SectionUnit]) -> str:
    lines, block = [], None
    for u in units:
        if lines and (u.kind != "sentence" or u.block != block):
            lines.append("\n")
        lines.append(u.text)
        block = u.block
    return "".join(lines).strip()


def select_citation_hits(hits: list[Hit], *, qvec=None, limit: int = 2, units: dict | None = None) -> list[Hit]:
    """The chosen section, and a second one only when it stands on its own: a different
    section whose best sentence is as close to the question as the first one's (never a
    runner-up that merely shares words)."""
    if not hits:
        return []
    chosen = [hits[0]]
    if qvec is None:
        return chosen
    best_first = max((u.similarity for u in _units(hits[0], qvec, units)), default=0.0)
    for hit in hits[1:3]:
        if len(chosen) >= limit or hit.section_path == hits[0].section_path:
            continue
        best = max((u.similarity for u in _units(hit, qvec, units)), default=0.0)
        if best >= best_first - SECOND_SECTION_MARGIN and hit.score >= hits[0].score * 0.8:
            chosen.append(hit)
    return chosen


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


def _lead(units: list[SectionUnit], terms: set[str], quantity: tuple[float, str] | None = None) -> SectionUnit:
    """The unit that answers the question: closest to it by its own vector; words in common
    break ties (and decide alone when no vectors were compared). When the question states an
    amount or a duration and the closest units (within 0.05) state alternative thresholds for it
    (「10 元以内…」「超过 10 元…」), the one the amount meets goes first. A lone threshold decides
    nothing: 「停电快40分钟」 met 「闭店后 45 分钟内完成闭店工作」, which is about something else."""
    best = max((u.similarity for u in units), default=0.0)
    band = {id(u) for u in units if u.similarity >= best - 0.05}
    fits = {id(u): condition_fit(u.text, quantity) for u in units if id(u) in band} if quantity else {}
    alternatives = 1 in fits.values() and -1 in fits.values()

    def key(iu):
        i, u = iu
        return (id(u) in band, fits.get(id(u), 0) if alternatives else 0, round(u.similarity, 3),
                len(terms & set(tokenize(u.text))), -i)
    return max(enumerate(units), key=key)[1]


def section_lines(units: list[SectionUnit], terms: list[str], *, budget: int = MAX_LINES,
                  quantity: tuple[float, str] | None = None) -> list[str]:
    """Lead with the unit that answers the question, then the rest of the section that is
    relevant, in the document's order. A numbered or bulleted procedure and a table stay
    whole; a short section is given whole. `quantity`: the amount or duration the question
    states (question_quantity), which picks among a rule's thresholds."""
    if not units:
        return []
    term_set = set(terms)
    lead = _lead(units, term_set, quantity)
    # Chosen among alternative thresholds: it stands on its own, not after the others.
    lead_fits = quantity is not None and condition_fit(lead.text, quantity) > 0 \
        and any(condition_fit(u.text, quantity) < 0 for u in units)
    lines: list[SectionUnit] = []

    def add_block(block: int):
        intro = [u for u in units if u.block == block - 1 and u.kind == "sentence" and u.text.rstrip().endswith(("：", ":"))]
        for u in intro[-1:] + [u for u in units if u.block == block]:
            if u not in lines:
                lines.append(u)

    if lead.kind == "item":
        add_block(lead.block)
    else:
        lines.append(lead)
    if len(units) <= budget:
        rest = [u for u in units if u not in lines]
    else:
        bar = lead.similarity - 0.04
        rest = [u for u in units if u not in lines and (u.similarity >= bar or term_set & set(tokenize(u.text)))]
    for u in rest:
        if u in lines:
            continue
        if u.kind == "item":
            if len(lines) + sum(1 for x in units if x.block == u.block) > budget and len(units) > budget:
                continue
            add_block(u.block)
        elif len(lines) < budget or len(units) <= budget:
            lines.append(u)
    # A one-line extract (a second section's lead) keeps its lead: the opening of its run would
    # push out the very clause that answers («一个月内迟到 3 次扣除当月全勤奖» lost to «迟到 10 分钟以内…»).
    before = _what_it_points_back_to(units, lines[0]) if budget > 1 else []
    if before:
        head = [*before, lines[0]]
    elif lead_fits and condition_fit(lines[0].text, quantity) > 0:  # 「超过 10 元的…」 stands on its own in its 「；」 run
        head = [lines[0]]
    else:
        first = _start_of_enumeration(units, lines[0]) if budget > 1 else lines[0]
        head = [first]
    for u in head:
        if u not in lines:
            lines.append(u)
    ordered = head + [u for u in units if u in lines and u not in head]
    return [u.text.rstrip() for u in ordered]


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


def second_section_lines(units: list[SectionUnit], terms: list[str], *, quantity: tuple[float, str] | None = None) -> list[str]:
    """A second section adds the one unit that answers, with what it cannot stand without: a
    list item with its intro, a clause of a 「；」 run with the run's opening (which names what the
    run is: 「禁止发布：」, 「单次报损金额…」), a list's intro with its closest item. One line came out as
    「会员信息、订单截图、销售数据和后台系统页面；」 without 禁止, or as 「出现以下任一情况…必须立即叫店长：」
    with no list after it."""
    if not units:
        return []
    lead = _lead(units, set(terms), quantity)
    if lead.kind == "item":
        intro = [u for u in units if u.block == lead.block - 1 and u.kind == "sentence" and u.text.rstrip().endswith(("：", ":"))]
        return [u.text.rstrip() for u in [*intro[-1:], lead]]
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
        quantity = question_quantity(question)
        chosen = section_lines(units, terms, quantity=quantity) if i == 0 else second_section_lines(units, terms, quantity=quantity)
        out += [f"{line}[{c['ref']}]" for line in chosen]
    return "\n".join(out)


ROW_FORMATS = {
    "store_sales": lambda r: f"{r['store']}：营业额 ¥{r['revenue']:,.2f}，订单 {r['orders']} 单，客单价 ¥{r['avg_ticket']:,.2f}",
    "top_products": lambda r: f"第 {r['rank']} 名 {r['product']}：{r['qty']}{r['unit']}，销售额 ¥{r['revenue']:,.2f}",
    "compare_stores": lambda r: f"第 {r['rank']} 名 {r['store']}：营业额 ¥{r['revenue']:,.2f}（占 {r['revenue_share']}%），订单 {r['orders']} 单，客单价 ¥{r['avg_ticket']:,.2f}",
    "hourly_peak": lambda r: f"{r['hour']}：{r['orders']} 单，¥{r['revenue']:,.2f}",
    "daily_trend": lambda r: (f"{r['store']} " if r.get("store") else "") + f"{r['date']}（{r['weekday']}）：¥{r['revenue']:,.2f}，{r['orders']} 单",
    "product_sales": lambda r: f"{r['store']}：卖出 {r['qty']:,}{r['unit']}，销售额 ¥{r['revenue']:,.2f}，{r['orders']} 单",
    "low_stock": lambda r: (
        f"{r['store']} {r['product']}：在库 {r['on_hand']}{r['unit']}，安全库存 {r['safety_stock']}，"
        f"近7天日均 {r['velocity_per_day']}，建议补 {r['suggested_qty']}{r['unit']}"
    ),
    "period_compare": lambda r: (
        (r["period"] if r["start"] in r["period"] else f"{r['period']}（{r['start']} 至 {r['end']}）")
        + f"：营业额 ¥{r['revenue']:,.2f}，{r['orders']} 单，客单价 ¥{r['avg_ticket']:,.2f}"
    ),
    "channel_sales": lambda r: (
        f"{r['channel']}：营业额 ¥{r['revenue']:,.2f}（占 {r['revenue_share']}%），{r['orders']} 单"
        + (f"；退款 {r['refunded_orders']} 单，¥{r['refunded_amount']:,.2f}" if r["refunded_orders"] else "")
    ),
    "product_stock": lambda r: (
        f"{r['store']} {r['product']}：在库 {r['on_hand']}{r['unit']}（安全库存 {r['safety_stock']}）"
        + ("，账面库存为负，多半是入库漏记或销售录错，请盘点核对" if r["on_hand"] < 0 else "")
        + f"，近7天日均 {r['velocity_per_day']}"
        + (f"，约够卖 {r['days_of_cover']} 天" if r["days_of_cover"] is not None else "")
        + (f"，建议补 {r['suggested_qty']}{r['unit']}" if r["on_hand"] < r["safety_stock"] else "")
    ),
    "member_balance": lambda r: (
        f"会员 {r['member']}（{r['name']}，{r['phone']}）：本金 ¥{r['principal_balance']:,.2f}，赠送 ¥{r['bonus_balance']:,.2f}，开卡门店 {r['home_store']}"
        + (f"；本店可用 ¥{r['usable_here']:,.2f}（赠送余额只能在开卡门店使用）" if "usable_here" in r else "")
    ),
}


def _labelled_row(row: dict) -> str:
    """Any tool without its own sentence: 「门店 广州天河店，营业额 ¥1.00」 from the column metadata."""
    from ops.tools import column, format_cell

    return "，".join(f"{column(k).label} {format_cell(k, row)}" for k in row if k != "unit")


def row_key(tool: str, row: dict) -> str:
    """The value that identifies a row in prose (guard 3 looks for it)."""
    if tool in ("product_sales", "product_stock"):  # one product, a row per store
        return str(row["store"])
    for key in ("product", "store", "hour", "date", "member", "channel", "period"):
        if key in row:
            return str(row[key])
    return ""


def _per_store_trend_lines(sources: Sources) -> list[str]:
    lines = []
    for store in dict.fromkeys(d["row"]["store"] for d in sources.data):
        mine = [d for d in sources.data if d["row"]["store"] == store]
        if not any(d["row"]["orders"] for d in mine):
            lines.append(f"- {store}：没有已支付订单 [{mine[0]['ref']}]")
            continue
        best = max(mine, key=lambda d: d["row"]["revenue"])
        worst = min(mine, key=lambda d: d["row"]["revenue"])
        total = sum(d["row"]["revenue"] for d in mine)
        lines.append(f"- {store}：合计 ¥{total:,.2f}，{sum(d['row']['orders'] for d in mine):,} 单；"
                     f"最高 {best['row']['date']}（{best['row']['weekday']}）¥{best['row']['revenue']:,.2f} [{best['ref']}]，"
                     f"最低 {worst['row']['date']}（{worst['row']['weekday']}）¥{worst['row']['revenue']:,.2f} [{worst['ref']}]")
    return lines


def extractive_data_answer(tool_result: ToolResult, sources: Sources, question: str = "", *, store_named: bool = False) -> str:
    """`store_named`: the question named its store (the plan's, not the tool's resolved scope)."""
    summary = tool_result.summary
    # 「上周天河店的营业额：…」 leads into the rows; a summary that is one sentence (a member's
    # balance, the busiest hours) stays as it is.
    lines = [summary.split("：")[0] + "：" if tool_result.rows and "：" in summary else summary]
    fmt = ROW_FORMATS.get(tool_result.tool, _labelled_row)
    if tool_result.tool == "channel_sales":  # 「上个月外卖卖了多少」: that channel's figure first, then all three
        asked = [d for d in sources.data if d["row"]["channel"] in question]
        if len(asked) == 1:
            lines[0] = lines[0].removesuffix("：").removesuffix(" 按渠道") + f" {fmt(asked[0]['row'])} [{asked[0]['ref']}]。各渠道："
    if tool_result.tool == "daily_trend" and "store" in tool_result.columns:
        # A series per store (head office's 「各店每天营业额趋势」): per store its total and its best
        # and weakest day; every day of every store is in the chart and the table below.
        lines += _per_store_trend_lines(sources)
        return "\n".join(lines)
    for d in sources.data:
        lines.append(f"- {fmt(d['row'])} [{d['ref']}]")
    if tool_result.tool == "daily_trend" and len(sources.data) > 1 and any(d["row"]["orders"] for d in sources.data):
        # 「上周哪天生意最好」: the best and the weakest day, not only the list
        best = max(sources.data, key=lambda d: d["row"]["revenue"])
        worst = min(sources.data, key=lambda d: d["row"]["revenue"])
        lines.append(f"营业额最高的是 {best['row']['date']}（{best['row']['weekday']}）¥{best['row']['revenue']:,.2f} [{best['ref']}]，"
                     f"最低的是 {worst['row']['date']}（{worst['row']['weekday']}）¥{worst['row']['revenue']:,.2f} [{worst['ref']}]。")
    if tool_result.tool == "product_sales" and len(sources.data) > 1 and vocab.WHICH_STORE.search(question) \
            and any(d["row"]["qty"] for d in sources.data):
        # 「上周哪家店科罗娜卖得最多」: the store that sold most, not only the list in store order
        best = max(sources.data, key=lambda d: d["row"]["qty"])
        lines.append(f"卖得最多的是{best['row']['store']}：{best['row']['qty']:,}{best['row']['unit']} [{best['ref']}]。")
    if tool_result.tool == "period_compare":  # the change itself, after both periods' figures
        lines.append(tool_result.summary.split("；", 1)[-1])
    if tool_result.tool == "store_sales" and "日均" in question and (period := tool_result.params.get("period")):
        days = (date.fromisoformat(period["end"]) - date.fromisoformat(period["start"])).days + 1
        revenue = sum(d["row"]["revenue"] for d in sources.data)
        orders = sum(d["row"]["orders"] for d in sources.data)
        lines.append(f"{days} 天日均营业额 ¥{revenue / days:,.2f}，日均 {orders / days:.1f} 单。")  # 「最近7天日均营业额多少」
    if tool_result.tool == "channel_sales" and tool_result.rows:  # 「昨天退款了几单」: the refunds in one line
        lines.append("合计" + tool_result.summary.rsplit("；", 1)[-1])
    if tool_result.tool in ("store_sales", "product_sales") and len(tool_result.rows) > 1 and "：" in tool_result.summary:
        lines.append(tool_result.summary.split("：", 1)[-1].replace("（只计已支付订单）", "（合计，只计已支付订单）"))
    # Only when no store was named: asked for every store, the one row is all the asker may see
    # (「天河店上周卖了多少，占全公司多少」 from head office named one store on purpose).
    if tool_result.tool in ("store_sales", "product_sales") and len(tool_result.rows) == 1 and not store_named \
            and (vocab.ALL_STORES_ASKED.search(question) or vocab.WHICH_STORE.search(question)):
        # 「四家店上周各卖了多少」 from a one-store manager showed that store alone, as if the chain had one.
        lines.append(f"你能查看的门店只有{tool_result.rows[0]['store']}；其他门店的数据请找总部。")
    return "\n".join(lines)




def proposals_status_answer(user, items: list, total: int, *, awaiting_me: bool) -> str:
    """Where each proposal stands, in one line each, and where to see (and, for those who may,
    decide) them: the 「操作提案」 page."""

    page = next(url for _, name, url, _ in vocab.PAGES if name == "操作提案")
    if not items:
        return (f"你能确认的门店里，目前没有待确认的提案（「操作提案」页面：{page}）。" if awaiting_me
                else "你还没有提交过提案。要补货可以说「帮我补两箱青岛」。")
    if awaiting_me:
        head = f"待你确认的提案共 {total} 个" + (f"，最近 {len(items)} 个：" if total > len(items) else "：")
    else:
        head = f"你最近提交的 {len(items)} 个提案："

    lines = [f"- #{p.pk} {p.get_kind_display()} · {p.store.name} · {p.content_text()} · {_stands(p)}" for p in items]
    return "\n".join([head, *lines, _where_to_decide(user, items, page)])


def proposal_number_answer(user, pk: int, proposal) -> str:
    """「提案6是什么」: that proposal in one line, or that there is none the asker may see."""
    page = next(url for _, name, url, _ in vocab.PAGES if name == "操作提案")
    if proposal is None:
        return f"没有提案 #{pk}，或者它不属于你的门店（「操作提案」页面：{page}）。"
    p = proposal
    by = p.proposed_by.username if p.proposed_by else "—"
    return "\n".join([f"提案 #{p.pk}：{p.get_kind_display()} · {p.store.name} · {p.content_text()}（{by} 提交）· {_stands(p)}",
                      _where_to_decide(user, [p], page)])


def _stands(p) -> str:
    from core.localtime import local_time
    from workflow.models import Proposal

    when = local_time(p.decided_at, p.store).strftime("%m-%d %H:%M") if p.decided_at else ""
    who = p.decided_by.username if p.decided_by else "系统"
    if p.status == Proposal.Status.PENDING:
        return "待确认"
    if p.status == Proposal.Status.REJECTED:
        return f"已拒绝（{who}，{when}）：{p.decision_note}"
    return f"{p.get_status_display()}（{who}，{when}）"


def _where_to_decide(user, items: list, page: str) -> str:
    from workflow.models import CONFIRM_PERMS

    decides = any(p.status == "pending" and user.has_perm(CONFIRM_PERMS[p.kind]) for p in items)  # staff confirm tickets, not restocks
    return f"详情和确认、拒绝都在「操作提案」页面（{page}）。" if decides else f"详情在「操作提案」页面（{page}）。"


# --- the guards ----------------------------------------------------------------------------


def guard_unknown_citations(answer: str, sources: Sources) -> tuple[str, list[str]]:
    """Guard 1: drop [n] / [Dn] markers that point at no source."""
    removed = []
    docs, data = sources.doc_refs(), sources.data_refs()

    def doc(m):
        if m.group(1) in docs:
            return m.group(0)
        removed.append(m.group(0))
        return ""

    def row(m):
        if f"D{m.group(1)}" in data:
            return m.group(0)
        removed.append(m.group(0))
        return ""

    return _DATA_REF.sub(row, _DOC_REF.sub(doc, answer)), removed


def guard_all_rows(answer: str, tool_result: ToolResult | None, sources: Sources) -> tuple[str, list[str]]:
    """Guard 3: every row of a list result appears in the answer."""
    if tool_result is None or len(tool_result.rows) < 2:
        return answer, []
    fmt = ROW_FORMATS.get(tool_result.tool, _labelled_row)
    missing = []
    for d in sources.data:
        key = row_key(tool_result.tool, d["row"])
        if key and key not in answer:
            missing.append(f"- {fmt(d['row'])} [{d['ref']}]")
    if missing:
        answer = answer.rstrip() + "\n" + "\n".join(missing)
    return answer, [m.split(" [")[0].lstrip("- ") for m in missing]


def mandatory_rules(audiences) -> list[dict]:
    """The conditional clauses (front matter `mandatory`) of the documents the reader may see,
    read once per ingest."""
    from knowledge.selectors import as_visibility

    vis = as_visibility(audiences)

    def read() -> list[dict]:
        rules = []
        for doc in Document.objects.visible_to(vis).exclude(meta__mandatory=None).only("title", "meta"):
            for rule in doc.meta.get("mandatory") or []:
                rules.append({**rule, "document": doc.title, "document_id": doc.id})
        return rules

    return index_cached(("mandatory", vis), read)


def guard_mandatory_clauses(question: str, answer: str, sources: Sources, audiences) -> tuple[str, list[str]]:
    """Guard 4: when the question matches a scenario, its conditional clause is always there."""
    added = []
    cited_documents = {c.get("document_id") for c in sources.citations}
    for rule in mandatory_rules(audiences):
        if not _triggered(rule, question, cited_documents):
            continue
        must = rule.get("must_contain") or rule["clause"]
        if must in answer:
            continue
        ref = _citation_for_section(sources, rule["document_id"], rule.get("section", ""))
        answer = answer.rstrip() + f"\n{rule['clause']}" + (f"[{ref}]" if ref else "")
        added.append(rule["clause"])
    return answer, added


def _triggered(rule: dict, question: str, cited_documents: set) -> bool:
    """A trigger word (「拉肚子」) is in the question; or a word with everyday senses the rule does
    not mean (`context_triggers`: 「过期」 of a voucher, 「坏了」 of a machine) is, and the answer's
    sources include the rule's own document: the question is about that scenario."""
    if any(t in question for t in rule.get("triggers", [])):
        return True
    return rule["document_id"] in cited_documents and any(t in question for t in rule.get("context_triggers", []))


def _citation_for_section(sources: Sources, document_id: int, heading: str) -> str | None:
    chunk = Chunk.objects.filter(document_id=document_id, section_path__endswith=heading).select_related("document").first()
    if chunk is None:
        return None
    for c in sources.citations:
        if c.get("chunk_id") == chunk.id:
            return c["ref"]
    ref = str(len(sources.citations) + 1)
    sources.citations.append({
        "ref": ref, "document": chunk.document.title, "section_path": chunk.section_path, "score": 0.0,
        "text": chunk.text, "chunk_id": chunk.id, "document_id": document_id,
    })
    return ref


def apply_guards(question: str, answer: str, sources: Sources, tool_result: ToolResult | None, audiences,
                 *, mandatory: bool = True) -> tuple[str, dict]:
    report = {}
    answer, report["rows_appended"] = guard_all_rows(answer, tool_result, sources)
    if mandatory:
        answer, report["clauses_added"] = guard_mandatory_clauses(question, answer, sources, audiences)
    answer, report["citations_removed"] = guard_unknown_citations(answer, sources)
    return answer.strip(), report


SYSTEM_PROMPT = """你是连锁酒吧/餐饮门店的运营助手，回答店员和店长的问题。规则：
1. 只根据给出的参考资料和经营数据回答，不要编造；资料里没有的就说"现有资料没有相关规定"。
2. 每句话后面标注来源编号：参考资料用 [1] [2]，经营数据用 [D1] [D2]，不要混用。
3. 金额、天数、温度等数字必须原样引用。
4. 经营数据有多行时，逐行列出，不要只挑其中一条。
5. 用简洁的中文回答，不超过 200 字，不要输出思考过程。"""
