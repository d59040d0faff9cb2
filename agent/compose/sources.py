"""Numbering the sources: document sections are [1], [2] …; data rows are [D1], [D2] …. The same
function numbers the prompt and the response's source lists, so they cannot disagree; a cited
source is the whole section its chunk belongs to."""
from __future__ import annotations

from dataclasses import dataclass, field

from knowledge.selectors import Hit, SectionUnit, scope_label, section_units
from ops.tools import ToolResult


@dataclass
class Sources:
    citations: list[dict] = field(default_factory=list)  # [{"ref": "1", document, section_path, score, text, chunk_id}]
    data: list[dict] = field(default_factory=list)  # [{"ref": "D1", tool, params, row}]
    sections: dict[str, list[SectionUnit]] = field(default_factory=dict)  # ref → the whole section, unit by unit (not serialised)

    def doc_refs(self) -> set[str]:
        return {c["ref"] for c in self.citations}

    def data_refs(self) -> set[str]:
        return {d["ref"] for d in self.data}


def units_of(hit: Hit, qvec, memo: dict | None) -> list[SectionUnit]:
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
        section = units_of(hit, qvec, units)
        ref = str(i)
        sources.sections[ref] = section
        sources.citations.append({
            "ref": ref, "document": hit.document, "section_path": hit.section_path, "score": round(hit.score, 4),
            "vector_score": round(hit.vector_score, 4) if hit.vector_score is not None else None,
            "text": section_text(section) or hit.text, "chunk_id": hit.chunk_id, "document_id": hit.document_id,
            "version": hit.version, "page": hit.page,
            # A document for some stores only (a store's own rule beside the chain's): who it is for.
            **({"scope": scope_label(hit.scope)} if hit.scope else {}),
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
    best_first = max((u.similarity for u in units_of(hits[0], qvec, units)), default=0.0)
    for hit in hits[1:3]:
        if len(chosen) >= limit or hit.section_path == hits[0].section_path:
            continue
        best = max((u.similarity for u in units_of(hit, qvec, units)), default=0.0)
        if best >= best_first - SECOND_SECTION_MARGIN and hit.score >= hits[0].score * 0.8:
            chosen.append(hit)
    return chosen
