"""What every file parser produces, and the pieces they share.

A parsed file is a title and a list of sections in document order; a section has a heading
path (its headings from the top, the document title excluded), its body as Markdown lines
(paragraphs, `1.`/`-` list items, tables as Markdown tables with their header row), the page
it starts on (PDF), question aliases (a Q&A sheet's questions) and whether it is enabled.
Parsers never touch the database.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)


class FileRejected(ValueError):
    """A file that cannot be taken, with the reason in words a knowledge owner understands."""

    def __init__(self, message: str, *, code: str = "invalid"):
        super().__init__(message)
        self.message, self.code = message, code


def unreadable(what: str, exc: BaseException, *, code: str) -> FileRejected:
    """A file its parser could not read, said in a knowledge owner's words. The parser's own reason
    (「File is not a zip file」, 「XMLSyntaxError」) went to the upload page in English; it goes to
    the log, for whoever looks into it."""
    logger.info("upload refused, %s unreadable: %s: %s", what, type(exc).__name__, exc)
    return FileRejected(f"{what}已损坏，或内容不是扩展名所说的格式，无法打开。请用原来的软件打开它、另存一份再上传；"
                        "如果是下载或转发来的，请重新获取完整的文件。", code=code)


@dataclass
class Section:
    path: list[str]  # headings from the top (document title excluded); [] = before the first heading
    lines: list[str] = field(default_factory=list)  # Markdown body
    page: int | None = None
    aliases: list[str] = field(default_factory=list)
    enabled: bool = True

    @property
    def heading(self) -> str:
        return self.path[-1] if self.path else ""

    @property
    def text(self) -> str:
        return "\n".join(self.lines).strip()

    def as_dict(self) -> dict:
        return {"path": list(self.path), "text": self.text, "page": self.page, "aliases": list(self.aliases), "enabled": self.enabled}

    @classmethod
    def from_dict(cls, d: dict) -> Section:
        return cls(path=[str(p) for p in d.get("path") or []], lines=str(d.get("text") or "").split("\n"),
                   page=d.get("page"), aliases=[str(a) for a in d.get("aliases") or []], enabled=bool(d.get("enabled", True)))


@dataclass
class ParsedFile:
    title: str
    sections: list[Section]
    kind: str  # docx | pdf | xlsx | csv | pptx | html | md | txt
    warnings: list[str] = field(default_factory=list)
    meta: dict = field(default_factory=dict)  # Markdown front matter (doc_type, audience, mandatory …)


# --- headings written as numbering, when no heading style is used ------------------------------

_CN_NUM = "一二三四五六七八九十百零〇两"
# (kind, pattern); the kinds rank by the order a document first uses them (一、 then （一） then 1. …),
# except dotted decimals, which rank by their depth under the first decimal kind.
NUMBERING = (
    ("chapter", re.compile(rf"^第[{_CN_NUM}\d]+章\s*")),
    ("part", re.compile(rf"^第[{_CN_NUM}\d]+[节部分篇]\s*")),
    ("article", re.compile(rf"^第[{_CN_NUM}\d]+条\s*")),
    ("cn", re.compile(rf"^[{_CN_NUM}]+[、．.]\s*")),
    ("cn_paren", re.compile(rf"^[（(][{_CN_NUM}]+[)）]\s*")),
    ("decimal", re.compile(r"^\d+(?:[.．]\d+)+[.．]?\s+|^\d+(?:[.．]\d+)+(?=[\u4e00-\u9fff])")),
    ("num", re.compile(r"^\d+[、.．](?!\d)\s*")),
)
MAX_HEADING_CHARS = 30
_SENTENCE_END = re.compile(r"[。；;！!？?]$|[，,：:]$")


def numbering_kind(line: str) -> tuple[str, str] | None:
    """(kind, the text after the number) when `line` starts with outline numbering."""
    stripped = line.strip()
    for kind, pattern in NUMBERING:
        m = pattern.match(stripped)
        if m:
            return kind, stripped[m.end():].strip()
    return None


def decimal_depth(line: str) -> int:
    m = re.match(r"^(\d+(?:[.．]\d+)*)", line.strip())
    return len(re.split(r"[.．]", m.group(1))) if m else 1


def looks_like_heading(line: str) -> bool:
    """A numbered line is a heading when it is short and reads as a title, not a sentence:
    「三、操作流程」「3.2 鲜奶储存」 are; 「1. 先向客人道歉，当面撤下酒水。」 is a step."""
    found = numbering_kind(line)
    if found is None:
        return False
    kind, rest = found
    if kind == "article":  # 「第三条 适用范围」, not 「第三条 本制度适用于全部门店。」
        return bool(rest) and len(rest) <= 16 and not _SENTENCE_END.search(rest) and "，" not in rest
    return bool(rest) and len(rest) <= MAX_HEADING_CHARS and not _SENTENCE_END.search(rest) and "，" not in rest and "。" not in rest


class OutlineLevels:
    """Levels for numbered headings, by the order a document first uses each numbering kind."""

    def __init__(self, base: int = 0):
        self.base = base
        self.order: list[str] = []

    def level(self, line: str) -> int:
        kind, _ = numbering_kind(line)
        if kind == "decimal":
            kind_rank = self._rank("num") if "num" in self.order else self._rank("decimal")
            return self.base + kind_rank + decimal_depth(line) - 1
        return self.base + self._rank(kind)

    def _rank(self, kind: str) -> int:
        if kind not in self.order:
            self.order.append(kind)
        return self.order.index(kind) + 1


def sections_from_outline(items: list[tuple[int | None, str, int | None]]) -> list[Section]:
    """Sections from (heading level or None for a body line, text, page) in document order."""
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    current = Section(path=[])
    for level, text, page in items:
        if level is None:
            if current.page is None:
                current.page = page
            current.lines.append(text)
            continue
        sections.append(current)
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, text.strip()))
        current = Section(path=[t for _, t in stack], page=page)
    sections.append(current)
    return [s for s in sections if s.path or s.text]


# --- tables ----------------------------------------------------------------------------------

def _cell(text) -> str:
    return " ".join(str(text if text is not None else "").split()).replace("|", "｜")


def markdown_table(rows: list[list]) -> list[str]:
    """A Markdown table from rows (the first is the header); empty rows dropped, ragged rows
    padded, pipes inside cells escaped as fullwidth bars."""
    rows = [[_cell(c) for c in r] for r in rows if any(_cell(c) for c in r)]
    if not rows:
        return []
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    header, body = rows[0], rows[1:]
    header = [h or f"列{i + 1}" for i, h in enumerate(header)]
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * width]
    out += ["| " + " | ".join(r) + " |" for r in body]
    return out


def dedupe_heading_paths(sections: list[Section]) -> list[Section]:
    """Two sections with the same heading path would be one section to retrieval and citations:
    the later ones get 「（2）」「（3）」."""
    seen: dict[tuple, int] = {}
    for s in sections:
        key = tuple(s.path)
        if key in seen and s.path:
            seen[key] += 1
            s.path = [*s.path[:-1], f"{s.path[-1]}（{seen[key]}）"]
        else:
            seen[key] = 1
    return sections
