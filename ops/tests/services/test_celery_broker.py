"""A task goes through the real Redis broker to a real worker and back."""
import pytest
from celery import Celery
from celery.contrib.testing.worker import start_worker


@pytest.mark.broker
def test_tool_task_round_trip_through_redis(django_db_setup, django_db_blocker):
    from ops.tasks import run_tool_task
    from ops.tools import run_tool

    url = "redis://127.0.0.1:6379/15"
    # A separate app bound to Redis: the project's app may already hold an eager backend in this process.
    app = Celery("storemind-broker-test", broker=url, backend=url, set_as_current=False)
    app.conf.update(task_serializer="json", result_serializer="json", accept_content=["json"])
    task = app.task(name="ops.run_tool")(run_tool_task.run)
    with django_db_blocker.unblock():
        with start_worker(app, perform_ping_check=False, loglevel="WARNING"):
            result = task.delay("store_sales", {"store": "天河店", "period": "上周"})
            payload = result.get(timeout=20)
        assert payload == run_tool("store_sales", {"store": "天河店", "period": "上周"}, user=None).as_dict()
        assert result.successful()
    app.close()
    # start_worker made this app the current one: shared tasks of later tests (a document published
    # from the admin) went to its Redis broker, with no worker left to run them.
    from storemind.celery import app as project_app

    project_app.set_current()
    project_app.set_default()
