"""Celery tasks for ops: thin wrappers over the whitelisted tools."""
from celery import shared_task

from .tools import run_tool


@shared_task(name="ops.run_tool")
def run_tool_task(name: str, params: dict) -> dict:
    """Run one whitelisted tool in a worker (scheduled reports, slow aggregates)."""
    return run_tool(name, params).as_dict()
