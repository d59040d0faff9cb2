"""gunicorn settings for StoreMind (compose, the Dockerfile and `bench chat` use this file).

Sync workers: a chat is CPU-bound (embedding, tokenising, scoring), so processes, not
threads, give parallelism; the embedding runtime is pinned to one thread per process by
settings (SM_EMBED_THREADS). The master loads the app and jieba's dictionaries once before
forking (preload_app, when_ready); each worker loads the model, opens its connections and
reads every section right after it forks, before it accepts a request (post_worker_init), so
no user waits for a cold start. With preload_app a HUP does not load new code: restart the
service to deploy.
Every value can be overridden on the command line or with GUNICORN_CMD_ARGS.
"""
import multiprocessing
import os

bind = os.environ.get("SM_WEB_BIND", "0.0.0.0:8000")
# CPU count + 1: one worker more than cores keeps the CPUs busy while another waits on PostgreSQL.
workers = int(os.environ.get("SM_WEB_WORKERS") or multiprocessing.cpu_count() + 1)
worker_class = "sync"
# Recycle workers now and then (bounded memory growth), staggered so they don't restart together.
max_requests = int(os.environ.get("SM_WEB_MAX_REQUESTS") or 5000)
max_requests_jitter = max_requests // 10
# Above the LLM budget of a whole question (#13: 8 s by default) with room for a slow
# database; a worker silent for longer is stuck and is replaced.
timeout = int(os.environ.get("SM_WEB_TIMEOUT") or 60)
graceful_timeout = 30
keepalive = 2
# Access log with the request time in ms (%(M)s) for every request.
accesslog = "-"
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms "%(a)s"'
errorlog = "-"


# The app is imported once in the master, which also loads jieba's dictionaries (when_ready,
# below, runs before the first worker is forked): every worker starts with them, shared
# copy-on-write. Nothing that cannot cross a fork is made there (see storemind.warmup).
preload_app = True


def when_ready(server):
    from storemind.warmup import warm_before_fork

    timings = warm_before_fork()
    server.log.info("master warm before fork: %s", ", ".join(f"{k} {v} ms" for k, v in timings.items()))


def post_worker_init(worker):
    from storemind.warmup import warm_process

    timings = warm_process()
    worker.log.info("worker %s warm: %s", worker.pid, ", ".join(f"{k} {v} ms" for k, v in timings.items()))
