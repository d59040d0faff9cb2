"""The channels' Celery tasks: answer a recorded message; send one delivery, retried with
backoff while the platform says try again (a rate limit, a token to refresh, a busy server);
the send task is rate-limited so a burst waits in the queue instead of hitting the platform's
limit."""
from __future__ import annotations

import time

from celery import shared_task
from django.conf import settings

from .platforms.base import PlatformError


@shared_task(name="channels.answer")
def answer_inbound_task(inbound_id: int) -> None:
    from .services import answer_inbound

    answer_inbound(inbound_id)


@shared_task(name="channels.send", bind=True, max_retries=5, rate_limit=settings.SM_CHANNEL_SEND_RATE)
def send_delivery(self, delivery_id: int) -> bool:
    from .services import give_up, send

    try:
        return send(delivery_id)
    except PlatformError as exc:
        if self.request.retries >= self.max_retries:
            give_up(delivery_id, f"gave up after {self.request.retries + 1} attempts: {exc}")
            return False
        backoff = min(300, settings.SM_CHANNEL_RETRY_BASE_S * 2 ** self.request.retries)
        if self.request.is_eager:  # no broker to come back through (no REDIS_URL): the next attempt runs here
            time.sleep(min(backoff, 2))
            return send_delivery.apply(args=(delivery_id,), retries=self.request.retries + 1).get(disable_sync_subtasks=False)
        raise self.retry(exc=exc, countdown=backoff) from exc


@shared_task(name="channels.proposal_cards")
def proposal_cards_task(proposal_id: int) -> int:
    from .services import proposal_cards

    return proposal_cards(proposal_id)
