"""Celery application. Tasks stay thin and call services; eager when REDIS_URL is unset.
Pool processes warm up (model, dictionaries) as they start, like gunicorn workers."""
import os

from celery import Celery
from celery.signals import worker_init, worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "storemind.settings")

app = Celery("storemind")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def warm_worker_parent(**_kwargs):
    """The parent loads what its pool processes can share through fork (jieba's dictionaries)."""
    from storemind.warmup import warm_before_fork

    warm_before_fork()


@worker_process_init.connect
def warm_worker_process(**_kwargs):
    """Each pool process loads the model and dictionaries after the fork, before its first task."""
    from storemind.warmup import warm_process

    warm_process()
