"""Celery task for ingestion: the same service as `manage.py ingest` and the admin action."""
from celery import shared_task


@shared_task(name="knowledge.ingest_corpus")
def ingest_corpus_task(rebuild: bool = False, actor_id: int | None = None) -> str:
    from django.contrib.auth import get_user_model

    from .services import corpus_ingest

    actor = get_user_model().objects.filter(pk=actor_id).first() if actor_id else None
    return corpus_ingest(rebuild=rebuild, actor=actor).line()
