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
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db.models import Max

    from core.roles import sync_roles
    from ops.models import Order
    from ops.seed import TZ
    from ops.tools import DAY_STARTS_AT, local_today

    with django_db_blocker.unblock():
        from django.db import connection

        if not connection.settings_dict["NAME"].startswith("test_"):
            # Only tests without the django_db marker were selected (live server, real
            # concurrency): pytest-django set nothing up, so do it here. Never the dev database.
            from django.test.utils import setup_databases

            setup_databases(verbosity=0, interactive=False, keepdb=True, aliases={"default"})
        assert connection.settings_dict["NAME"].startswith("test_"), "refusing to seed a non-test database"
        yesterday = local_today() - timedelta(days=1)
        last = Order.objects.aggregate(m=Max("created_at"))["m"]
        # The seed runs up to the moment it was made: older than yesterday's trading day, it is stale.
        if last is None or (last.astimezone(TZ) - timedelta(hours=DAY_STARTS_AT)).date() < yesterday:
            # A new day: start the test database's business data over (TRUNCATE also
            # clears the append-only audit log, whose triggers are switched off for it).
            from django.db import connection

            from core.testing import audit_truncate_allowed

            with connection.cursor() as cur, audit_truncate_allowed(cur):
                cur.execute(
                    "TRUNCATE workflow_auditlog, workflow_restockline, workflow_restockrequest, workflow_ticket, "
                    "workflow_proposal, agent_feedback, agent_unansweredquestion, agent_message, agent_conversation, "
                    "ops_apitoken, ops_inventoryadjustment, ops_storedvaluetxn, ops_storedvalueaccount, ops_orderline, "
                    "ops_order, ops_inventory, ops_member, ops_product, ops_store_members, ops_store CASCADE"
                )
                # The people too: a kept user's store memberships went with the stores, and every
                # fixture that reuses a committed user by name got one without a store.
                get_user_model().objects.all().delete()
            call_command("seed_ops", verbosity=0)
        sync_roles()
        from knowledge.services import corpus_ingest

        corpus_ingest()  # incremental: a no-op when the corpus and embedder are unchanged
    yield


@pytest.fixture(autouse=True)
def _llm_circuit_closed():
    """The LLM circuit breaker is process-wide: each test starts with it closed."""
    from agent.llm import breaker

    breaker.reset()
    yield


def pytest_configure(config):
    from django.conf import settings

    # Fast hashing: tests log in many users; PBKDF2's cost buys nothing here.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # The fast zero-dependency embedder; tests of e5 itself ask for it explicitly.
    settings.SM_EMBED_BACKEND = "hashing"
    settings.SM_EMBED_DIM = 256
    # Refusal thresholds are calibrated for e5 (`eval calibrate`); the hashing embedder's
    # similarities live on another scale, so tests that exercise refusal set their own.
    settings.SM_REFUSAL_THRESHOLD = 0.0
    settings.SM_JUDGE_THRESHOLD = 0.0
    settings.SM_TAUGHT_ALIAS_MIN = 0.6  # hashing: a paraphrase of a taught question scores ~0.7, unrelated ones < 0.2
    settings.SM_LLM_BACKEND = "none"


class FakeHTTPServer:
    """A real HTTP server on 127.0.0.1 standing in for an LLM/embedding endpoint: the true
    edge of the system. Routes return the exact JSON shapes the real APIs return."""

    def __init__(self):
        import json
        import threading
        import time
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.routes = {}
        self.requests = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self.do_POST(get=True)

            def do_POST(self, get=False):
                from urllib.parse import parse_qsl

                path, _, query = self.path.partition("?")
                length = int(self.headers.get("Content-Length") or 0)
                body = dict(parse_qsl(query)) if get else json.loads(self.rfile.read(length) or b"{}")
                server.requests.append((self.path, body, dict(self.headers)))
                # Routes by the whole path, or by the path alone; a route that wants the query
                # string (an access token in it, as WeCom and Feishu send them) gets it too.
                route = server.routes.get(self.path) or server.routes.get(path)
                if route is None:
                    self.send_response(404)
                    self.end_headers()
                    return
                status, payload, *streamed = route(body, dict(parse_qsl(query))) if getattr(route, "wants_query", False) else route(body)
                if streamed:  # (status, [chunks…], content type): written one by one, as a streaming server sends them
                    self.send_response(status)
                    self.send_header("Content-Type", streamed[0])
                    self.send_header("Cache-Control", "no-cache")
                    self.end_headers()
                    for chunk in payload:
                        self.wfile.write(chunk)
                        self.wfile.flush()
                        time.sleep(0.01)
                    self.close_connection = True
                    return
                data = json.dumps(payload).encode() if not isinstance(payload, bytes) else payload
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake_http():
    server = FakeHTTPServer()
    yield server
    server.close()
