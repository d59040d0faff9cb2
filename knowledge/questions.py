"""Question forms the product writes for a section at ingest (自动生成的问法), with no LLM.

A chain's SOPs come with no questions, and a question staff type is worded like a question,
not like the SOP. Each section gets a few forms from templates over what it is made of: its
heading (「3.2 鲜奶储存」 → 「鲜奶储存有什么要求」, a generic 「适用范围」 → 「《…》的适用范围」), its
numbered steps and list items, and its table rows (「鲜奶 | 0–4℃ | 48 小时」 under 物料 / 储存温度 /
保质期 → 「鲜奶的储存温度和保质期是多少」). They are embedded as questions (e5's `query:` side),
so question meets question in the alias channel, and they give every corpus the same signals.

Pure functions: no database, no model. The ingest service embeds and stores what comes out.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .chunking import TABLE_RULE, _blocks, split_sentences

MAX_FORMS_PER_SECTION = 12
MAX_FORM_CHARS = 48
# Raised whenever the templates (or the chunking they read) change: the next ingest prepares
# every document again.
FORMS_VERSION = 5

# Heading numbering as SOPs write it: 一、 （一） 1. 1.1 1.1.1 第一章 第3条 (一) 1）…
_NUMBERING = re.compile(
    r"^\s*(第[一二三四五六七八九十百零〇\d]+[章节条款部分篇]|[（(][一二三四五六七八九十\d]+[)）]|[一二三四五六七八九十]+[、.．]|"
    r"\d+(?:[.．]\d+)*[、.．)）]?|[A-Za-z][.、)])\s*")
# Headings that name a part of every SOP rather than a topic: they take the document's title.
GENERIC_HEADINGS = frozenset(
    "目的 目标 适用范围 范围 职责 职责分工 岗位职责 定义 术语 术语和定义 总则 附则 说明 概述 简介 背景 参考 参考文件 相关文件 相关文档 "
    "引用文件 记录 记录与表单 表单 附件 附录 注意事项 要求 基本要求 一般要求 原则 基本原则 工作原则 流程 操作流程 作业流程 工作流程 "
    "程序 作业程序 操作步骤 步骤 标准 内容 管理要求 执行 监督检查 检查 考核 奖惩 培训 修订记录 版本记录 生效 实施 其他".split())
_ASKS_HOW = re.compile(r"流程|步骤|方法|操作|程序|处理|做法|办法|作业|制作|清洗|清洁|消毒|交接|应对|应急")
_ASKS_WHO = re.compile(r"权限|审批|授权|职责|分工|责任|负责")
_ASKS_WHEN = re.compile(r"时间|时限|频次|频率|周期|时效|期限|效期|保质")
_ASKS_WHAT = re.compile(r"标准|要求|规定|规范|规则|原则|条件|范围|须知|注意|禁止|红线")


@dataclass(frozen=True)
class QuestionForm:
    text: str
    source: str  # "heading" | "situation" | "step" | "table"


def clean_heading(heading: str) -> str:
    """A heading without its numbering: 「3.2 鲜奶储存」 → 「鲜奶储存」, 「第一条 总则」 → 「总则」."""
    text = _NUMBERING.sub("", heading or "", count=1).strip()
    return text.strip("：: ") or (heading or "").strip()


def _heading_forms(title: str, path: list[str]) -> list[QuestionForm]:
    heading = clean_heading(path[-1]) if path else title
    parent = clean_heading(path[-2]) if len(path) >= 2 else ""
    if heading in GENERIC_HEADINGS or len(heading) <= 1:
        subject = f"{parent}的{heading}" if parent and parent not in GENERIC_HEADINGS else f"{title}的{heading}"
        return [QuestionForm(subject, "heading"), QuestionForm(f"{subject}是什么", "heading")]
    forms = [QuestionForm(heading, "heading")]
    if _ASKS_WHO.search(heading):
        forms.append(QuestionForm(f"{heading}是谁负责，谁审批", "heading"))
    if _ASKS_WHEN.search(heading):
        forms.append(QuestionForm(f"{heading}是多久", "heading"))
    if _ASKS_HOW.search(heading):
        forms.append(QuestionForm(f"{heading}怎么做", "heading"))
    if _ASKS_WHAT.search(heading) or len(forms) == 1:
        forms.append(QuestionForm(f"{heading}有什么要求", "heading"))
    if parent and parent not in GENERIC_HEADINGS and parent not in heading:
        forms.append(QuestionForm(f"{parent}{heading}", "heading"))
    return forms


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


_PARENTHESES = re.compile(r"[（(][^）)]*[）)]")
_NOT_ASKED = frozenset("备注 说明 序号 编号 代码 图示 附注".split())


def _key_column(header: list[str], body: list[list[str]]) -> int:
    """The column that names what a row is about: the first in which at least half the cells are
    words, not codes or figures (「R01 | 卤肉饭 | 26 元」 is about 卤肉饭)."""
    for i, name in enumerate(header):
        cells = [r[i] for r in body if i < len(r) and r[i]]
        if name not in _NOT_ASKED and cells and sum(1 for c in cells if not re.search(r"\d", c)) * 2 >= len(cells):
            return i
    return 0


def _table_forms(table: str) -> list[QuestionForm]:
    """「鲜奶的储存温度和保质期是多少」 per row: what the row is about, with the other columns' headers."""
    rows = [r for r in table.split("\n") if r.strip() and not TABLE_RULE.match(r.strip())]
    if len(rows) < 2:
        return []
    header = [_PARENTHESES.sub("", h).strip() for h in _cells(rows[0])]
    body = [_cells(r) for r in rows[1:]]
    k = _key_column(header, body)
    asked = [h for i, h in enumerate(header) if i != k and h and h not in _NOT_ASKED][:3]
    forms = []
    for cells in body:
        key = cells[k] if k < len(cells) else ""
        if not key or len(key) > 24:
            continue
        forms.append(QuestionForm(f"{key}的{'和'.join(asked)}是多少" if asked else key, "table"))
    return forms


