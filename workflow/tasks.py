from celery import shared_task


@shared_task(name="workflow.expire_proposals")
def expire_proposals_task() -> int:
    from .services import proposals_expire

    return proposals_expire()
