"""Reads for the chat page and the agent's admin pages (the learning loop)."""
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


def thread_turns(conv, user) -> list[dict]:
    """A conversation's (question, reply) turns as the chat page shows them, each reply with its
    proposal card as the proposal stands *now* (a card saved as 待确认 shows 已确认 once a
    manager confirmed it) and the feedback this user already gave (the buttons do not come back)."""
    from workflow.chat import proposal_dict
    from workflow.models import Proposal

    from .models import Feedback, Message

    if conv is None:
        return []
    turns, question = [], None
    for m in conv.messages.order_by("id"):
        if m.role == Message.Role.USER:
            question = m.content
        else:
            turns.append({"question": question or "", "reply": m})
    replies = [t["reply"] for t in turns]
    ids = {r.proposal["id"] for r in replies if r.proposal and r.proposal.get("id")}
    current = {p.pk: p for p in Proposal.objects.filter(pk__in=ids).select_related("store", "proposed_by", "decided_by")} if ids else {}
    given = {f.message_id: f for f in Feedback.objects.filter(message__in=replies, user=user)} if replies else {}
    for r in replies:
        if r.proposal and r.proposal.get("id") in current:
            r.proposal = proposal_dict(current[r.proposal["id"]], user)
        r.saved_feedback = given.get(r.pk)
    return turns


def sidebar_threads(user, query: str = "", *, limit: int = 30):
    """The chat page's threads, newest first; with `query`, those whose title or any message
    contains it (past threads could only be scrolled)."""
    from django.db.models import Exists, OuterRef, Q

    from .models import Conversation, Message

    threads = Conversation.objects.in_sidebar(user)
    query = " ".join((query or "").split())[:100]
    if query:
        said = Message.objects.filter(conversation=OuterRef("pk"), content__icontains=query)
        threads = threads.filter(Q(title__icontains=query) | Exists(said))
    return threads[:limit]
