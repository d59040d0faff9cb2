"""Asking the agent: validate, run the pipeline, persist the turn. One code path for the
API, the chat page, Celery and MCP."""
from __future__ import annotations

import re
import uuid
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from core.audit import audit_denial, audit_record
from core.errors import NotFound
from core.models import AuditLog
from core.roles import USE_ASSISTANT, require
from core.validation import as_read, text_problem

from .models import Conversation, Message, UnansweredQuestion, UserPreference
from .pipeline import AgentResult, answer_question
from .router import OUT_OF_SCOPE

HISTORY_TURNS = 6


def validate_query(query) -> str:
    if query is None:
        raise ValidationError({"query": ["缺少 query：要问的问题。"]})
    if not isinstance(query, str):
        raise ValidationError({"query": ["query 必须是字符串。"]})
    if problem := text_problem(query):
        raise ValidationError({"query": [f"问题{problem}"]})
    if len(query) > settings.SM_MAX_QUERY_CHARS:
        raise ValidationError({"query": [f"问题不能超过 {settings.SM_MAX_QUERY_CHARS} 个字符（现在 {len(query)} 个）。"]})
    query = as_read(query)
    if not query:
        raise ValidationError({"query": ["问题不能为空。"]})
    return query


THREAD_ID_MAX = Conversation._meta.get_field("thread_id").max_length  # REST, MCP and the page read this one
THREAD_ID = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_.:-]{{0,{THREAD_ID_MAX - 1}}}")


def validate_thread_id(thread_id) -> str | None:
    if thread_id is None or thread_id == "":
        return None
    if not isinstance(thread_id, str):
        raise ValidationError({"thread_id": ["thread_id 必须是字符串或 null。"]})
    if len(thread_id) > THREAD_ID_MAX:
        raise ValidationError({"thread_id": [f"thread_id 最长 {THREAD_ID_MAX} 个字符。"]})
    if problem := text_problem(thread_id):
        raise ValidationError({"thread_id": [problem]})
    if not THREAD_ID.fullmatch(thread_id):
        # It is part of the page's URLs (/threads/<id>/rename): 「a/b」 or 「..」 broke the user's chat page for good.
        raise ValidationError({"thread_id": ["thread_id 只能由字母、数字和 - _ . : 组成，并以字母或数字开头。"]})
    return thread_id


def conversation_for(*, user, thread_id: str | None) -> Conversation | None:
    """The user's existing conversation for this thread id, or None when the thread is new:
    a new conversation is only written together with its first answered turn, so a
    rejected or failed question leaves no empty conversation behind."""
    thread_id = validate_thread_id(thread_id)
    if not thread_id:
        return None
    conv = Conversation.objects.filter(user=user, thread_id=thread_id).first()
    if conv is not None and conv.deleted_at is not None:
        raise ValidationError({"thread_id": ["这个会话已删除，请新建会话。"]})
    return conv


def thread_for(*, user, thread_id: str | None) -> str:
    """The thread id a question will be stored under (existing, requested or a new one)."""
    conv = conversation_for(user=user, thread_id=thread_id)
    return conv.thread_id if conv else (validate_thread_id(thread_id) or str(uuid.uuid4()))


def _conversation_get_or_create(*, user, thread_id: str, title: str, channel: str) -> tuple[Conversation, bool]:
    """Inside the turn's transaction. Concurrent first questions in one new thread: the
    unique (user, thread_id) decides, the others read the winner's row (get_or_create retries)."""
    return Conversation.objects.get_or_create(user=user, thread_id=thread_id, defaults={"title": title, "channel": channel})


def assistant_require(user) -> None:
    """The assistant (chat page, chat API, MCP) needs a store role: PermissionDenied, audited."""
    require(user, USE_ASSISTANT, attempt="ask", message="这个账号没有店员、店长或总部角色，不能使用门店助手；请联系店长分配角色。")


def _history(conv: Conversation) -> tuple[dict, list[tuple[str, str]]]:
    messages = list(conv.messages.order_by("-id")[: HISTORY_TURNS * 2])[::-1]
    previous = next((m.context for m in reversed(messages) if m.role == Message.Role.ASSISTANT), {}) or {}
    turns, question = [], None
    for m in messages:
        if m.role == Message.Role.USER:
            question = m.content
        elif question is not None:
            turns.append((question, m.content))
            question = None
    return previous, turns


