"""The agent as a Celery task: the same service as the request path."""
import logging

from celery import shared_task

log = logging.getLogger(__name__)


class QueueUnavailable(RuntimeError):
    """The broker (or the result backend) cannot be reached: answer synchronously or 503."""


def _queue_errors() -> tuple[type[BaseException], ...]:
    from kombu.exceptions import OperationalError as KombuOperationalError

    # RuntimeError: Celery's "retry limit exceeded ... result store" once its retries are spent.
    errors: list[type[BaseException]] = [KombuOperationalError, ConnectionError, TimeoutError, OSError, RuntimeError]
    try:
        from redis.exceptions import RedisError

        errors.append(RedisError)
    except ImportError:  # pragma: no cover - redis is a pinned dependency
        pass
    return tuple(errors)


# A task still pending this long after it was queued was lost (a broker restart drops what
# Redis held in memory): it is reported failed, so a client asks again instead of polling for ever.
def _lost_after_s() -> int:
    from django.conf import settings

    return int(getattr(settings, "SM_CHAT_TASK_LOST_AFTER_S", 600))


def submit_ask(user_id: int, query: str, thread_id: str | None, channel: str | None = None):
    """Queue a question. Its id, owner and state are a ChatTask row first, so nothing a client
    holds lives only in the broker; raises QueueUnavailable at once (no publish retries) when
    the broker does not answer, so the caller can fall back or say 503 (and the row goes)."""
    from .models import ChatTask

    task = ChatTask.objects.create(user_id=user_id, query=query, thread_id=thread_id or "")
    try:
        from core.audit import request_meta

        channel = channel or (request_meta.get() or {}).get("channel") or "web"  # the worker has no request
        return ask_task.apply_async((user_id, query, thread_id, channel), task_id=str(task.id), retry=False)
    except _queue_errors() as exc:
        ChatTask.objects.filter(pk=task.pk).delete()  # never queued: the caller answers it or says 503
        log.warning("broker unavailable, question not queued: %s: %s", type(exc).__name__, exc)
        raise QueueUnavailable(str(exc)) from exc


def task_state(task_id: str, user_id: int):
    """(status, payload) of a queued question of `user_id`, read from the database only:
    pending (payload: the finished steps) | done (the answer) | failed, or missing (an unknown
    id, or another user's)."""
    from datetime import timedelta

    from django.core.exceptions import ValidationError
    from django.utils import timezone

    from .models import ChatTask

    try:
        task = ChatTask.objects.filter(pk=task_id, user_id=user_id).first()
    except ValidationError:  # not a UUID
        return "missing", None
    if task is None:
        return "missing", None
    if task.status == ChatTask.Status.DONE:
        return "done", task.result
    if task.status == ChatTask.Status.FAILED:
        return "failed", None
    if task.created_at < timezone.now() - timedelta(seconds=_lost_after_s()):
        ChatTask.objects.filter(pk=task.pk, status=ChatTask.Status.PENDING).update(
            status=ChatTask.Status.FAILED, finished_at=timezone.now())
        return "failed", None
    return "pending", {"steps": list(task.steps)}


def progress_reporter(task_id: str | None):
    """An on_step callback keeping the finished pipeline steps on the task's row, so the
    polling page can show them."""
    from .models import ChatTask

    done: list[str] = []

    def report(entry: dict) -> None:
        done.append(entry["step"])
        if task_id:
            ChatTask.objects.filter(pk=task_id, status=ChatTask.Status.PENDING).update(steps=list(done))

    return report


@shared_task(name="agent.ask", bind=True)
def ask_task(self, user_id: int, query: str, thread_id: str | None = None, channel: str = "web") -> dict:
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from .models import ChatTask
    from .services import answer_for, chat_ask

    task_id = self.request.id
    user = get_user_model().objects.get(pk=user_id)
    try:
        result, conv, reply = chat_ask(user=user, query=query, thread_id=thread_id, on_step=progress_reporter(task_id), channel=channel)
    except Exception:
        ChatTask.objects.filter(pk=task_id).update(status=ChatTask.Status.FAILED, finished_at=timezone.now())
        raise
    payload = answer_for(user, result, thread_id=conv.thread_id, message_id=reply.pk, user_id=user_id)
    # Answered late (after the row was written off as lost) still counts: the answer is there.
    ChatTask.objects.filter(pk=task_id).update(status=ChatTask.Status.DONE, message=reply, result=payload,
                                               thread_id=conv.thread_id, finished_at=timezone.now())
    return payload


@shared_task(name="agent.purge_chat_tasks")
def purge_chat_tasks(days: int = 7) -> int:
    """Forget async task ids older than `days` (their answers stay in the threads)."""
    from datetime import timedelta

    from django.utils import timezone

    from .models import ChatTask

    deleted, _ = ChatTask.objects.filter(created_at__lt=timezone.now() - timedelta(days=days)).delete()
    return deleted
