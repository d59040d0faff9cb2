"""`manage.py bench chat`: chat throughput and latency through a real gunicorn.

Starts gunicorn on a free port with the production settings (SM_DEBUG=0, DATABASE_URL on the
current database, the project's gunicorn.conf.py) and drives closed-loop HTTP clients at 1, 4
and 16 concurrency over `POST /api/v1/chat` with a fixed mix of policy, data, both and
refused questions. Every other request is a question not asked before in the run (golden
questions with varied openings, data questions over varied stores and periods), so no cache
can carry the figures. Also measured: the first answer after start, and the web workers' CPU
per chat by intent (serial, warm, questions not asked before). `--profile` prints the top
functions of one policy and one data chat, every thread of the request included.

The bench user, its token and its conversations are deleted afterwards; nothing else is written.
"""
from __future__ import annotations

import cProfile
import http.client
import itertools
import json
import os
import pstats
import random
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.db import connection

from core.bench import percentile

KINDS = ("policy", "data", "both", "refused")
# Requests per cycle of ten: 4 policy, 3 data, 2 both, 1 refused.
MIX = ["policy", "data", "policy", "both", "data", "policy", "refused", "data", "policy", "both"]
OPENINGS = ["", "请问", "想问下", "麻烦问一下", "同事问我", "新来的员工想知道", "值班时碰到", "帮我查一下", "老板让我问",
            "着急，", "顾客在等，", "再确认一下", "培训时有人问", "晚班遇到"]
ENDINGS = ["", "？", "，谢谢", "，急", "呀"]
DATA_TEMPLATES = ["{period}{store}卖了多少", "{store}{period}营业额多少", "{store}{period}热销排行前五", "{period}{store}客单价是多少",
                  "{store}{period}多少单", "{period}{store}哪个时段最忙", "{period}各门店营业额对比", "{period}全部门店营业额"]
PERIODS = ["今天", "昨天", "上周", "本周", "本月", "上个月", "最近7天", "近30天", "上上周", "前天"]
FAR = ["今天天气怎么样", "帮我写一首关于秋天的诗", "比特币现在多少钱一个", "量子力学的基本原理是什么", "怎么用Python写一个网络爬虫",
       "明天股市会涨吗", "推荐一部好看的电影", "世界上最高的山是哪座"]