def _step_forms(text: str) -> list[QuestionForm]:
    """Each numbered step or list item, and each paragraph's first sentence, as a question would say it."""
    forms = []
    for kind, body in _blocks(text.split("\n")):
        if kind == "table":
            continue
        if kind == "list":
            items = [re.sub(r"^(\d+[.．、]|[-*+])\s*", "", line).strip() for line in body.split("\n") if line.strip()]
        else:
            items = split_sentences(body)[:1]
        for item in items:
            item = re.split(r"[；;。]", item)[0].strip("，, ")
            if len(item) >= 6:
                forms.append(QuestionForm(item[:MAX_FORM_CHARS], "step"))
    return forms


# A rule that says what to do in a situation (「如遇 TDS 超标，改用备用桶装饮用水」) answers the
# question staff ask about that situation (「TDS 超标怎么办」): the situation, as asked. 「当」 only
# as "when" (not 当场、当天、当班 …).
_CONDITION = re.compile(r"(?:^|(?<=[，。；;,：:\s时后中]))(?:若(?!干)|当(?![场天日班面前地月年次即值晚周期着事])|遇(?!到)|如果|假如|如遇到?|遇到|发现|一旦)"
                        r"(?P<what>[^，。；;,：:！？!?|的]{1}[^，。；;,：:！？!?|]{1,29}?)[，,：:]")
# A prohibition answers 「能不能…」: 「开店人员不得少于 2 人」 → 「开店人员能不能少于 2 人」.
_FORBIDDEN = re.compile(r"(?:^|(?<=[，。；;,：:\s]))(?P<who>[^，。；;,：:|]{0,16}?)(?:严禁|禁止|不得|不允许)(?P<what>[^，。；;,！？!?|]{2,24})")


def _situation_forms(text: str) -> list[QuestionForm]:
    forms = []
    prose = "\n".join(_NUMBERING.sub("", line.lstrip("-*+ "), count=1)  # a step's number is no part of its words
                      for line in text.split("\n") if not line.lstrip().startswith("|"))  # table rows have their own forms
    for sentence in split_sentences(prose):
        for m in _CONDITION.finditer(sentence):
            # The situation ends where the rule's action starts (「发现门锁有撬痕立即停止进入」).
            what = re.split(r"(?<=.)(?:时|后|的话|立即|立刻|马上|应|须|必须|一律|及时|需要|请|不得|禁止|不要)", m.group("what"), maxsplit=1)[0]
            what = what.strip(" 　").removesuffix("的")
            if len(what) >= 2 and not what.startswith(("需要", "必要", "有必要")):
                forms.append(QuestionForm(f"{what}怎么办", "situation"))
        for m in _FORBIDDEN.finditer(sentence):
            who, what = _NUMBERING.sub("", m.group("who"), count=1).strip(" 　"), m.group("what").strip(" 　：:")
            if len(what) >= 3:
                forms.append(QuestionForm(f"{who if 2 <= len(who) <= 10 else ''}能不能{what}", "situation"))
    return forms


def question_forms(title: str, section_path: str, text: str, *, limit: int = MAX_FORMS_PER_SECTION) -> list[str]:
    """The generated question forms of one section (heading forms first, then table rows and
    steps), distinct, at most `limit`."""
    path = [p for p in section_path.split(" > ") if p][1:] or [title]
    tables = [body for kind, body in _blocks(text.split("\n")) if kind == "table"]
    forms = _heading_forms(title, path) + [f for t in tables for f in _table_forms(t)] + _situation_forms(text) + _step_forms(text)
    out: list[str] = []
    for form in forms:
        t = " ".join(form.text.split())[:MAX_FORM_CHARS]
        if t and t not in out:
            out.append(t)
        if len(out) >= limit:
            break
    return out


def section_question_forms(title: str, chunks) -> list[tuple[str, str]]:
    """(section path, question form) for every section of a parsed document (its chunk drafts:
    a long section's chunks are read together)."""
    texts: dict[str, list[str]] = {}
    for draft in chunks:
        texts.setdefault(draft.section_path[:512], []).append(draft.text)
    return [(path, q) for path, parts in texts.items() for q in question_forms(title, path, "\n".join(parts))]
