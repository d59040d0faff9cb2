"""The production web server shape: gunicorn.conf.py, and a real gunicorn started the way
`bench chat` starts it (production settings, the test database) whose worker is warm
before it takes its first request."""
import multiprocessing
import re
import runpy
from pathlib import Path

import pytest
import yaml
from django.conf import settings

CONF = Path(settings.BASE_DIR) / "gunicorn.conf.py"


def test_gunicorn_conf_sizes_workers_from_cpus_and_recycles_them_staggered(monkeypatch):
    for var in ("SM_WEB_WORKERS", "SM_WEB_TIMEOUT", "SM_WEB_MAX_REQUESTS"):
        monkeypatch.delenv(var, raising=False)
    conf = runpy.run_path(str(CONF))
    assert conf["workers"] == multiprocessing.cpu_count() + 1
    assert conf["max_requests"] > 0 and 0 < conf["max_requests_jitter"] < conf["max_requests"]
    assert conf["timeout"] > 8 + 10  # above the per-question LLM budget, with room
    assert "%(M)s" in conf["access_log_format"] and conf["accesslog"] == "-"
    assert callable(conf["post_worker_init"]) and callable(conf["when_ready"]) and conf["preload_app"] is True
    monkeypatch.setenv("SM_WEB_WORKERS", "5")
    assert runpy.run_path(str(CONF))["workers"] == 5


def test_compose_and_dockerfile_use_the_conf_and_pin_threads():
    compose = yaml.safe_load((Path(settings.BASE_DIR) / "docker-compose.yml").read_text())
    assert "-c gunicorn.conf.py" in compose["services"]["web"]["command"]
    for app in ("web", "worker"):
        assert "SM_EMBED_THREADS" in compose["services"][app]["environment"]
    dockerfile = (Path(settings.BASE_DIR) / "Dockerfile").read_text()
    assert re.search(r'CMD \[.*"gunicorn".*"-c", "gunicorn.conf.py"\]', dockerfile)
    assert "SM_EMBED_THREADS=1" in dockerfile


@pytest.fixture(scope="module")
def chat_user(django_db_setup, django_db_blocker):
    """A committed user and token on the test database (a live server can't see a test's transaction)."""
    from agent.bench import bench_user, bench_user_delete

    with django_db_blocker.unblock():
        user, key = bench_user()
        yield key
        bench_user_delete(user)


def test_real_gunicorn_worker_is_warm_before_its_first_request(chat_user, django_db_blocker, tmp_path):
    from agent.bench import Server, chat
    from storemind.tests.servers import free_port

    with django_db_blocker.unblock():
        server = Server(free_port(), None, tmp_path / "gunicorn.log", env={
            "SM_WEB_WORKERS": "1", "SM_REFUSAL_THRESHOLD": "0", "SM_JUDGE_THRESHOLD": "0", "SM_LLM_BACKEND": "none"})
    try:
        server.wait_ready(timeout=90)
        assert server.wait_warm(timeout=60) == 1  # what bench chat waits for before measuring CPU
        log = (tmp_path / "gunicorn.log").read_text()
        assert re.search(r"master warm before fork: dictionaries [\d.]+ ms", log), log
        assert re.search(r"worker \d+ warm: embedder [\d.]+ ms, tokenizer [\d.]+ ms, code [\d.]+ ms, sections [\d.]+ ms, pipeline [\d.]+ ms", log), log
        ms, status, body = chat(server.port, chat_user, "上周天河店卖了多少")
        assert status == 200 and body["intent"] == "data" and body["data"], body
        ms, status, body = chat(server.port, chat_user, "会员卡能跨店用吗")
        assert status == 200 and body["citations"], body
    finally:
        server.stop()
    assert re.search(r'"POST /api/v1/chat HTTP/1.1" 200 \d+ \d+ms', (tmp_path / "gunicorn.log").read_text())


@pytest.mark.django_db
def test_warm_process_loads_everything_and_writes_nothing(caplog):
    from agent.models import Conversation, Message, UnansweredQuestion
    from core.models import AuditLog
    from knowledge import text
    from knowledge.embedders import get_embedder
    from storemind.warmup import WARM_QUESTION, warm_process
    from workflow.models import Proposal

    models = (Conversation, Message, UnansweredQuestion, Proposal, AuditLog)
    before = [m.objects.count() for m in models]
    timings = warm_process()
    assert set(timings) == {"embedder", "tokenizer", "code", "sections", "pipeline"}
    assert not [r for r in caplog.records if "warm-up step" in r.getMessage()], caplog.text
    assert text._ready and get_embedder().query_cache.get(WARM_QUESTION) is not None
    from knowledge.models import Chunk
    from knowledge.selectors.index import _SNAPSHOTS

    sections = set(Chunk.objects.values_list("document_id", "section_path").distinct())
    assert sections and sections <= {k[1:] for k in _SNAPSHOTS if k[0] == "section"}  # no question reads a section cold
    assert [m.objects.count() for m in models] == before


def test_the_pre_fork_warm_up_loads_dictionaries_and_nothing_that_cannot_cross_a_fork():
    # Runs in gunicorn's master and Celery's parent: a database connection or a native thread
    # pool made there would be shared by every child. A fresh interpreter (in this one jieba is
    # long loaded), pointed at a database that does not exist: any query would fail and be logged.
    import json
    import os
    import subprocess
    import sys

    code = (
        "import json, sys, threading, django; django.setup()\n"
        "before = 'jieba' in sys.modules\n"
        "threads = threading.active_count()\n"
        "from storemind.warmup import warm_before_fork\n"
        "timings = warm_before_fork()\n"
        "from knowledge import text\n"
        "print(json.dumps({'before': before, 'ready': text._ready, 'posseg': 'jieba.posseg' in sys.modules,\n"
        "                  'threads': threading.active_count() - threads, 'timings': sorted(timings)}))\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "storemind.settings", "DATABASE_URL": "postgres://nobody@127.0.0.1:9/none"}
    done = subprocess.run([sys.executable, "-c", code], cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "pre-fork warm-up failed" not in done.stderr, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"before": False, "ready": True, "posseg": True, "threads": 0, "timings": ["dictionaries"]}


def test_a_failing_warm_up_step_is_logged_not_raised(monkeypatch, caplog):
    import knowledge.embedders
    from storemind.warmup import warm_process

    def broken():
        raise RuntimeError("model file missing")

    monkeypatch.setattr(knowledge.embedders, "get_embedder", broken)
    monkeypatch.setattr("storemind.warmup.WARM_PIPELINE_QUESTIONS", ())
    assert "embedder" in warm_process()
    assert "warm-up step embedder failed: model file missing" in caplog.text
