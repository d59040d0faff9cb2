"""Shared test fixtures: the test database is the embedded PostgreSQL + pgvector (or
DATABASE_URL), seeded once per day with the deterministic demo data."""
from __future__ import annotations

import socket
from datetime import timedelta

import pytest


def redis_available(host: str = "127.0.0.1", port: int = 6379) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def pytest_collection_modifyitems(config, items):
    if redis_available():
        return
    skip = pytest.mark.skip(reason="needs the Redis broker at 127.0.0.1:6379, which did not answer PING")
    for item in items:
        if "broker" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """Seed the demo ops data into the test database (kept across runs with --reuse-db)."""
    from django.core.management import call_command
    from django.db.models import Max

    from ops.models import Order
    from ops.seed import TZ
    from ops.services import roles_ensure
    from ops.tools import local_today

    with django_db_blocker.unblock():
        yesterday = local_today() - timedelta(days=1)
        last = Order.objects.aggregate(m=Max("created_at"))["m"]
        if last is None or last.astimezone(TZ).date() != yesterday:
            call_command("seed_ops", "--reset", verbosity=0)
        roles_ensure()
    yield


def pytest_configure(config):
    from django.conf import settings

    # Fast hashing: tests log in many users; PBKDF2's cost buys nothing here.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
