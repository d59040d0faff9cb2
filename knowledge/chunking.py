"""Markdown → chunks that follow the document's own structure.

A chunk is one section (heading hierarchy kept as section_path, e.g.
「活动核销规则 > 叠加规则」). Long sections split at sentence boundaries; overlap is whole
sentences and only inside one section; a table is never split and keeps its header; a
document without headings falls back to paragraph windows.

A section may end with a line 「常见问法：问法一；问法二」: the questions staff ask about it.
They are not part of the section's text; they travel with the section's first chunk and are
embedded one by one (knowledge.Sentence, kind alias).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

MAX_CHARS = 420
OVERLAP_CHARS = 90
PATH_SEP = " > "

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_SENTENCE_END = re.compile(r"(?<=[。！？；!?])")
_ALIASES = re.compile(r"^\s*(?:>\s*)?常见问法\s*[：:]\s*(.+)$")
# The rule under a Markdown table's header row (「|---|:---:|」, as the parsers write every table),
# the whole line: a body row whose first cell is 「--」 (nothing to say) is not one.
TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


@dataclass
class ParsedDocument:
    title: str
    meta: dict
    body: str
    chunks: list[ChunkDraft] = field(default_factory=list)


@dataclass
class ChunkDraft:
    ordinal: int
    section_path: str
    text: str
    aliases: list[str] = field(default_factory=list)  # on the first chunk of a section only
    page: int | None = None  # where the section starts (PDF, slides)

    @property
    def embed_text(self) -> str:
        """What gets embedded and indexed: the heading path is a strong human label."""
        return f"{self.section_path}\n{self.text}"


def split_front_matter(source: str) -> tuple[dict, str]:
    if source.startswith("---"):
        end = source.find("\n---", 3)
        if end != -1:
            meta = yaml.safe_load(source[3:end]) or {}
            return (meta if isinstance(meta, dict) else {}), source[end + 4 :].lstrip("\n")
    return {}, source


def _blocks(lines: list[str]) -> list[tuple[str, str]]:
    """Group body lines into ('table'|'list'|'para', text) blocks."""
    blocks: list[tuple[str, str]] = []
    kind, buf = None, []

    def flush():
        nonlocal kind, buf
        if buf:
            blocks.append((kind, "\n".join(buf).strip()))
        kind, buf = None, []

    for line in lines:
        stripped = line.strip()
        if not stripped:
            flush()
            continue
        this = "table" if stripped.startswith("|") else "list" if re.match(r"^(\d+\.|[-*+])\s", stripped) else "para"
        if kind is not None and this != kind and not (kind == "list" and this == "para"):
            flush()
        kind = kind or this
        buf.append(stripped)
    flush()
    return [b for b in blocks if b[1]]


def split_sentences(text: str) -> list[str]:
    parts = []
    for line in text.split("\n"):
        parts.extend(s for s in _SENTENCE_END.split(line) if s.strip())
    return [p.strip() for p in parts]


def _join(window: list[tuple[str, bool, bool]]) -> str:
    out = ""
    for text, _table, new_block in window:
        out += ("\n" if out and new_block else "") + text
    return out.strip()


def _windows(units: list[tuple[str, bool, bool]], max_chars: int, overlap_chars: int) -> list[str]:
    """Pack units (text, is_table) into windows ≤ max_chars; tables are atomic.

    Overlap: the next window starts with the last whole sentences (never a table) of the
    previous one, up to overlap_chars.
    """
    windows: list[list[tuple[str, bool, bool]]] = []
    current: list[tuple[str, bool, bool]] = []
    size = 0
    for unit, is_table, new_block in units:
        if current and size + len(unit) > max_chars:
            windows.append(current)
            carry: list[tuple[str, bool, bool]] = []
            carried = 0
            for prev, prev_table, prev_new in reversed(current):
                if prev_table or carried + len(prev) > overlap_chars:
                    break
                carry.insert(0, (prev, False, prev_new))
                carried += len(prev)
            # Don't carry when the carried sentences alone would make the window a duplicate.
            current, size = (carry, carried) if len(carry) < len(current) else ([], 0)
        current.append((unit, is_table, new_block))
        size += len(unit)
    if current:
        windows.append(current)
    return [_join(w) for w in windows]


def without_aliases(text: str) -> str:
    """A document's text without its 常见问法 lines (what a reader of the document is shown)."""
    return "".join(line for line in text.splitlines(keepends=True) if not _ALIASES.match(line))


