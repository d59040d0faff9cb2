"""Celery application. Tasks stay thin and call services; eager when REDIS_URL is unset."""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "storemind.settings")

app = Celery("storemind")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
