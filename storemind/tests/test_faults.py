"""Fault injection: Redis unreachable, an LLM that accepts and never answers, the database
restarted. Status codes are exact; timings are generous bounds on what the issue requires
(a hung LLM costs at most the budget + 1 s; recovery within 5 s of the database being back).

Redis-down runs a real `manage.py runserver` process whose REDIS_URL points at a closed
port (settings are read at start-up); the database tests stop the embedded PostgreSQL
for real. Everything runs on the committed test database and cleans up after itself.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.test import override_settings

from ops.services import api_token_issue
from ops.tests.factories import make_user, pos_token
from storemind.tests.committed import committed_writes
from storemind.tests.servers import free_port, live_server

BASE = Path(settings.BASE_DIR)


class HungServer:
    """A TCP server that accepts connections and never sends a byte (an LLM stuck loading)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(50)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self):
        self._stop = True
        for c in self.held:
            c.close()
        self.sock.close()


@pytest.fixture
def committed_db(django_db_setup, django_db_blocker):
    """Real, committed transactions; what these tests write carries 'FAULT-' and is undone."""
    with committed_writes(django_db_blocker, prefix="FAULT-", usernames=r"^fault_"):
        yield


# --- Redis unreachable ------------------------------------------------------------------------


@pytest.fixture
def redis_down_server(committed_db):
    """A real server process whose Redis (cache, broker, result backend) is a closed port."""
    from django.db import connection

    port, dead = free_port(), free_port()
    env = {
        **os.environ, "REDIS_URL": f"redis://127.0.0.1:{dead}/0", "SM_DEBUG": "1",
        "SM_DB_NAME": connection.settings_dict["NAME"],  # the test database, seeded and indexed
        "SM_EMBED_BACKEND": settings.SM_EMBED_BACKEND, "SM_EMBED_DIM": str(settings.SM_EMBED_DIM),
        "SM_REFUSAL_THRESHOLD": "0", "SM_JUDGE_THRESHOLD": "0", "SM_LLM_BACKEND": "none",
    }
    env.pop("DATABASE_URL", None) if not os.environ.get("DATABASE_URL") else None
    if os.environ.get("DATABASE_URL"):
        env["DATABASE_URL"] = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/" + connection.settings_dict["NAME"]
    log = tempfile.NamedTemporaryFile("w+", prefix="sm-server-", suffix=".log", delete=False)  # a pipe nobody reads would fill and block the server
    proc = subprocess.Popen([sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"], cwd=BASE, env=env,
                            stdout=subprocess.DEVNULL, stderr=log)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail("the server did not start: " + Path(log.name).read_text()[-2000:])
    try:
        yield url
    finally:
        proc.terminate()
        log.close()
        os.unlink(log.name)
        proc.wait(timeout=10)


def test_redis_down_pos_writes_succeed_async_chat_is_a_quick_503_and_ready_says_why(redis_down_server):
    url = redis_down_server
    pos = {"Authorization": f"Bearer {pos_token('GZ-TH', username=f'fault_pos_{uuid.uuid4().hex[:6]}')}"}
    staff = make_user(f"fault_staff_{uuid.uuid4().hex[:6]}", role="staff")
    chat = {"Authorization": f"Bearer {api_token_issue(user=staff, name='t')[1]}"}
    ext = f"FAULT-{uuid.uuid4().hex[:10]}"

    order = {"external_id": ext, "created_at": "2026-11-20T21:15:00+08:00", "channel": "堂食", "total": "30.00",
             "lines": [{"sku": "B001", "qty": 2, "unit_price": "15.00", "amount": "30.00"}]}
    r = httpx.post(url + "/api/v1/orders", json=order, headers=pos, timeout=20)
    assert r.status_code == 201, r.text  # the throttle counts in the database: Redis is not needed
    r = httpx.post(url + "/api/v1/inventory/adjustments", json={"sku": "B001", "delta": 1, "reason": "receive", "external_id": ext},
                   headers=pos, timeout=20)
    assert r.status_code == 201, r.text

    started = time.monotonic()
    r = httpx.post(url + "/api/v1/chat", json={"query": "会员卡能跨店用吗", "async": True}, headers=chat, timeout=30)
    elapsed = time.monotonic() - started
    assert r.status_code == 503 and r.headers["Retry-After"] and "detail" in r.json(), r.text
    assert elapsed < 5, f"async chat took {elapsed:.1f} s to say 503"
    r = httpx.post(url + "/api/v1/chat", json={"query": "会员卡能跨店用吗"}, headers=chat, timeout=30)
    assert r.status_code == 200 and r.json()["answer"]  # the synchronous path needs no Redis

    assert httpx.get(url + "/health", timeout=5).json() == {"status": "ok"}
    ready = httpx.get(url + "/ready", timeout=10)
    assert ready.status_code == 503 and ready.headers["Retry-After"]
    checks = ready.json()["checks"]
    assert checks["redis"]["status"] == "error" and checks["database"]["status"] == "ok"


def test_redis_down_chat_page_falls_back_to_a_synchronous_answer(redis_down_server):
    url = redis_down_server
    user = make_user(f"fault_page_{uuid.uuid4().hex[:6]}", role="staff")
    from django.test import Client

    session = Client()
    session.force_login(user)  # a real session row; the server process reads the same database
    with httpx.Client(base_url=url, timeout=30, cookies={"sessionid": session.cookies["sessionid"].value}) as web:
        assert web.get("/").status_code == 200
        r = web.post("/", data={"query": "会员卡能跨店用吗", "async": "1", "csrfmiddlewaretoken": web.cookies["csrftoken"]},
                     headers={"HX-Request": "true", "X-CSRFToken": web.cookies["csrftoken"]})
    assert r.status_code == 200
    assert "hx-get" not in r.text or "/chat/tasks/" not in r.text  # not the polling placeholder
    from agent.models import Message

    reply = Message.objects.filter(conversation__user=user, role=Message.Role.ASSISTANT).get()
    assert reply.content and reply.content[:20] in r.text


# --- LLM hung ---------------------------------------------------------------------------------


@pytest.fixture
def hung_llm():
    server = HungServer()
    yield server
    server.close()


@pytest.mark.django_db
def test_a_hung_llm_costs_at_most_the_budget_then_the_circuit_opens(hung_llm, client):
    from rest_framework.test import APIClient

    from agent.llm import breaker

    user = make_user("fault_llm", role="manager")  # the trace is for view_trace holders
    api = APIClient()
    api.force_authenticate(user)
    api.post("/api/v1/chat", {"query": "会员卡能跨店用吗"}, format="json")  # warm up (jieba, embedder) without an LLM
    with override_settings(SM_LLM_BACKEND="openai", SM_OPENAI_BASE=f"http://127.0.0.1:{hung_llm.port}/v1", SM_LLM_TIMEOUT=30.0,
                           SM_LLM_BUDGET=2.0, SM_LLM_BREAKER_FAILURES=1, SM_LLM_BREAKER_SECONDS=60.0):
        started = time.monotonic()
        r = api.post("/api/v1/chat", {"query": "会员卡能跨店用吗"}, format="json")
        elapsed = time.monotonic() - started
        assert r.status_code == 200 and r.json()["answer"]
        assert elapsed <= 2.0 + 1.0, f"a hung LLM held the chat for {elapsed:.1f} s (budget 2 s)"
        answer = next(s for s in r.json()["trace"] if s["step"] == "answer")
        assert "降级" in answer["detail"]["degraded"] and answer["detail"]["mode"] == "extractive"
        assert breaker.state()["state"] == "open"

        started = time.monotonic()
        r = api.post("/api/v1/chat", {"query": "会员卡能跨店用吗"}, format="json")
        assert time.monotonic() - started < 2.0  # the open circuit skips the LLM without waiting
        answer = next(s for s in r.json()["trace"] if s["step"] == "answer")
        assert "熔断" in answer["detail"]["degraded"]
        llm = client.get("/ready").json()["checks"]["llm"]
        assert llm["status"] == "degraded" and llm["circuit"]["state"] == "open"


def test_the_budget_is_shared_by_every_llm_call_of_a_question(hung_llm):
    from agent.llm import LLMUnavailable, OpenAICompatibleLLM, llm_budget

    llm = OpenAICompatibleLLM(f"http://127.0.0.1:{hung_llm.port}/v1", "m", timeout=30.0)
    with override_settings(SM_LLM_BREAKER_FAILURES=10), llm_budget(1.5):
        started = time.monotonic()
        errors = []
        for _ in range(3):  # judge, rewrite, answer
            try:
                llm.chat([{"role": "user", "content": "?"}])
            except LLMUnavailable as exc:
                errors.append(str(exc))
        elapsed = time.monotonic() - started
    assert len(errors) == 3 and "预算" in errors[-1]
    assert elapsed <= 1.5 + 1.0, f"three calls took {elapsed:.1f} s under a 1.5 s budget"


def test_connect_timeout_is_at_most_two_seconds():
    from agent.llm import OllamaLLM

    client = OllamaLLM("http://10.255.255.1:11434", "m", timeout=30.0)._client
    assert client.timeout.connect <= 2.0


# --- database restarted -----------------------------------------------------------------------


def _pg_ctl(*args):
    from pgserver._commands import pg_ctl

    from storemind.embedded_db import pgdata_dir

    pgdata = pgdata_dir(BASE)  # the tests' own cluster, never the one `make run` serves
    return pg_ctl(list(args), pgdata=pgdata, user="pgserver" if os.geteuid() == 0 else None, timeout=30)


@pytest.fixture
def live_url(committed_db):
    with live_server() as url:
        yield url


embedded_only = pytest.mark.skipif(bool(os.environ.get("DATABASE_URL")), reason="stops the embedded PostgreSQL (DATABASE_URL unset)")


@embedded_only
def test_the_tests_stop_and_restart_a_cluster_of_their_own_never_the_one_make_run_serves():
    """A newcomer runs `make run` in one terminal and `make test` in another: the outage tests
    below stop the database they connect to, which must not be the server's."""
    from django.db import connection
    from pgserver.utils import PostmasterInfo

    from storemind.embedded_db import pgdata_dir

    ours = pgdata_dir(BASE)
    assert ours.name == "pgdata-test"
    info = PostmasterInfo.read_from_pgdata(ours)
    assert info is not None and info.is_running() and str(info.socket_dir) == connection.settings_dict["HOST"]
    # What `make run` resolves to: the same code without pytest's environment.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_VERSION", "SM_PGDATA")}
    served = subprocess.run([sys.executable, "-c", "from pathlib import Path; from storemind.embedded_db import pgdata_dir; "
                             f"print(pgdata_dir(Path({str(BASE)!r})))"], env=env, cwd=BASE, capture_output=True, text=True, check=True)
    assert Path(served.stdout.strip()) == (BASE / "var" / "pgdata").resolve() != ours


@embedded_only
def test_database_outage_is_a_json_503_and_recovery_is_quick_once_it_is_back(live_url, monkeypatch):
    from django.db import connections

    from storemind import embedded_db

    monkeypatch.setattr(embedded_db, "restart_embedded_database", lambda: False)  # like a managed database
    # A person's token: /api/v1/stores is not a POS endpoint.
    key = api_token_issue(user=make_user(f"fault_db_{uuid.uuid4().hex[:6]}", stores=["GZ-TH"]), name="t")[1]
    headers = {"Authorization": f"Bearer {key}"}
    assert httpx.get(live_url + "/api/v1/stores", headers=headers, timeout=10).status_code == 200
    connections.close_all()
    _pg_ctl("-w", "-m", "fast", "stop")
    try:
        for path in ("/api/v1/stores", "/api/v1/sales/summary?period=上周"):
            r = httpx.get(live_url + path, headers=headers, timeout=10)
            assert r.status_code == 503, r.text[:300]
            assert r.headers["Content-Type"].startswith("application/json") and r.headers["Retry-After"]
            assert "数据库" in r.json()["detail"]
        page = httpx.get(live_url + "/proposals/", timeout=10)
        assert page.status_code in (302, 503)  # the login redirect needs no database, the page does
        ready = httpx.get(live_url + "/ready", timeout=10)
        assert ready.status_code == 503 and ready.json()["checks"]["database"]["status"] == "error"
        assert httpx.get(live_url + "/health", timeout=10).status_code == 200
    finally:
        from storemind.embedded_db import ensure_running

        ensure_running(BASE)
    back = time.monotonic()
    while httpx.get(live_url + "/api/v1/stores", headers=headers, timeout=10).status_code != 200:
        assert time.monotonic() - back < 5, "not recovered 5 s after the database was back"
        time.sleep(0.2)
    connections.close_all()


@embedded_only
def test_mcp_over_http_answers_a_database_outage_with_a_json_rpc_error_and_503(committed_db, monkeypatch):
    """#28: 59 of 59 MCP HTTP requests got a plain-text 500 while the database was down."""
    import asyncio

    from django.db import connections

    from mcpserver.server import TokenGate
    from storemind import embedded_db

    monkeypatch.setattr(embedded_db, "restart_embedded_database", lambda: False)  # like a managed database
    key = api_token_issue(user=make_user(f"fault_mcp_{uuid.uuid4().hex[:6]}", stores=["GZ-TH"]), name="t")[1]
    reached = []

    async def app(scope, receive, send):  # what sits behind the gate: reached only with a valid token
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def post():
        transport = httpx.ASGITransport(app=TokenGate(app))
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            return await client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                     headers={"Authorization": f"Bearer {key}"})

    assert asyncio.run(post()).status_code == 200 and reached == ["/mcp"]
    connections.close_all()
    _pg_ctl("-w", "-m", "fast", "stop")
    try:
        r = asyncio.run(post())
    finally:
        from storemind.embedded_db import ensure_running

        ensure_running(BASE)
        connections.close_all()
    assert r.status_code == 503 and r.headers["Content-Type"].startswith("application/json") and r.headers["Retry-After"]
    assert r.json()["jsonrpc"] == "2.0" and r.json()["error"]["code"] == -32603 and "数据库" in r.json()["error"]["message"]
    assert reached == ["/mcp"]


@embedded_only
def test_the_embedded_database_is_started_again_on_the_next_request(live_url):
    from django.db import connections

    from storemind import embedded_db

    # A person's token: /api/v1/stores is not a POS endpoint.
    key = api_token_issue(user=make_user(f"fault_emb_{uuid.uuid4().hex[:6]}", stores=["GZ-TH"]), name="t")[1]
    headers = {"Authorization": f"Bearer {key}"}
    connections.close_all()
    _pg_ctl("-w", "-m", "fast", "stop")
    embedded_db._last_restart[0] = 0.0
    try:
        r = httpx.get(live_url + "/api/v1/stores", headers=headers, timeout=30)
        assert r.status_code == 503 and r.json()["detail"] and r.headers["Retry-After"]
        r = httpx.get(live_url + "/api/v1/stores", headers=headers, timeout=30)
        assert r.status_code == 200, r.text[:300]  # started again by the failed request
    finally:
        from storemind.embedded_db import ensure_running

        ensure_running(BASE)
        connections.close_all()
