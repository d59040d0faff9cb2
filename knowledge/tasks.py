"""Celery task for ingestion: the same service as `manage.py ingest` and the admin action."""
from celery import shared_task


@shared_task(name="knowledge.ingest_corpus")
def ingest_corpus_task(rebuild: bool = False, actor_id: int | None = None) -> str:
    from django.contrib.auth import get_user_model

    from .services import corpus_ingest

    actor = get_user_model().objects.filter(pk=actor_id).first() if actor_id else None
    return corpus_ingest(rebuild=rebuild, actor=actor).line()


@shared_task(name="knowledge.publish_version")
def publish_version_task(version_id: int, user_id: int | None = None) -> str:
    """Index a document version and switch it in (knowledge.documents.version_index), telling the
    admin's progress bar how far it got."""
    from .documents import version_index
    from .models import DocumentVersion

    def progress(done: int, total: int) -> None:
        DocumentVersion.objects.filter(pk=version_id, status=DocumentVersion.Status.INDEXING).update(progress=int(90 * done / max(1, total)))

    version = version_index(version_id, user_id, progress=progress)
    return f"{version} {version.get_status_display()}" if version else f"version {version_id} not found"


@shared_task(name="knowledge.publish_versions")
def publish_versions_task(version_ids: list[int], user_id: int | None = None) -> str:
    """Many drafts published as one job (knowledge.documents.document_publish_many); a batch that
    fails marks its versions failed with the reason and the others still go on."""
    from django.contrib.auth import get_user_model

    from .documents import version_index
    from .models import DocumentVersion
    from .services import publish_versions

    user = get_user_model().objects.filter(pk=user_id).first() if user_id else None
    ids = list(DocumentVersion.objects.filter(pk__in=version_ids, status=DocumentVersion.Status.INDEXING).order_by("pk").values_list("pk", flat=True))
    for i in range(0, len(ids), 50):
        batch = list(DocumentVersion.objects.filter(pk__in=ids[i : i + 50]).select_related("document"))
        try:
            publish_versions(batch, actor=user)
        except Exception:  # one at a time, so each failure is the failing version's own
            for version in batch:
                version_index(version.pk, user_id)
    return f"{len(ids)} versions published"