class QuestionMix:
    """A fixed, seeded question stream: even requests are new in the run, odd ones repeat."""

    def __init__(self, seed: int = 14):
        from knowledge.evaluation import load_golden
        from ops.models import Store

        golden = load_golden()
        names = [n for s in Store.objects.order_by("code") for n in [s.name, *s.aliases] if len(n) >= 2]
        rng = random.Random(seed)
        base = {
            "policy": [g["query"] for g in golden if g.get("kind") == "policy"],
            # Low-stock questions offer a restock proposal: a durable, audited write the bench must not make.
            "both": [g["query"] for g in golden if g.get("kind") == "both" and g.get("expect_tool") != "low_stock"],
            "refused": FAR,
        }
        self.fresh: dict[str, list[str]] = {}
        for kind, questions in base.items():
            variants = [f"{o}{q.rstrip('？?')}{e}" for o, e, q in itertools.product(OPENINGS, ENDINGS, questions)]
            rng.shuffle(variants)
            self.fresh[kind] = variants
        data = [t.format(period=p, store=s) for t, p, s in itertools.product(DATA_TEMPLATES, PERIODS, names)]
        data = list(dict.fromkeys(data))
        rng.shuffle(data)
        self.fresh["data"] = data
        self.repeat = {kind: self.fresh[kind][:5] for kind in KINDS}  # asked first, then again and again
        self.seen: set[str] = set()
        self._cursor = {kind: 0 for kind in KINDS}
        self._lock = threading.Lock()
        self._n = 0

    def new(self, kind: str) -> str:
        with self._lock:
            pool = self.fresh[kind]
            while True:
                i = self._cursor[kind]
                if i >= len(pool):
                    raise RuntimeError(f"bench chat ran out of new {kind} questions; lower --queries")
                self._cursor[kind] = i + 1
                if i >= 5 and pool[i] not in self.seen:  # the first five are the repeat pool
                    self.seen.add(pool[i])
                    return pool[i]

    def next(self) -> tuple[str, str, bool]:
        """(kind, question, new in the run)."""
        with self._lock:
            n = self._n
            self._n += 1
        kind = MIX[n % len(MIX)]
        if n % 2 == 0:
            return kind, self.new(kind), True
        with self._lock:
            question = self.repeat[kind][(n // 2) % len(self.repeat[kind])]
            is_new = question not in self.seen
            self.seen.add(question)
        return kind, question, is_new


# --- the server ---------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def database_url() -> str:
    """The current database as a DATABASE_URL (a unix-socket host is percent-encoded)."""
    db = connection.settings_dict
    user = quote(db.get("USER") or "", safe="")
    password = quote(db.get("PASSWORD") or "", safe="")
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = quote(db.get("HOST") or "localhost", safe="")
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{auth}{host}{port}/{quote(db['NAME'], safe='')}"


class Server:
    def __init__(self, port: int, workers: int | None, log_path: Path, env: dict | None = None):
        self.port, self.log_path = port, log_path
        env = {**os.environ, **(env or {})}
        env.update({
            "SM_DEBUG": "0", "SM_SECRET_KEY": secrets.token_urlsafe(64), "DATABASE_URL": database_url(),
            "SM_ALLOWED_HOSTS": "127.0.0.1,localhost", "SM_EMBED_BACKEND": settings.SM_EMBED_BACKEND,
            # gunicorn is reached directly over HTTP here, not through the TLS proxy.
            "SM_SSL_REDIRECT": "0",
            "SM_EMBED_DIM": str(settings.SM_EMBED_DIM), "DJANGO_SETTINGS_MODULE": "storemind.settings",
            # One bench user asks hundreds of questions a minute: the per-user chat throttle is
            # not what this measures (its cost, a cache lookup, still is).
            "SM_CHAT_RATE": "1000000/min",
        })
        cmd = [sys.executable, "-m", "gunicorn", "storemind.wsgi:application", "--bind", f"127.0.0.1:{port}"]
        if workers:
            cmd += ["--workers", str(workers)]
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log_path, "w")
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(cmd, cwd=settings.BASE_DIR, env=env, stdout=self._log, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout: float = 120.0) -> float:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {self.proc.returncode}; see {self.log_path}")
            try:
                status, _ = request(self.port, "GET", "/health", None, None, timeout=2)
                if status == 200:
                    return (time.perf_counter() - self.started) * 1000
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"gunicorn did not answer /health within {timeout:.0f} s; see {self.log_path}")

    def wait_warm(self, timeout: float = 120.0) -> int:
        """Until every worker has logged its warm-up (post_worker_init): a sibling still warming
        would have its start-up CPU counted as the chats' (the CPU figure sums every worker)."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            self._log.flush()
            warm = len(re.findall(r"worker \d+ warm:", self.log_path.read_text(errors="replace")))
            if warm >= len(self.worker_pids()) > 0:
                return warm
            time.sleep(0.1)
        return 0

    def worker_pids(self) -> list[int]:
        try:
            return [int(p) for p in Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()]
        except OSError:
            return []

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


_TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def cpu_ms(pids: list[int]) -> float:
    """User + system CPU of these processes (all their threads), in ms."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) * _TICK_MS  # utime, stime
    return total


def _threads(pid: int) -> int | None:
    try:
        return int(next(line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("Threads:")))
    except (OSError, StopIteration, ValueError):
        return None


def request(port: int, method: str, path: str, body: dict | None, token: str | None, timeout: float = 60.0):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {"Host": "127.0.0.1"}
        payload = None
        if body is not None:
            payload = json.dumps(body, ensure_ascii=False).encode()
            headers["Content-Type"] = "application/json"
        if token:
            headers["Authorization"] = f"Bearer {token}"
        conn.request(method, path, body=payload, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def chat(port: int, token: str, question: str) -> tuple[float, int, dict | None]:
    t = time.perf_counter()
    status, raw = request(port, "POST", "/api/v1/chat", {"query": question}, token)
    ms = (time.perf_counter() - t) * 1000
    try:
        body = json.loads(raw) if status == 200 else None
    except ValueError:
        body = None
    return ms, status, body


# --- the run --------------------------------------------------------------------------------


def run_level(port: int, token: str, mix: QuestionMix, concurrency: int, n_requests: int) -> dict:
    latencies: list[float] = []
    errors: list[str] = []
    new = 0
    lock = threading.Lock()
    counter = itertools.count()
    barrier = threading.Barrier(concurrency + 1)

    def client():
        nonlocal new
        barrier.wait()
        while next(counter) < n_requests:
            kind, question, is_new = mix.next()
            try:
                ms, status, _ = chat(port, token, question)
                error = None if status == 200 else f"HTTP {status} for {question!r}"
            except OSError as exc:
                ms, error = None, f"{type(exc).__name__}: {exc}"
            with lock:
                new += is_new
                if error:
                    errors.append(error)
                else:
                    latencies.append(ms)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(concurrency)]
    for t in threads:
        t.start()
    barrier.wait()
    started = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    return {
        "concurrency": concurrency, "requests": len(latencies) + len(errors), "new_questions": new,
        "chats_per_s": round(len(latencies) / elapsed, 1), "p50_ms": round(percentile(latencies, 50), 1),
        "p95_ms": round(percentile(latencies, 95), 1), "errors": len(errors), "error_samples": errors[:3],
    }