# Who refused, as a manager reads it on the unanswered list.
REFUSAL_LAYERS = {"router": "不属于门店问题", "answerability": "制度里找不到能回答的内容", "uncovered": "制度不管的话题"}


def _channel(channel: str | None) -> str:
    """The channel a new thread belongs to: given, or the request's (web, rest, mcp)."""
    from core.audit import request_meta

    said = channel or (request_meta.get() or {}).get("channel")
    return said if said in Conversation.Channel.values else Conversation.Channel.WEB


def chat_ask(*, user, query, thread_id: str | None = None, on_step=None, channel: str | None = None,
             on_delta=None) -> tuple[AgentResult, Conversation, Message]:
    """Answer one question in a thread and store both turns with the trace.

    Few round trips: a new thread has no history to read and is created with its title;
    both messages are one INSERT; an existing thread gets one UPDATE (updated_at, title).
    The assistant needs a store role (a device or a role-less account gets a 403, audited)."""
    assistant_require(user)
    query = validate_query(query)
    conv = conversation_for(user=user, thread_id=thread_id)
    requested = validate_thread_id(thread_id)
    previous, history = _history(conv) if conv else ({}, [])
    result, _state = answer_question(query, user=user, previous=previous, history=history, on_step=on_step, on_delta=on_delta)
    with transaction.atomic():
        created = False
        if conv is None and requested is None:  # a fresh random thread id cannot exist yet
            conv, created = Conversation.objects.create(thread_id=str(uuid.uuid4()), user=user, title=query[:80],
                                                        channel=_channel(channel)), True
        elif conv is None:
            conv, created = _conversation_get_or_create(user=user, thread_id=requested, title=query[:80], channel=_channel(channel))
        if not created:
            conv.title = conv.title or query[:80]
            conv.save(update_fields=["title", "updated_at"])
        _question, reply = Message.objects.bulk_create([
            Message(conversation=conv, role=Message.Role.USER, content=query),
            Message(
                conversation=conv, role=Message.Role.ASSISTANT, content=result.answer, intent=result.intent,
                route_reason=result.route_reason[:255], refused=result.refused, citations=result.citations, data=result.data,
                proposal=result.proposal, trace=result.trace, context=result.context,
            ),
        ])
        _file_if_unanswered(result, query=query, user=user, reply=reply)
    return result, conv, reply


def _file_if_unanswered(result: AgentResult, *, query: str, user, reply) -> None:
    """A refused question, a question whose rules half the SOPs leave to someone else, or one answered
    only with the closest rule lands on the managers' unanswered list (off-topic ones apart)."""
    top = result.score
    if result.refused and result.refusal_layer:  # router or answerability; not a system error
        # An off-topic one (「hi」「帮我写一首诗」) is no SOP gap: filed apart, so it does not bury the real ones.
        source = (UnansweredQuestion.Source.OFF_TOPIC if result.intent == OUT_OF_SCOPE else
                  UnansweredQuestion.Source.UNCOVERED if result.refusal_layer == "uncovered" else UnansweredQuestion.Source.REFUSAL)
        unanswered_record(
            question=query, user=user, message=reply, source=source,
            reason=f"{REFUSAL_LAYERS.get(result.refusal_layer, result.refusal_layer)}（{result.refusal_reason}）"[:255],
            top_score=top,
        )
    elif result.uncovered_reason:
        # Figures given, and the rules half of the question sent to whoever answers it.
        unanswered_record(question=query, user=user, message=reply, source=UnansweredQuestion.Source.UNCOVERED,
                          reason=f"{REFUSAL_LAYERS['uncovered']}（{result.uncovered_reason}）"[:255], top_score=top)
    elif result.hedged:
        # 「客人想带狗进来坐行不行」: answered with the closest rule, and told so; the manager still
        # sees it as a question the SOPs may not cover.
        closest = result.citations[0]["document"] if result.citations else ""
        unanswered_record(question=query, user=user, message=reply, source=UnansweredQuestion.Source.CLOSEST,
                          reason=f"只找到相近的规定《{closest}》，已作答并提示仅供参考"[:255], top_score=top)