def split_aliases(lines: list[str]) -> tuple[list[str], list[str]]:
    """(the section's lines without its 常见问法 lines, the questions listed there)."""
    kept, aliases = [], []
    for line in lines:
        m = _ALIASES.match(line)
        if m:
            aliases.extend(q.strip() for q in re.split(r"[；;]", m.group(1)) if q.strip())
        else:
            kept.append(line)
    return kept, aliases


def sentence_units(text: str) -> list[str]:
    """What gets a vector of its own inside a chunk: each sentence, list item and whole table."""
    units = []
    for kind, block in _blocks(text.split("\n")):
        if kind == "table":
            units.append(block)
        elif kind == "list":
            units.extend(item for item in block.split("\n") if item.strip())
        else:
            units.extend(split_sentences(block))
    return [u for u in units if len(u.strip()) > 3]


def split_table(table: str, max_chars: int = MAX_CHARS) -> list[str]:
    """A table longer than a chunk as several tables of whole rows, each with the header row (and
    its separator) repeated: a 300-row price list is searchable row by row, and no row loses
    the names of its columns."""
    rows = table.split("\n")
    if len(table) <= max_chars or len(rows) <= 3:
        return [table]
    head = rows[:2] if re.match(r"^\|?\s*:?-{2,}", rows[1].strip()) else rows[:1]
    parts, current = [], []
    for row in rows[len(head):]:
        if current and len("\n".join(head + current + [row])) > max_chars:
            parts.append("\n".join(head + current))
            current = []
        current.append(row)
    if current:
        parts.append("\n".join(head + current))
    return parts


def _section_units(lines: list[str], max_chars: int = MAX_CHARS) -> list[tuple[str, bool, bool]]:
    """(text, is_table, starts_a_new_line) units: sentences, list items, whole tables (a long
    one in parts of whole rows)."""
    units: list[tuple[str, bool, bool]] = []
    for kind, text in _blocks(lines):
        if kind == "table":
            units.extend((part, True, True) for part in split_table(text, max_chars))
        elif kind == "list":
            units.extend((item, False, True) for item in text.split("\n"))
        else:
            units.extend((s, False, i == 0) for i, s in enumerate(split_sentences(text)))
    return units


def chunk_sections(title: str, sections, *, max_chars: int = MAX_CHARS, overlap_chars: int = OVERLAP_CHARS) -> list[ChunkDraft]:
    """Chunks of a parsed file's enabled sections (knowledge.parsing.Section: heading path below
    the title, Markdown lines, page, aliases), the section path led by the document title."""
    drafts: list[ChunkDraft] = []
    for section in sections:
        if not getattr(section, "enabled", True):
            continue
        path = PATH_SEP.join([title, *section.path]) if section.path else title
        lines, aliases = split_aliases(section.lines)
        aliases = list(dict.fromkeys([*section.aliases, *aliases]))
        units = _section_units(lines, max_chars)
        if not units:
            continue
        for i, text in enumerate(_windows(units, max_chars, overlap_chars)):
            drafts.append(ChunkDraft(ordinal=len(drafts), section_path=path, text=text, aliases=aliases if i == 0 else [],
                                     page=section.page))
    return drafts


def parse_markdown(source: str, *, fallback_title: str = "", max_chars: int = MAX_CHARS, overlap_chars: int = OVERLAP_CHARS) -> ParsedDocument:
    """A Markdown document's title, front matter and chunks (knowledge.parsing reads it, as it
    reads every uploaded format; then the same chunking)."""
    from .parsing.text import markdown_sections

    parsed = markdown_sections(source)
    meta, body = split_front_matter(source)
    title = parsed.title or fallback_title
    doc = ParsedDocument(title=title, meta=meta, body=body)
    doc.chunks = chunk_sections(title, parsed.sections, max_chars=max_chars, overlap_chars=overlap_chars)
    return doc
