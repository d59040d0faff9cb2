"""The chat page (HTMX). Full page on GET; on an HTMX request the same URL returns the
partial (one turn, or one conversation). Errors render as readable messages in the page."""
from __future__ import annotations

import json
import logging
import queue
import threading

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connections
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from core.errors import message_text, refusal_of
from core.throttling import throttle_web
from core.validation import text_problem

from .llm import get_llm
from .models import Conversation, Message
from .selectors import sidebar_threads, thread_turns
from .services import (
    assistant_require,
    chat_ask,
    conversation_delete,
    conversation_rename,
    feedback_submit,
    preference_set,
    thread_for,
    validate_query,
)
from .tasks import QueueUnavailable, submit_ask, task_state

log = logging.getLogger(__name__)


def _throttled(request, wait: float):
    response = _error(request, f"操作太频繁，请 {int(wait) + 1} 秒后再试。", 429)
    response["Retry-After"] = str(int(wait) + 1)
    return response


def _error(request, message: str, status: int):
    if request.htmx:
        return render(request, "htmx/error.html", {"error": message})  # 200 so htmx swaps it in
    return render(request, "htmx/error.html", {"error": message}, status=status)


def _refused(request, exc):
    """A service's refusal (ValidationError, PermissionDenied …) as the page shows it (core.errors)."""
    refusal = refusal_of(exc)
    return _error(request, refusal.message, refusal.status)


@login_required
def chat(request):
    return _ask(request) if request.method == "POST" else _page(request)


def _ask(request):
    """A question posted: queued (async), streamed (with an LLM) or answered here; the turn as a partial."""
    user = request.user
    if (wait := throttle_web(request, "chat")) is not None:
        return _throttled(request, wait)
    query = request.POST.get("query", "")
    thread_id = request.POST.get("thread_id") or None
    try:
        if request.POST.get("async") == "1":
            assistant_require(user)
            validate_query(query)
            thread = thread_for(user=user, thread_id=thread_id)
            try:
                task = submit_ask(user.pk, query, thread)
                response = render(request, "htmx/pending.html", {"task_id": task.id, "query": query, "thread_id": thread,
                                                                 "oob_thread": thread_id != thread})
                if thread_id != thread:  # as for an answer given at once: a reload reopens the thread (it showed ?new=1, empty)
                    response["HX-Replace-Url"] = f"{request.path}?thread={thread}"
                return response
            except QueueUnavailable:
                pass  # no broker: answer right here instead (the same service)
        if request.POST.get("stream") == "1" and get_llm().available:
            assistant_require(user)
            validate_query(query)
            return _streamed(request, query, thread_id)
        result, conv, reply = chat_ask(user=user, query=query, thread_id=thread_id)
    except (ValidationError, PermissionDenied) as exc:
        return _refused(request, exc)
    except Exception:  # the page must never show a stack trace or a blank area
        log.exception("chat failed")
        return _error(request, "回答时出了问题，请稍后再试；如果一直出错，请联系店长。", 500)
    if not request.htmx:
        return redirect(f"{request.path}?thread={conv.thread_id}")
    response = render(request, "htmx/turn.html", _turn_context(user, query, thread_id, conv, reply))
    if thread_id != conv.thread_id:  # a new thread: the address says which, so a reload reopens it (was ?new=1: empty)
        response["HX-Replace-Url"] = f"{request.path}?thread={conv.thread_id}"
    return response


def _page(request):
    """The chat page, or one thread's turns (HTMX), or a new thread."""
    user = request.user
    conv, missing = None, False
    if request.GET.get("thread") and not request.GET.get("new"):
        conv = Conversation.objects.of_owner(user).filter(thread_id=request.GET["thread"]).first()
        # A deleted thread's old link showed Django's English debug page under `make run`: the chat
        # page itself says so (still a 404) and a question asked there starts a new thread.
        missing = conv is None
    elif not request.GET.get("new"):
        conv = Conversation.objects.in_sidebar(user).first()
    context = {"turns": thread_turns(conv, user), "thread_id": conv.thread_id if conv else "", "conversation": conv,
               "conversations": Conversation.objects.in_sidebar(user)[:30], "stream": get_llm().available,
               "missing_thread": missing}
    status = 404 if missing else 200
    if request.htmx:
        return render(request, "htmx/turns.html", context, status=status)
    return render(request, "agent/chat.html", context, status=status)


def _turn_context(user, query: str, thread_id: str | None, conv, reply) -> dict:
    return {"turn": {"question": query.strip(), "reply": reply}, "thread_id": conv.thread_id,
            "oob_thread": thread_id != conv.thread_id, "conversations": Conversation.objects.in_sidebar(user)[:30]}


