"""Markdown, plain text and HTML → sections.

Markdown headings (#) make the outline; a file without them (a Word document pasted as text)
gets its headings from outline numbering (一、 （一） 1. 1.1 第X条), as Word files do. HTML is
turned into Markdown first (headings, lists and tables kept; scripts and styles dropped).
"""
from __future__ import annotations

import re

from ..chunking import split_aliases, split_front_matter
from .base import OutlineLevels, ParsedFile, Section, dedupe_heading_paths, looks_like_heading, sections_from_outline
from .safety import decode_text

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


def markdown_sections(source: str, *, kind: str = "md") -> ParsedFile:
    meta, body = split_front_matter(source)
    lines = body.split("\n")
    has_hashes = any(_HEADING.match(line) for line in lines)
    title = str(meta.get("title") or "")
    items: list[tuple[int | None, str, int | None]] = []
    levels = OutlineLevels()
    numbered = 0
    fence = False
    for line in lines:
        if line.strip().startswith("```"):
            fence = not fence
        m = None if fence else _HEADING.match(line)
        if m:
            level, text = len(m.group(1)), m.group(2).strip()
            if level == 1 and not title:
                title = text
                continue
            if level == 1 and text == title:
                continue
            items.append((level, text, None))
        elif not has_hashes and not fence and looks_like_heading(line):
            items.append((levels.level(line), " ".join(line.split()), None))
            numbered += 1
        else:
            items.append((None, line, None))
    sections = sections_from_outline(items)
    for s in sections:
        s.lines, s.aliases = split_aliases(s.lines)
    warnings = [] if has_hashes else (["没有识别到标题，已按编号识别标题"] if numbered else ["没有识别到标题，已按段落切分"])
    return ParsedFile(title=title, sections=dedupe_heading_paths(sections), kind=kind, warnings=warnings, meta=meta)


def parse_markdown_file(data: bytes, *, name: str = "") -> ParsedFile:
    return markdown_sections(decode_text(data), kind="md")


def parse_text(data: bytes, *, name: str = "") -> ParsedFile:
    return markdown_sections(decode_text(data), kind="txt")


def parse_html(data: bytes, *, name: str = "") -> ParsedFile:
    from bs4 import BeautifulSoup
    from markdownify import markdownify

    soup = BeautifulSoup(decode_text(data), "html.parser")
    page_title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for tag in soup(["script", "style", "noscript", "iframe", "template", "svg", "head"]):
        tag.decompose()
    markdown = markdownify(str(soup), heading_style="ATX", bullets="-", strip=["a", "img"])
    parsed = markdown_sections(markdown, kind="html")
    parsed.title = parsed.title or page_title
    return parsed


__all__ = ["markdown_sections", "parse_markdown_file", "parse_text", "parse_html", "Section"]