def unanswered_record(*, question: str, user, message, source: str, reason: str = "", top_score=None) -> UnansweredQuestion:
    """One row per question, asker and day: asking the same unanswered question again counts
    up instead of flooding the list a manager works through."""
    from django.db.models import F
    from django.utils import timezone

    now = timezone.now()
    existing = (UnansweredQuestion.objects.select_for_update()
                .filter(question=question, user=user, source=source, resolved=False, created_at__gte=now - timedelta(days=1))
                .order_by("created_at").first())
    if existing is not None:
        UnansweredQuestion.objects.filter(pk=existing.pk).update(times_asked=F("times_asked") + 1, last_asked_at=now)
        existing.refresh_from_db()
        return existing
    return UnansweredQuestion.objects.create(question=question, user=user, message=message, source=source, reason=reason,
                                             top_score=top_score, last_asked_at=now)


def unanswered_resolve(*, item: UnansweredQuestion, user, note: str = "") -> UnansweredQuestion:
    from django.utils import timezone

    _may_teach(user, item)
    with transaction.atomic():
        item.resolved, item.resolved_by, item.resolved_at, item.note = True, user, timezone.now(), note[:255]
        item.save(update_fields=["resolved", "resolved_by", "resolved_at", "note"])
        audit_record(actor=user, action=AuditLog.Action.UNANSWERED_RESOLVED, target=item, after={"note": item.note})
    return item


def _may_teach(user, item: UnansweredQuestion) -> None:
    require(user, "agent.change_unansweredquestion", attempt="resolve_unanswered", message="只有店长可以处理未解答问题。")
    if not UnansweredQuestion.objects.restrict(user, "change").filter(pk=item.pk).exists():
        audit_denial(actor=user, attempt="resolve_unanswered", reason="question of another store's asker", target=item)
        raise NotFound(f"没有未解答问题 #{item.pk}。")  # another store's asker: like a missing one


def unanswered_link_section(*, item: UnansweredQuestion, user, document_path: str, section_path: str) -> UnansweredQuestion:
    """The learning loop: the question becomes a question alias of the section that answers
    it (embedded at once, no re-ingest; knowledge.services.section_alias_add) and the item is
    resolved. One transaction with both audit rows: nothing half-written."""
    from django.utils import timezone

    from knowledge.services import section_alias_add, section_alias_require

    _may_teach(user, item)
    section_alias_require(user)  # before the transaction: a refusal's audit row must not roll back with it
    if item.resolved:
        raise ValidationError({"item": [f"这条已经处理过了（{item.get_resolution_display() or '已处理'}）。"]})
    with transaction.atomic():
        alias = section_alias_add(document_path=document_path, section_path=section_path, question=item.question, user=user)
        item.resolved, item.resolved_by, item.resolved_at = True, user, timezone.now()
        item.resolution, item.linked_document, item.linked_section = "linked", document_path, section_path[:512]
        item.note = f"已关联章节：{section_path}"[:255]
        item.save(update_fields=["resolved", "resolved_by", "resolved_at", "resolution", "linked_document", "linked_section", "note"])
        audit_record(actor=user, action=AuditLog.Action.UNANSWERED_RESOLVED, target=item,
               after={"resolution": "linked", "document": document_path, "section": section_path, "alias_id": alias.pk})
    return item


def unanswered_mark_gap(*, item: UnansweredQuestion, user, note: str) -> UnansweredQuestion:
    """「制度缺失」: no section answers it; the note says what rule is missing and the question
    is listed on the corpus-gaps page for the corpus owners."""
    from django.utils import timezone

    _may_teach(user, item)
    note = (note or "").strip()
    if not note or len(note) > 255:
        raise ValidationError({"note": ["请写明缺少什么规定（1 到 255 个字）。"]})
    if item.resolved:
        raise ValidationError({"item": [f"这条已经处理过了（{item.get_resolution_display() or '已处理'}）。"]})
    with transaction.atomic():
        item.resolved, item.resolved_by, item.resolved_at, item.resolution, item.note = True, user, timezone.now(), "gap", note
        item.save(update_fields=["resolved", "resolved_by", "resolved_at", "resolution", "note"])
        audit_record(actor=user, action=AuditLog.Action.UNANSWERED_RESOLVED, target=item, after={"resolution": "gap", "note": note})
    return item


