"""Uploaded files → sections (knowledge/parsing/base.py), by the file's content type.

`parse_file(name, data)` checks the bytes first (safety.sniff: type by content, size, encryption,
macros, ZIP bombs) and raises FileRejected with a reason a knowledge owner understands; it never
returns an empty document. Parsers are pure: no database, no network, no model downloads.
"""
from __future__ import annotations

from pathlib import PurePosixPath

from .base import FileRejected, ParsedFile, Section
from .safety import LABELS, sniff, unpack_zip

SUPPORTED = ("docx", "pdf", "xlsx", "csv", "pptx", "md", "txt", "html")


def _parser(kind: str):
    from .docx import parse_docx
    from .pdf import parse_pdf
    from .sheet import parse_csv, parse_xlsx
    from .slides import parse_pptx
    from .text import parse_html, parse_markdown_file, parse_text

    return {"docx": parse_docx, "pdf": parse_pdf, "xlsx": parse_xlsx, "csv": parse_csv, "pptx": parse_pptx,
            "md": parse_markdown_file, "txt": parse_text, "html": parse_html}[kind]


def parse_file(name: str, data: bytes) -> ParsedFile:
    kind = sniff(name, data)
    if kind == "zip":
        raise FileRejected("这是一个压缩包：请用「批量上传」上传 ZIP，每个文件会成为一篇文档。", code="zip")
    parsed = _parser(kind)(data, name=name)
    parsed.title = (parsed.title or PurePosixPath(name).stem or "未命名文档").strip()[:128]
    if not any(s.text or s.aliases for s in parsed.sections):
        raise FileRejected(f"没有从这个{LABELS.get(kind, '')}文件里读到任何文字。", code="empty")
    empty = [s.heading for i, s in enumerate(parsed.sections) if s.path and not s.text and not s.aliases
             and not (i + 1 < len(parsed.sections) and parsed.sections[i + 1].path[: len(s.path)] == s.path)]
    if empty:  # a heading with nothing under it and no subsections: usually a lost paragraph
        parsed.warnings.append(f"有 {len(empty)} 个空章节：{'、'.join(empty[:5])}{'…' if len(empty) > 5 else ''}")
    return parsed


def files_in(name: str, data: bytes) -> list[tuple[str, bytes]]:
    """One upload as the files it holds: a ZIP of documents unpacked (safely), anything else as is."""
    return unpack_zip(data) if sniff(name, data) == "zip" else [(name, data)]


__all__ = ["parse_file", "files_in", "FileRejected", "ParsedFile", "Section", "SUPPORTED"]