def _streamed(request, query: str, thread_id: str | None) -> StreamingHttpResponse:
    """With an LLM configured the answer is shown as it is written: one JSON object per line,
    {"delta": text} while the model writes, then {"html": the finished turn} (the same turn the
    page gets without streaming: guards applied, citations checked, stored). The turn runs in a
    thread of its own, the response relays what it writes."""
    user, pieces, outcome = request.user, queue.Queue(), {}

    def work():
        try:
            outcome["turn"] = chat_ask(user=user, query=query, thread_id=thread_id, on_delta=lambda text: pieces.put(text))
        except (ValidationError, PermissionDenied) as exc:
            outcome["error"] = message_text(exc)
        except Exception:
            log.exception("chat failed")
            outcome["error"] = "回答时出了问题，请稍后再试；如果一直出错，请联系店长。"
        finally:
            connections.close_all()  # this thread's own connection
            pieces.put(None)

    def lines():
        while (text := pieces.get()) is not None:
            yield json.dumps({"delta": text}, ensure_ascii=False) + "\n"
        if "error" in outcome:
            yield json.dumps({"html": render_to_string("htmx/error.html", {"error": outcome["error"]}, request), "error": True},
                             ensure_ascii=False) + "\n"
            return
        result, conv, reply = outcome["turn"]
        html = render_to_string("htmx/turn.html", _turn_context(user, query, thread_id, conv, reply), request)
        yield json.dumps({"html": html, "thread_id": conv.thread_id}, ensure_ascii=False) + "\n"

    threading.Thread(target=work, name="chat-stream", daemon=True).start()
    response = StreamingHttpResponse(lines(), content_type="application/x-ndjson; charset=utf-8")
    response["X-Accel-Buffering"] = "no"  # a proxy must pass each line on as it comes
    return response


@login_required
def chat_task(request, task_id: str):
    """Polled by the page in async mode: the pending placeholder until the task is done."""
    state, payload = task_state(task_id, request.user.pk)  # the database only: a broker restart loses nothing here
    if state == "missing":  # unknown, or another user's (its progress steps included)
        raise Http404
    if state == "failed":
        return _error(request, "后台处理失败或任务已丢失，请重新提问。", 500)
    if state == "pending":
        return render(request, "htmx/pending.html", {"task_id": task_id, "query": request.GET.get("q", ""),
                                                     "steps": (payload or {}).get("steps", [])})
    if payload.get("user_id") != request.user.pk:
        raise Http404
    reply = get_object_or_404(Message, pk=payload["message_id"], conversation__user=request.user)
    question = reply.conversation.messages.filter(role=Message.Role.USER, id__lt=reply.id).order_by("-id").first()
    return render(request, "htmx/turn.html", {"turn": {"question": question.content if question else "", "reply": reply}})


@login_required
@require_POST
def feedback(request, message_id: int):
    if (wait := throttle_web(request, "feedback")) is not None:
        return _throttled(request, wait)
    # Only the asker's own answers exist here: another user's reads like one that does not.
    message = get_object_or_404(Message, pk=message_id, conversation__user=request.user, role=Message.Role.ASSISTANT)
    try:
        fb = feedback_submit(message=message, user=request.user, helpful=request.POST.get("helpful"),
                             reason=request.POST.get("reason", ""))
    except (ValidationError, PermissionDenied) as exc:
        return _refused(request, exc)
    if not request.htmx:
        return redirect(f"/?thread={message.conversation.thread_id}")
    return render(request, "htmx/feedback.html", {"m": message, "feedback_saved": fb})


@login_required
def threads(request):
    """The thread list, narrowed by `q` (the drawer's search box); the whole page without HTMX."""
    query = request.GET.get("q", "")
    if problem := text_problem(query):
        return _error(request, f"搜索词{problem}", 400)
    if not request.htmx:
        return redirect(reverse("chat:index"))
    return render(request, "htmx/conversation_list.html", {
        "conversations": sidebar_threads(request.user, query), "searched": " ".join(query.split())})


@login_required
@require_POST
def thread_rename(request, thread_id: str):
    try:
        conversation_rename(user=request.user, thread_id=thread_id, title=request.POST.get("title", ""))
    except (ValidationError, PermissionDenied) as exc:
        if request.htmx:  # the message replaced the whole list (「   」 as a title emptied the drawer)
            return _thread_list(request, thread_id, error=message_text(exc))
        return _refused(request, exc)
    return _thread_list(request, thread_id)


@login_required
@require_POST
def thread_delete(request, thread_id: str):
    try:
        conversation_delete(user=request.user, thread_id=thread_id)
    except (ValidationError, PermissionDenied) as exc:
        if request.htmx:
            return _thread_list(request, thread_id, error=message_text(exc))
        return _refused(request, exc)
    if request.htmx:
        response = render(request, "htmx/conversation_list.html", {"conversations": Conversation.objects.in_sidebar(request.user)[:30]})
        if request.POST.get("current") == "1":  # the open thread is gone: start a new one
            response["HX-Redirect"] = f"{reverse('chat:index')}?new=1"
        return response
    return redirect(f"{reverse('chat:index')}?new=1")


def _thread_list(request, thread_id: str, error: str = ""):
    if not request.htmx:
        return redirect(f"{reverse('chat:index')}?thread={thread_id}")
    return render(request, "htmx/conversation_list.html", {
        "conversations": Conversation.objects.in_sidebar(request.user)[:30], "thread_id": thread_id, "error": error})


@login_required
@require_POST
def preferences(request):
    try:
        preference_set(user=request.user, show_details=request.POST.get("show_details") == "1")
    except PermissionDenied as exc:
        return _refused(request, exc)
    return redirect(request.POST.get("next") if url_has_allowed_host_and_scheme(request.POST.get("next"), {request.get_host()}) else "/")
