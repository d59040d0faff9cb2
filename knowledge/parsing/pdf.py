"""PDF (its text layer) → sections, each with the page it starts on.

Lines, with each character's font size, come from PDFium (pypdfium2: it reads the embedded
CJK fonts pdfminer cannot, e.g. a CFF Noto CJK subset); ruled tables come from pdfplumber's
table finder, and their text is kept out of the running lines. A line is a heading when it is
set larger than the body text or starts with outline numbering and reads as a title; lines
repeated on most pages (running headers and footers) and bare page numbers are dropped. A PDF
with no text layer is refused with a clear reason instead of becoming an empty document.
"""
from __future__ import annotations

import ctypes
import io
import re
import statistics
from collections import Counter

from .base import (
    FileRejected,
    OutlineLevels,
    ParsedFile,
    dedupe_heading_paths,
    looks_like_heading,
    markdown_table,
    sections_from_outline,
    unreadable,
)

_PAGE_NUMBER = re.compile(r"^(第\s*\d+\s*页(\s*[/，,]?\s*共\s*\d+\s*页)?|\d+\s*/\s*\d+|-?\s*\d+\s*-?|page\s*\d+(\s*of\s*\d+)?)$", re.IGNORECASE)
NO_TEXT_LAYER = "这个 PDF 没有文字层（可能是扫描件或图片），需要先做 OCR 再上传。"
ENCRYPTED = "PDF 有密码保护，请先去掉密码再上传。"


def _page_chars(textpage, height: float) -> list[tuple[str, float, float, float]]:
    """(character, font size, x centre, y centre from the top) in reading order; a line break is ("\n", 0, 0, 0)."""
    import pypdfium2.raw as raw

    left, right, bottom, top = (ctypes.c_double() for _ in range(4))
    out = []
    for i in range(textpage.count_chars()):
        ch = chr(raw.FPDFText_GetUnicode(textpage, i) or 32)
        if ch in "\r\n":
            if ch == "\n" or not raw.FPDFText_IsGenerated(textpage, i):
                out.append(("\n", 0.0, 0.0, 0.0))
            continue
        raw.FPDFText_GetCharBox(textpage, i, ctypes.byref(left), ctypes.byref(right), ctypes.byref(bottom), ctypes.byref(top))
        out.append((ch, raw.FPDFText_GetFontSize(textpage, i), (left.value + right.value) / 2, height - (top.value + bottom.value) / 2))
    return out


def _inside(box, x: float, y: float) -> bool:
    x0, t, x1, b = box
    return x0 - 1 <= x <= x1 + 1 and t - 1 <= y <= b + 1


def _page_lines(chars, boxes: list[tuple]) -> list[tuple[float, str, float]]:
    """(top, text, font size) per line, characters inside `boxes` (tables) left out."""
    lines, buf, sizes, line_top = [], [], [], None
    for ch, size, x, y in [*chars, ("\n", 0.0, 0.0, 0.0)]:
        if ch == "\n":
            text = " ".join("".join(buf).split())
            if text:
                lines.append((line_top or 0.0, text, statistics.median(sizes) if sizes else 0.0))
            buf, sizes, line_top = [], [], None
            continue
        if any(_inside(b, x, y) for b in boxes):
            continue
        line_top = y if line_top is None else line_top
        buf.append(ch)
        if not ch.isspace():
            sizes.append(size)
    return lines


def _cells_text(chars, rows: list[list]) -> list[list[str]]:
    """A ruled table's rows of cell boxes filled with the page's characters (PDFium's, so a
    font pdfminer cannot read still gives its text)."""
    out = []
    for row in rows:
        out.append(["".join(ch for ch, _, x, y in chars if ch != "\n" and box is not None and _inside(box, x, y)).strip()
                    for box in row])
    return out


def _tables(data: bytes) -> dict[int, list[tuple[tuple, list]]]:
    """Ruled tables per page (1-based): [(bbox, rows of cell boxes)], from pdfplumber's finder."""
    import pdfplumber

    out: dict[int, list] = {}
    try:
        with pdfplumber.open(io.BytesIO(data)) as pdf:
            for number, page in enumerate(pdf.pages, start=1):
                out[number] = [(t.bbox, [list(r.cells) for r in t.rows]) for t in page.find_tables() if len(t.rows) >= 2]
    except Exception:  # a layout pdfminer cannot read: its rows stay running lines
        return {}
    return out