def cpu_per_intent(server: Server, port: int, token: str, mix: QuestionMix, n: int) -> dict:
    """Serial chats, questions new in the run, per kind: the web workers' CPU divided by n."""
    out = {}
    for kind in KINDS:
        questions = [mix.new(kind) for _ in range(n)]
        pids = server.worker_pids()
        before = cpu_ms(pids)
        for q in questions:
            chat(port, token, q)
        if server.worker_pids() != pids:  # a worker was recycled mid-measurement: its CPU is lost
            out[kind] = None
            continue
        out[kind] = round((cpu_ms(pids) - before) / n, 1)
    return out


def bench_user():
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from ops.models import Store
    from ops.services import api_token_issue, roles_ensure

    roles_ensure()
    user = get_user_model().objects.create_user(f"bench_chat_{secrets.token_hex(4)}")
    user.groups.add(Group.objects.get(name="staff"))
    for store in Store.objects.all():
        store.members.add(user)
    _, key = api_token_issue(user=user, name="bench chat")
    return user, key


def bench_user_delete(user) -> str:
    """Remove what the bench wrote. Proposals are audited records and are never deleted: should
    a question have produced one, the user stays, deactivated, and the report says so."""
    from agent.models import UnansweredQuestion
    from workflow.models import Proposal

    UnansweredQuestion.objects.filter(user=user).delete()
    user.conversations.all().delete()
    user.api_tokens.all().delete()
    kept = Proposal.objects.filter(proposed_by=user).count()
    if kept:
        user.is_active = False
        user.save(update_fields=["is_active"])
        return f"kept deactivated user {user.username}: {kept} proposal(s) refer to it"
    user.delete()
    return f"removed bench user {user.username}, its token and conversations"


# Frames every request passes through (test client, handlers, middleware, dispatch, thread
# pool): their cumulative time is the whole request and says nothing about where it goes.
_PLUMBING = re.compile(
    r"django/(test|core/handlers|utils/deprecation|views/(decorators|generic))|whitenoise/|django_htmx/|storemind/middleware|"
    r"rest_framework/views|concurrent/futures|threading\.py|contextlib\.py|<built-in method builtins.exec>|cProfile"
)


_SHORTEN = re.compile(r"^.*/(site-packages|lib/python3\.\d+)/|^" + re.escape(str(settings.BASE_DIR)) + "/")


def top_functions(stats: pstats.Stats, top: int) -> list[str]:
    rows = []
    for (filename, line, name), (_cc, ncalls, tottime, cumtime, _callers) in stats.stats.items():
        label = f"{filename}:{line}({name})" if filename != "~" else name
        if _PLUMBING.search(label):
            continue
        rows.append((cumtime, tottime, ncalls, _SHORTEN.sub("", label)))
    rows.sort(reverse=True)
    return [f"{cum * 1000:13.1f} {own * 1000:8.1f} {n:6d}  {label}" for cum, own, n, label in rows[:top]]


def profile_chats(cmd, key: str, mix: QuestionMix, top: int = 15) -> dict:
    """Top functions by cumulative time for one policy and one data chat through the whole
    request path (test client, DEBUG off), the guard threads' work included."""
    from django.test import Client
    from django.test.utils import override_settings

    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    out = {}
    with override_settings(DEBUG=False, ALLOWED_HOSTS=["testserver"]):
        for kind in ("policy", "data"):
            client.post("/api/v1/chat", {"query": mix.new(kind)}, content_type="application/json")  # warm
        for kind in ("policy", "data"):
            question = mix.new(kind)
            profiles: list[cProfile.Profile] = []

            def start_thread_profile(frame, event, arg, profiles=profiles):
                sys.setprofile(None)
                prof = cProfile.Profile()
                profiles.append(prof)
                prof.enable()

            main = cProfile.Profile()
            threading.setprofile(start_thread_profile)
            t = time.perf_counter()
            main.enable()
            response = client.post("/api/v1/chat", {"query": question}, content_type="application/json")
            main.disable()
            wall = (time.perf_counter() - t) * 1000
            threading.setprofile(None)
            stats = pstats.Stats(main)
            for prof in profiles:
                stats.add(prof)
            lines = top_functions(stats, top)
            text = "\n".join(lines)
            cmd.stdout.write(f"\nprofile: {kind} chat 「{question}」 HTTP {response.status_code}, {wall:.1f} ms wall, "
                             f"{len(profiles)} guard thread(s) merged; top {top} by cumulative time (request plumbing left out)\n"
                             f"{'cumulative ms':>13} {'own ms':>8} {'calls':>6}  function\n{text}")
            out[kind] = {"question": question, "wall_ms": round(wall, 1), "top": lines}
    return out


