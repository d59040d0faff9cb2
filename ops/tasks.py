"""Celery tasks for ops: thin wrappers over the whitelisted tools."""
from celery import shared_task

from .tools import run_tool


@shared_task(name="ops.run_tool")
def run_tool_task(name: str, params: dict, user_id: int | None = None) -> dict:
    """Run one whitelisted tool in a worker (scheduled reports, slow aggregates), on behalf of
    `user_id`, or of the operator when None (a scheduled report configured by an operator)."""
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(pk=user_id) if user_id is not None else None
    return run_tool(name, params, user=user).as_dict()