def parse_pdf(data: bytes, *, name: str = "") -> ParsedFile:
    per_page, sizes, meta_title = _read_pages(data)
    if not sizes and not any(entries for _, entries in per_page):
        raise FileRejected(NO_TEXT_LAYER, code="no_text_layer")
    items, title, wide = _outline_items(per_page, sizes)
    warnings = []
    if not any(level is not None for level, _, _ in items):
        warnings.append("没有识别到标题，已按段落切分")
    if wide:
        warnings.append(f"有 {wide} 个表格超过 12 列，预览里请核对")
    sections = dedupe_heading_paths(sections_from_outline(_join_wrapped(items)))
    return ParsedFile(title=title or meta_title, sections=sections, kind="pdf", warnings=warnings)


def _read_pages(data: bytes) -> tuple[list, list[float], str]:
    """Each page's entries top to bottom ((top, "table", rows) or (top, "line", (text, size))),
    the font size of every character of running text, and the document's metadata title."""
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise FileRejected(ENCRYPTED, code="encrypted") from None
        raise unreadable("PDF 文件", exc, code="malformed") from None
    tables = _tables(data)
    per_page, sizes = [], []
    try:
        for number in range(1, len(document) + 1):
            page = document[number - 1]
            chars = _page_chars(page.get_textpage(), page.get_height())
            found = tables.get(number, [])
            entries = [(bbox[1], "table", _cells_text(chars, rows)) for bbox, rows in found]
            for top, text, size in _page_lines(chars, [bbox for bbox, _ in found]):
                sizes += [size] * len(text)
                entries.append((top, "line", (text, size)))
            entries.sort(key=lambda e: e[0])
            per_page.append((number, entries))
        meta_title = (document.get_metadata_dict() or {}).get("Title") or ""
    finally:
        document.close()
    return per_page, sizes, meta_title


def _heading_sizes(per_page: list, sizes: list[float]) -> dict[float, int]:
    """Font sizes larger than the body's (short lines only), largest first: heading levels 1–4."""
    body = statistics.median(sizes) if sizes else 0.0
    larger = sorted({round(p[1], 1) for _, entries in per_page for _, kind, p in entries
                     if kind == "line" and p[1] >= body * 1.15 and len(p[0]) <= 40}, reverse=True)
    return {s: i + 1 for i, s in enumerate(larger[:4])}


def _outline_items(per_page: list, sizes: list[float]) -> tuple[list, str, int]:
    """(level or None, text, page) for every line and table row, without running headers,
    footers and page numbers; the title (the first level-1 line); how many tables are wider than 12."""
    # Running headers and footers: the same line on most pages.
    counts = Counter(p[0] for _, entries in per_page for _, kind, p in entries if kind == "line")
    repeated = {t for t, n in counts.items() if len(per_page) >= 3 and n >= 0.6 * len(per_page)}
    size_level = _heading_sizes(per_page, sizes)
    levels = OutlineLevels(base=len(size_level))
    items: list[tuple[int | None, str, int | None]] = []
    title, wide = "", 0
    for number, entries in per_page:
        for _, kind, payload in entries:
            if kind == "table":
                wide += bool(payload) and max(len(r) for r in payload) > 12
                items += [(None, line, number) for line in ["", *markdown_table(payload), ""]]
                continue
            text, size = payload
            if text in repeated or _PAGE_NUMBER.match(text):
                continue
            level = size_level.get(round(size, 1))
            if level is not None and not title and level == 1 and not any(lv is not None for lv, _, _ in items):
                title = text
            elif level is not None:
                items.append((level, text, number))
            else:
                items.append((None, text, number) if not looks_like_heading(text) else (levels.level(text), text, number))
    return items, title, wide


def _join_wrapped(items):
    """A paragraph wrapped over several lines of a page is one line again (Chinese text wraps
    mid-sentence); a list item, a table row or a line ending a sentence starts a new one."""
    out: list[tuple[int | None, str, int | None]] = []
    for level, text, page in items:
        prev = out[-1] if out else None
        if (level is None and prev is not None and prev[0] is None and prev[1] and text and not text.startswith("|")
                and not prev[1].startswith("|") and not re.match(r"^(\d+[.、．]|[-•·●▪]|[（(]\d+[)）])", text)
                and not re.search(r"[。！？；：:!?;]$", prev[1]) and prev[2] == page):
            out[-1] = (None, prev[1] + text, page)
        else:
            out.append((level, re.sub(r"^[•·●▪]\s*", "- ", text) if level is None else text, page))
    return out