def _check_database_ready() -> None:
    from django.core.management.base import CommandError
    from django.db.migrations.executor import MigrationExecutor

    from knowledge.models import IndexMeta

    executor = MigrationExecutor(connection)
    if executor.migration_plan(executor.loader.graph.leaf_nodes()):
        raise CommandError("the database has unapplied migrations: run `python manage.py migrate` first")
    meta = IndexMeta.objects.first()
    if meta is None or not meta.n_chunks or meta.backend != settings.SM_EMBED_BACKEND:
        raise CommandError(f"no knowledge index for the {settings.SM_EMBED_BACKEND} embedder: run `python manage.py ingest` first")


def bench_chat(cmd, opts) -> dict:
    _check_database_ready()
    levels = [int(x) for x in str(opts.get("levels") or "1,4,16").split(",")]
    n_requests = opts["queries"]
    mix = QuestionMix()
    user, key = bench_user()
    port = _free_port()
    log_path = Path(settings.BASE_DIR) / "var" / "bench" / "chat_gunicorn.log"
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    cmd.stdout.write(f"bench chat: gunicorn on 127.0.0.1:{port} against {connection.settings_dict['NAME']} · "
                     f"embedder {settings.SM_EMBED_BACKEND} · LLM {settings.SM_LLM_BACKEND} · load {' '.join(load_before)}")
    server = Server(port, opts.get("workers"), log_path)
    figures: dict = {"embedder": settings.SM_EMBED_BACKEND, "llm": settings.SM_LLM_BACKEND, "loadavg_before": load_before}
    try:
        figures["ready_ms"] = round(server.wait_ready(), 1)
        figures["workers"] = len(server.worker_pids())
        ms, status, _ = chat(port, key, mix.new("policy"))
        figures["first_answer_ms"] = round(ms, 1)
        figures["first_answer_status"] = status
        figures["workers_warm"] = server.wait_warm()
        figures["cpu_ms_per_chat"] = cpu_per_intent(server, port, key, mix, opts.get("cpu_chats") or 20)
        figures["levels"] = []
        for c in levels:
            level = run_level(port, key, mix, c, n_requests)
            figures["levels"].append(level)
            cmd.stdout.write(f"  {c:>2} concurrent: {level['chats_per_s']} chats/s · p50 {level['p50_ms']} ms · "
                             f"p95 {level['p95_ms']} ms · errors {level['errors']} · {level['new_questions']}/{level['requests']} new"
                             + (f" · first errors: {level['error_samples']}" if level["errors"] else ""))
        # Threads per web worker after the run: the request thread and the two guard threads;
        # an unpinned OpenMP runtime would add one per core.
        figures["worker_threads"] = [_threads(pid) for pid in server.worker_pids()]
    finally:
        server.stop()
        cmd.stdout.write(bench_user_delete(user))
    if opts.get("profile"):
        user, key = bench_user()
        try:
            figures["profile"] = profile_chats(cmd, key, mix)
        finally:
            cmd.stdout.write(bench_user_delete(user))
    figures["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3]
    cpu = figures["cpu_ms_per_chat"]
    cmd.stdout.write(
        f"bench chat: {figures['workers']} workers ready in {figures['ready_ms']} ms · first answer {figures['first_answer_ms']} ms · "
        f"threads per worker {figures.get('worker_threads')} · "
        "CPU per chat (web workers) " + ", ".join(f"{k} {v} ms" for k, v in cpu.items()) + " · "
        + " · ".join(f"{lv['concurrency']}: {lv['chats_per_s']}/s p50 {lv['p50_ms']} p95 {lv['p95_ms']} err {lv['errors']}"
                     for lv in figures["levels"])
        + f" · load {' '.join(load_before)} → {' '.join(figures['loadavg_after'])}"
    )
    return figures
