"""A task goes through the real Redis broker to a real worker and back."""
import pytest
from celery.contrib.testing.worker import start_worker

from storemind.celery import app


@pytest.mark.broker
def test_tool_task_round_trip_through_redis(django_db_blocker, settings):
    from ops.tasks import run_tool_task
    from ops.tools import run_tool

    url = "redis://127.0.0.1:6379/15"
    old = {k: app.conf[k] for k in ("broker_url", "result_backend", "task_always_eager")}
    app.conf.update(broker_url=url, result_backend=url, task_always_eager=False)
    try:
        with django_db_blocker.unblock():
            with start_worker(app, perform_ping_check=False, loglevel="WARNING"):
                result = run_tool_task.delay("store_sales", {"store": "天河店", "period": "上周"})
                payload = result.get(timeout=20)
            assert payload == run_tool("store_sales", {"store": "天河店", "period": "上周"}).as_dict()
            assert result.successful()
    finally:
        app.conf.update(old)
