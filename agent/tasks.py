"""The agent as a Celery task: the same service as the request path."""
from celery import shared_task


@shared_task(name="agent.ask")
def ask_task(user_id: int, query: str, thread_id: str | None = None) -> dict:
    from django.contrib.auth import get_user_model

    from .services import chat_ask

    user = get_user_model().objects.get(pk=user_id)
    result, conv, reply = chat_ask(user=user, query=query, thread_id=thread_id)
    return {**result.as_dict(), "thread_id": conv.thread_id, "message_id": reply.pk, "user_id": user_id}
