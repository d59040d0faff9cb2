"""PowerPoint (.pptx) → sections: a slide is a section titled by its title placeholder (「第 N 页」
when it has none), its text boxes as lines and lists, its tables as Markdown tables, and its
speaker notes after them (「备注：…」)."""
from __future__ import annotations

import io

from .base import ParsedFile, Section, dedupe_heading_paths, markdown_table, unreadable


def parse_pptx(data: bytes, *, name: str = "") -> ParsedFile:
    from pptx import Presentation
    from pptx.exc import PackageNotFoundError

    try:
        deck = Presentation(io.BytesIO(data))
    except (PackageNotFoundError, KeyError, ValueError, TypeError) as exc:
        raise unreadable("PowerPoint 文件", exc, code="malformed") from None
    sections = []
    for number, slide in enumerate(deck.slides, start=1):
        title_shape = slide.shapes.title
        title = " ".join((title_shape.text_frame.text if title_shape is not None and title_shape.has_text_frame else "").split())
        lines: list[str] = []
        for shape in slide.shapes:
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            if getattr(shape, "has_table", False) and shape.has_table:
                rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
                lines += ["", *markdown_table(rows), ""]
            elif shape.has_text_frame:
                for p in shape.text_frame.paragraphs:
                    text = " ".join("".join(r.text for r in p.runs).split())
                    if text:
                        lines.append(f"{'  ' * p.level}- {text}" if p.level or len(shape.text_frame.paragraphs) > 1 else text)
        if slide.has_notes_slide:
            notes = " ".join(slide.notes_slide.notes_text_frame.text.split())
            if notes:
                lines += ["", f"备注：{notes}"]
        if title or any(line.strip() for line in lines):
            sections.append(Section(path=[title or f"第 {number} 页"], lines=lines, page=number))
    props = deck.core_properties
    return ParsedFile(title=(props.title or "").strip(), sections=dedupe_heading_paths(sections), kind="pptx")
