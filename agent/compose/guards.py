"""The four guards that hold whatever wrote the draft to the sources (in code, not in the prompt):
1. a citation that points at no source is removed;
2. documents and data rows are numbered separately;
3. when a tool returns a list, every row appears in the answer (missing ones appended);
4. a mandatory conditional clause (corpus metadata: triggers → clause) is always included
   when the question matches its scenario."""
from __future__ import annotations

import re

from knowledge.selectors import mandatory_rules, section_chunk
from ops.tools import ToolResult

from .data import row_key, row_sentence
from .sources import Sources

DOC_REF = re.compile(r"\[(\d+)\]")


_DATA_REF = re.compile(r"\[D(\d+)\]")


def guard_unknown_citations(answer: str, sources: Sources) -> tuple[str, list[str]]:
    """Guard 1: drop [n] / [Dn] markers that point at no source."""
    removed = []
    docs, data = sources.doc_refs(), sources.data_refs()

    def doc(m):
        if m.group(1) in docs:
            return m.group(0)
        removed.append(m.group(0))
        return ""

    def row(m):
        if f"D{m.group(1)}" in data:
            return m.group(0)
        removed.append(m.group(0))
        return ""

    return _DATA_REF.sub(row, DOC_REF.sub(doc, answer)), removed


def guard_all_rows(answer: str, tool_result: ToolResult | None, sources: Sources) -> tuple[str, list[str]]:
    """Guard 3: every row of a list result appears in the answer."""
    if tool_result is None or len(tool_result.rows) < 2:
        return answer, []
    fmt = row_sentence(tool_result.tool)
    missing = []
    for d in sources.data:
        key = row_key(tool_result.tool, d["row"])
        if key and key not in answer:
            missing.append(f"- {fmt(d['row'])} [{d['ref']}]")
    if missing:
        answer = answer.rstrip() + "\n" + "\n".join(missing)
    return answer, [m.split(" [")[0].lstrip("- ") for m in missing]


def guard_mandatory_clauses(question: str, answer: str, sources: Sources, audiences) -> tuple[str, list[str]]:
    """Guard 4: when the question matches a scenario, its conditional clause is always there."""
    added = []
    cited_documents = {c.get("document_id") for c in sources.citations}
    for rule in mandatory_rules(audiences):
        if not _triggered(rule, question, cited_documents):
            continue
        must = rule.get("must_contain") or rule["clause"]
        if must in answer:
            continue
        ref = _citation_for_section(sources, rule["document_id"], rule.get("section", ""))
        answer = answer.rstrip() + f"\n{rule['clause']}" + (f"[{ref}]" if ref else "")
        added.append(rule["clause"])
    return answer, added


def _triggered(rule: dict, question: str, cited_documents: set) -> bool:
    """A trigger word (「拉肚子」) is in the question; or a word with everyday senses the rule does
    not mean (`context_triggers`: 「过期」 of a voucher, 「坏了」 of a machine) is, and the answer's
    sources include the rule's own document: the question is about that scenario."""
    if any(t in question for t in rule.get("triggers", [])):
        return True
    return rule["document_id"] in cited_documents and any(t in question for t in rule.get("context_triggers", []))


def _citation_for_section(sources: Sources, document_id: int, heading: str) -> str | None:
    chunk = section_chunk(document_id, heading)
    if chunk is None:
        return None
    for c in sources.citations:
        if c.get("chunk_id") == chunk.id:
            return c["ref"]
    ref = str(len(sources.citations) + 1)
    sources.citations.append({
        "ref": ref, "document": chunk.document.title, "section_path": chunk.section_path, "score": 0.0,
        "text": chunk.text, "chunk_id": chunk.id, "document_id": document_id,
    })
    return ref


def apply_guards(question: str, answer: str, sources: Sources, tool_result: ToolResult | None, audiences,
                 *, mandatory: bool = True) -> tuple[str, dict]:
    report = {}
    answer, report["rows_appended"] = guard_all_rows(answer, tool_result, sources)
    if mandatory:
        answer, report["clauses_added"] = guard_mandatory_clauses(question, answer, sources, audiences)
    answer, report["citations_removed"] = guard_unknown_citations(answer, sources)
    return answer.strip(), report
