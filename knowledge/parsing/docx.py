"""Word (.docx) → sections.

Headings come from paragraph styles (`Heading N`, the Chinese `标题 N`, or an outline level);
in a document that uses none, from numbering written in the text (第一章, 一、, （一）, 1., 1.1,
第X条). Lists keep their items (numbered ones numbered); tables become Markdown tables with
their header row, a merged cell's value repeated in every cell it spans (across and down).
"""
from __future__ import annotations

import io
import re

from .base import (
    OutlineLevels,
    ParsedFile,
    Section,
    dedupe_heading_paths,
    looks_like_heading,
    markdown_table,
    sections_from_outline,
    unreadable,
)

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_HEADING_STYLE = re.compile(r"^(?:heading|标题)\s*(\d)$", re.IGNORECASE)


def _style_level(paragraph) -> int | None:
    style = paragraph.style
    seen = 0
    while style is not None and seen < 5:
        m = _HEADING_STYLE.match((style.name or "").strip())
        if m:
            return int(m.group(1))
        if (style.name or "").strip().lower() in ("title", "标题"):
            return 0
        lvl = style.element.find(f"{W}pPr/{W}outlineLvl")
        if lvl is not None and lvl.get(f"{W}val", "9").isdigit() and int(lvl.get(f"{W}val")) < 9:
            return int(lvl.get(f"{W}val")) + 1
        style, seen = style.base_style, seen + 1
    lvl = paragraph._p.find(f"{W}pPr/{W}outlineLvl")
    if lvl is not None and lvl.get(f"{W}val", "9").isdigit() and int(lvl.get(f"{W}val")) < 9:
        return int(lvl.get(f"{W}val")) + 1
    return None


def _list_info(paragraph) -> tuple[int, int] | None:
    """(numbering id, level) of a paragraph Word numbers or bullets itself."""
    num = paragraph._p.find(f"{W}pPr/{W}numPr")
    if num is None:
        style = paragraph.style
        num = style.element.find(f"{W}pPr/{W}numPr") if style is not None else None
        if num is None:
            return None
    num_id, ilvl = num.find(f"{W}numId"), num.find(f"{W}ilvl")
    nid = int(num_id.get(f"{W}val", "0")) if num_id is not None else 0
    return (nid, int(ilvl.get(f"{W}val", "0")) if ilvl is not None else 0) if nid else None


def _is_bullet(document, num_id: int, level: int) -> bool:
    try:
        numbering = document.part.numbering_part.element
    except (KeyError, NotImplementedError, AttributeError):
        return True
    for num in numbering.findall(f"{W}num"):
        if num.get(f"{W}numId") == str(num_id):
            abstract = num.find(f"{W}abstractNumId").get(f"{W}val")
            for a in numbering.findall(f"{W}abstractNum"):
                if a.get(f"{W}abstractNumId") == abstract:
                    for lvl in a.findall(f"{W}lvl"):
                        if lvl.get(f"{W}ilvl") == str(level):
                            fmt = lvl.find(f"{W}numFmt")
                            return fmt is None or fmt.get(f"{W}val") in ("bullet", "none")
    return True


def _cell_text(tc) -> str:
    return " ".join("".join(t.text or "" for t in p.iter(f"{W}t")) for p in tc.iter(f"{W}p")).strip()


def table_rows(tbl) -> list[list[str]]:
    """The table's rows with merged cells repeated: gridSpan across, vMerge down."""
    rows: list[list[str]] = []
    for tr in tbl.findall(f"{W}tr"):
        row: list[str] = []
        for tc in tr.findall(f"{W}tc"):
            pr = tc.find(f"{W}tcPr")
            span = 1
            vmerge = None
            if pr is not None:
                gs = pr.find(f"{W}gridSpan")
                span = int(gs.get(f"{W}val", "1")) if gs is not None else 1
                vm = pr.find(f"{W}vMerge")
                vmerge = None if vm is None else (vm.get(f"{W}val") or "continue")
            col = len(row)
            if vmerge == "continue" and rows and col < len(rows[-1]):
                text = rows[-1][col]
            else:
                text = _cell_text(tc)
            row.extend([text] * max(1, span))
        rows.append(row)
    return rows


def parse_docx(data: bytes, *, name: str = "") -> ParsedFile:
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from lxml.etree import XMLSyntaxError

    try:
        document = docx.Document(io.BytesIO(data))
    except (PackageNotFoundError, XMLSyntaxError, KeyError, ValueError) as exc:
        raise unreadable("Word 文件", exc, code="malformed") from None
    blocks = _blocks(document)
    styled = any(kind == "p" and _style_level(b) not in (None, 0) and b.text.strip() for kind, b in blocks)
    outline = _Outline(document, styled, (document.core_properties.title or "").strip())
    for kind, block in blocks:
        if kind == "t":
            outline.table(block)
        else:
            outline.paragraph(block)
    warnings: list[str] = []
    if not styled:
        warnings.append("没有识别到标题样式，已按编号识别标题" if outline.numbered_headings else "没有识别到标题，已按段落切分")
    if outline.wide:
        warnings.append(f"有 {outline.wide} 个表格超过 12 列，预览里请核对")
    sections = dedupe_heading_paths(sections_from_outline(outline.items))
    return ParsedFile(title=outline.title, sections=sections, kind="docx", warnings=warnings)


def _blocks(document) -> list[tuple[str, object]]:
    """The body in order: ("p", paragraph) or ("t", the table's rows)."""
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    blocks = []
    for child in document.element.body.iterchildren():
        if child.tag == f"{W}p":
            blocks.append(("p", Paragraph(child, document)))
        elif child.tag == f"{W}tbl":
            blocks.append(("t", table_rows(Table(child, document)._tbl)))
    return blocks


class _Outline:
    """A Word body read into outline items (level or None, text, page None): headings by style,
    or by their numbering when no heading style is used; list items with their markers."""

    def __init__(self, document, styled: bool, title: str):
        self.document, self.styled, self.title = document, styled, title
        self.items: list[tuple[int | None, str, int | None]] = []
        self.levels = OutlineLevels()
        self.counters: dict[tuple[int, int], int] = {}
        self.numbered_headings = self.wide = 0

    def table(self, rows: list[list[str]]) -> None:
        self.wide += bool(rows) and max(len(r) for r in rows) > 12
        self.items += [(None, line, None) for line in ["", *markdown_table(rows), ""]]

    def paragraph(self, block) -> None:
        text = " ".join(block.text.split())
        level = _style_level(block) if text else None
        if not text:
            self.items.append((None, "", None))
        elif level == 0:
            self.title = self.title or text
        elif level is not None:
            self.items.append((level, text, None))
        elif not self.styled and looks_like_heading(text):
            self.items.append((self.levels.level(text), text, None))
            self.numbered_headings += 1
        elif (info := _list_info(block)) is not None:
            self.items.append((None, self.list_item(info, text), None))
        else:
            self.items.append((None, text, None))

    def list_item(self, info: tuple[int, int], text: str) -> str:
        """「1. …」 or 「- …」, indented by its level; a deeper list restarts under its new parent item."""
        self.counters[info] = self.counters.get(info, 0) + 1
        for key in [k for k in self.counters if k[0] == info[0] and k[1] > info[1]]:
            self.counters.pop(key)
        marker = "-" if _is_bullet(self.document, *info) else f"{self.counters[info]}."
        return f"{'  ' * info[1]}{marker} {text}"


__all__ = ["parse_docx", "table_rows", "Section"]