def feedback_submit(*, message: Message, user, helpful: bool | str, reason: str = ""):
    """👍/👎 on an answer; a 👎 puts the question on the unanswered list for review.
    Submitting again updates the user's earlier feedback (one per user and answer)."""
    from .models import Feedback

    if message.role != Message.Role.ASSISTANT or message.conversation.user_id != user.pk:
        raise PermissionDenied("只能评价自己会话里的回答。")
    # A form sends "1" / "0"; anything else counted as 没用 and filed the question as unanswered.
    if not isinstance(helpful, bool):
        if helpful not in ("1", "0"):
            raise ValidationError({"helpful": ["helpful 只能是 1（有用）或 0（没用）。"]})
        helpful = helpful == "1"
    reason = (reason or "").strip()
    if len(reason) > 255:
        raise ValidationError({"reason": ["原因最多 255 个字。"]})
    with transaction.atomic():
        fb, _ = Feedback.objects.update_or_create(message=message, user=user, defaults={"helpful": helpful, "reason": reason})
        if not helpful:
            question = message.conversation.messages.filter(role=Message.Role.USER, id__lt=message.id).order_by("-id").first()
            UnansweredQuestion.objects.get_or_create(
                message=message, source=UnansweredQuestion.Source.FEEDBACK,
                defaults={"question": question.content if question else "", "user": user, "reason": f"👎 {reason}"[:255]},
            )
    return fb


def can_see_details(user) -> bool:
    """The execution trace is for managers and developers, not for store staff."""
    return bool(user and user.is_authenticated and user.has_perm("agent.view_trace"))


HIDDEN_STORE = "（无权查看的门店）"


def answer_for(user, result: AgentResult, **extra) -> dict:
    """An answer as every channel returns it (REST, async tasks, MCP). The execution trace is
    there only for users with `agent.view_trace`, as on the chat page (an empty list for the
    rest), and even then it never names a store the user may not see."""
    out = {**result.as_dict(), **extra}
    out["trace"] = trace_for(user, out.get("trace") or [])
    return out


def trace_for(user, trace: list) -> list:
    import json

    from core.scoping import ALL, store_ids_for
    from ops.models import Store

    if not can_see_details(user):
        return []
    ids = store_ids_for(user, "ops.view_store")
    if ids is ALL or not trace:
        return trace
    words = set()
    for store in Store.objects.exclude(pk__in=ids):
        words.update(w for w in (store.name, store.code, *(store.aliases or [])) if w and len(w) >= 2)
    text = json.dumps(trace, ensure_ascii=False)
    for word in sorted(words, key=len, reverse=True):  # 「深圳福田店」 before 「福田」
        text = text.replace(word, HIDDEN_STORE)
    return json.loads(text)


def preference_set(*, user, show_details: bool) -> UserPreference:
    if show_details and not can_see_details(user):
        raise PermissionDenied("执行过程只对店长和开发者开放。")
    pref, _ = UserPreference.objects.update_or_create(user=user, defaults={"show_details": show_details})
    return pref


def conversation_rename(*, user, thread_id: str, title: str) -> Conversation:
    title = (title or "").strip()
    if not title:
        raise ValidationError({"title": ["标题不能为空。"]})
    if len(title) > 80:
        raise ValidationError({"title": ["标题最长 80 个字。"]})
    if problem := text_problem(title):
        raise ValidationError({"title": [f"标题{problem}"]})
    conv = _own_conversation(user, thread_id)
    conv.title = title
    conv.save(update_fields=["title", "updated_at"])
    return conv


def conversation_delete(*, user, thread_id: str) -> Conversation:
    """Soft delete: the thread leaves the sidebar; messages stay for the unanswered list and audit."""
    from django.utils import timezone

    conv = _own_conversation(user, thread_id)
    conv.deleted_at = timezone.now()
    conv.save(update_fields=["deleted_at"])
    return conv


def _own_conversation(user, thread_id: str) -> Conversation:
    conv = Conversation.objects.filter(user=user, thread_id=thread_id, deleted_at__isnull=True).first()
    if conv is None:  # another user's thread reads exactly like one that does not exist
        raise ValidationError({"thread_id": ["没有这个会话。"]})
    return conv
