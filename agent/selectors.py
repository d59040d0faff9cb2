"""Reads for the agent's admin pages (the learning loop)."""
from __future__ import annotations


def section_candidates(query: str, *, user, k: int = 8) -> list[dict]:
    """Sections a manager can pick as the answer to an unanswered question: hybrid search
    with the manager's visibility, one entry per section, with its text."""
    from knowledge.selectors import search

    query = (query or "").strip()
    if not query:
        return []
    seen, out = set(), []
    for hit in search(query, user=user, k=k).hits:
        key = (hit.path, hit.section_path)
        if key in seen:
            continue
        seen.add(key)
        out.append({"document_path": hit.path, "document": hit.document, "section_path": hit.section_path,
                    "text": hit.text, "score": hit.score})
    return out
