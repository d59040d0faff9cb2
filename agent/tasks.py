"""The agent as a Celery task: the same service as the request path."""
import logging
import uuid

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


# Whose question a task id is, for as long as Celery keeps its result (1 day by default): an
# unknown id or another user's is a 404, never 「pending」 for ever (Celery's answer for any id).
OWNER_TTL_S = 24 * 3600


def _owner_key(task_id: str) -> str:
    return f"chat-task-owner:{task_id}"


def submit_ask(user_id: int, query: str, thread_id: str | None):
    """Queue a question; raises QueueUnavailable at once (no publish retries) when the
    broker does not answer, so the caller can fall back or say 503."""
    from django.core.cache import cache

    task_id = str(uuid.uuid4())
    try:
        # The owner first: if the cache cannot be written nothing is queued, rather than a queued
        # task reported as a failed publish (and answered a second time by the caller).
        cache.set(_owner_key(task_id), user_id, OWNER_TTL_S)
        return ask_task.apply_async((user_id, query, thread_id), task_id=task_id, retry=False)
    except _queue_errors() as exc:
        log.warning("broker unavailable, question not queued: %s: %s", type(exc).__name__, exc)
        raise QueueUnavailable(str(exc)) from exc


def task_state(task_id: str, user_id: int):
    """(status, payload) of a queued question of `user_id`: pending | done | failed, or
    missing (an unknown id, or another user's); QueueUnavailable when the result backend
    cannot be read."""
    from celery.result import AsyncResult
    from django.core.cache import cache

    try:
        if cache.get(_owner_key(task_id)) != user_id:
            return "missing", None
        res = AsyncResult(task_id)
        if res.successful():
            return "done", res.result
        if res.failed():
            return "failed", None
        return "pending", res.info if res.state == PROGRESS and isinstance(res.info, dict) else None
    except _queue_errors() as exc:
        log.warning("result backend unavailable: %s: %s", type(exc).__name__, exc)
        raise QueueUnavailable(str(exc)) from exc


PROGRESS = "PROGRESS"


def progress_reporter(task):
    """An on_step callback publishing the finished pipeline steps as the task's PROGRESS
    state, so the polling page can show them; a result backend hiccup never fails the answer."""
    done: list[str] = []

    def report(entry: dict) -> None:
        done.append(entry["step"])
        if not task.request.id or task.request.is_eager:
            return
        try:
            task.update_state(state=PROGRESS, meta={"steps": list(done)})
        except _queue_errors() as exc:
            log.warning("could not publish progress: %s: %s", type(exc).__name__, exc)

    return report


@shared_task(name="agent.ask", bind=True)
def ask_task(self, user_id: int, query: str, thread_id: str | None = None) -> dict:
    from django.contrib.auth import get_user_model

    from .services import chat_ask

    user = get_user_model().objects.get(pk=user_id)
    result, conv, reply = chat_ask(user=user, query=query, thread_id=thread_id, on_step=progress_reporter(self))
    return {**result.as_dict(), "thread_id": conv.thread_id, "message_id": reply.pk, "user_id": user_id}
