"""The acknowledgement WeCom waits for (at most 5 s) comes at once; the answer follows from a
real Celery worker over the Redis broker and is sent exactly once, however often WeCom
delivers the same message. Not in a test transaction: the worker has its own connection."""
import time
from urllib.parse import urlencode

import pytest
from celery import Celery
from celery.contrib.testing.worker import start_worker
from django.test import Client

from channels.tests.fakes import FakeWeCom, text_message, wecom_callback, wecom_settings


@pytest.mark.broker
def test_the_callback_is_acknowledged_at_once_and_answered_once_by_a_worker(settings, fake_http, django_db_setup, django_db_blocker):
    from django.contrib.auth import get_user_model
    from django.core.cache import cache

    from channels.models import Delivery, Identity, Inbound
    from channels.tasks import answer_inbound_task, send_delivery
    from ops.tests.factories import make_user
    from storemind.celery import app as project_app

    cache.delete("channels:wecom:access_token")
    wecom_settings(settings, fake_http)
    wecom = FakeWeCom(fake_http)
    url = "redis://127.0.0.1:6379/15"
    app = Celery("storemind-channels-test", broker=url, backend=url, set_as_current=False)
    app.conf.update(task_serializer="json", result_serializer="json", accept_content=["json"])
    app.task(name="channels.answer")(answer_inbound_task.run)
    app.task(name="channels.send", bind=True, max_retries=5)(send_delivery.run.__func__)  # bound: the function itself
    message_id = f"broker-{time.time_ns()}"
    with django_db_blocker.unblock():
        get_user_model().objects.filter(username="wx_broker_staff").delete()
        staff = make_user("wx_broker_staff", role="staff", stores=["GZ-TH"])
        Identity.objects.create(platform="wecom", external_id="broker1", user=staff)
        try:
            with start_worker(app, perform_ping_check=False, loglevel="WARNING"):
                app.set_current()
                query, body = wecom_callback(text_message("broker1", "会员卡能跨店用吗", message_id))
                started = time.perf_counter()
                r = Client().post(f"/channels/wecom/callback?{urlencode(query)}", data=body, content_type="text/xml")
                acked = time.perf_counter() - started
                assert r.status_code == 200 and r.content == b"success" and acked < 1.0, acked
                deadline = time.time() + 60
                while not wecom.sent and time.time() < deadline:
                    time.sleep(0.2)
                again = Client().post(f"/channels/wecom/callback?{urlencode(query)}", data=body, content_type="text/xml")
                assert again.status_code == 200
                time.sleep(2)  # time for a second answer, were one queued
            [sent] = wecom.sent
            assert sent["touser"] == "broker1" and "《" in sent["markdown"]["content"]
            assert Inbound.objects.filter(message_id=message_id).count() == 1
            assert Delivery.objects.filter(inbound__message_id=message_id, status="sent").count() == 1
        finally:
            Delivery.objects.filter(inbound__message_id=message_id).delete()
            Inbound.objects.filter(message_id=message_id).delete()
            get_user_model().objects.filter(username="wx_broker_staff").delete()
            app.close()
            project_app.set_current()
            project_app.set_default()
