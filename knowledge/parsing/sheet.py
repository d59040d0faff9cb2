"""Excel (.xlsx) and CSV → sections: a sheet is a section whose rows are a Markdown table with
the header row; a sheet whose header is 问题/答案 (or question/answer) holds Q&A pairs, and
each pair becomes a section titled by its question, with the question as an alias. Merged
cells are filled with their value across the range.
"""
from __future__ import annotations

import csv
import io
import re

from .base import ParsedFile, Section, dedupe_heading_paths, markdown_table, unreadable
from .safety import decode_text

_QUESTION = re.compile(r"^(问题|问|提问|常见问题|question|q)$", re.IGNORECASE)
_ANSWER = re.compile(r"^(答案|答|回答|解答|答复|answer|a)$", re.IGNORECASE)
MAX_COLUMNS_SHOWN = 12


def _clean(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return " ".join(str(v).split())


def _sheet_sections(name: str, rows: list[list[str]], warnings: list[str]) -> list[Section]:
    rows = [r for r in rows if any(c for c in r)]
    if not rows:
        return []
    if all(sum(1 for c in r if c) == 1 for r in rows):
        # A sheet of notes, one sentence a row (a 「说明」 sheet): prose, not a one-column table (it
        # was 「| 超过保质期的酒水必须倒掉… |\n|---|」, a table whose only row is its header).
        return [Section(path=[name], lines=[next(c for c in r if c) for r in rows])]
    header_at = next((i for i, r in enumerate(rows) if sum(1 for c in r if c) >= 2), 0)
    header, body = rows[header_at], rows[header_at + 1 :]
    q = next((i for i, h in enumerate(header) if _QUESTION.match(h.strip())), None)
    a = next((i for i, h in enumerate(header) if _ANSWER.match(h.strip())), None)
    if q is not None and a is not None:
        out = []
        for r in body:
            question, answer = (r[q] if q < len(r) else ""), (r[a] if a < len(r) else "")
            if question and answer:
                out.append(Section(path=[name, question[:120]], lines=[answer], aliases=[question[:200]]))
        return out
    if len(header) > MAX_COLUMNS_SHOWN:
        warnings.append(f"工作表「{name}」有 {len(header)} 列（超过 12 列），预览里请核对")
    lines = [" ".join(c for c in r if c) for r in rows[:header_at]]  # a title row above the header
    return [Section(path=[name], lines=[*lines, *markdown_table([header, *body])])]


def parse_xlsx(data: bytes, *, name: str = "") -> ParsedFile:
    import openpyxl
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        workbook = openpyxl.load_workbook(io.BytesIO(data), data_only=True)
    except (InvalidFileException, KeyError, ValueError, TypeError, OSError) as exc:
        raise unreadable("Excel 文件", exc, code="malformed") from None
    warnings: list[str] = []
    sections = []
    for sheet in workbook.worksheets:
        if sheet.sheet_state != "visible":
            continue
        grid = [[_clean(c) for c in row] for row in sheet.iter_rows(values_only=True)]
        for merged in sheet.merged_cells.ranges:
            value = grid[merged.min_row - 1][merged.min_col - 1] if merged.min_row - 1 < len(grid) else ""
            for r in range(merged.min_row - 1, min(merged.max_row, len(grid))):
                for c in range(merged.min_col - 1, min(merged.max_col, len(grid[r]))):
                    grid[r][c] = value
        sections += _sheet_sections(sheet.title, grid, warnings)
    title = (workbook.properties.title or "").strip()
    return ParsedFile(title=title, sections=dedupe_heading_paths(sections), kind="xlsx", warnings=warnings)


def parse_csv(data: bytes, *, name: str = "") -> ParsedFile:
    text = decode_text(data)
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    try:
        rows = [[_clean(c) for c in r] for r in csv.reader(io.StringIO(text), dialect)]
    except csv.Error as exc:
        raise unreadable("CSV 文件", exc, code="malformed") from None
    stem = re.sub(r"\.[^.]+$", "", name.rsplit("/", 1)[-1]) or "表格"
    warnings: list[str] = []
    return ParsedFile(title="", sections=_sheet_sections(stem, rows, warnings), kind="csv", warnings=warnings)
