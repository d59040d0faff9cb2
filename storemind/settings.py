"""StoreMind settings: one module, configured from the environment (12-factor).

Embedded defaults only where they are safe: an embedded PostgreSQL + pgvector when
DATABASE_URL is unset, eager Celery and a local-memory cache when REDIS_URL is unset.
Production (SM_DEBUG=0) refuses to start without SM_SECRET_KEY and DATABASE_URL.
"""
from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

# Every environment variable this module reads; the docker-compose test checks against it.
ENV_VARS_READ: set[str] = set()


def env(name: str, default: str | None = None) -> str | None:
    ENV_VARS_READ.add(name)
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    value = env(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = env(name)
    return int(value) if value not in (None, "") else default


def env_float(name: str, default: float) -> float:
    value = env(name)
    return float(value) if value not in (None, "") else default


# --- Threads: pinned by the project before any native runtime loads ----------------------
# The e5 engine (OpenMP) and numpy's BLAS size their thread pools from these variables when
# they load, which is after settings in every web, worker and command process. Several
# processes each spinning up one thread per core oversubscribe the machine as soon as two of
# them embed at once (4x fewer chats/s under load), so one intra-op thread per process is
# the default: parallelism comes from processes. SM_EMBED_THREADS wins over a stray OMP_NUM_THREADS.
SM_EMBED_THREADS = max(1, int(os.environ.get("SM_EMBED_THREADS") or 1))
ENV_VARS_READ.add("SM_EMBED_THREADS")
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = str(SM_EMBED_THREADS)

DEBUG = env_bool("SM_DEBUG", True)
SECRET_KEY = env("SM_SECRET_KEY") or ""
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SM_SECRET_KEY must be set when SM_DEBUG=0.")
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"
elif not DEBUG and (len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5 or SECRET_KEY.startswith("django-insecure-")):
    # The same rule as `check --deploy` (W009), but refused at start-up instead of warned about.
    raise ImproperlyConfigured(
        "SM_SECRET_KEY is too weak for production: use at least 50 random characters, e.g. "
        "python -c \"import secrets; print(secrets.token_urlsafe(64))\"."
    )
ALLOWED_HOSTS = [h.strip() for h in (env("SM_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver") or "").split(",") if h.strip()]
CSRF_TRUSTED_ORIGINS = [o.strip() for o in (env("SM_CSRF_TRUSTED_ORIGINS", "") or "").split(",") if o.strip()]

# --- Production behind the TLS-terminating proxy (compose `proxy`, Caddy) ------------------
# The proxy sets X-Forwarded-Proto; Django trusts it only because gunicorn is not published
# (compose exposes web on the internal network only). Health probes come over plain HTTP
# from inside the network, so they are exempt from the HTTPS redirect.
if not DEBUG:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SM_SSL_REDIRECT", True)
    SECURE_REDIRECT_EXEMPT = [r"^health$", r"^ready$"]
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SM_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SM_HSTS_INCLUDE_SUBDOMAINS", True)
    # Preloading is a per-domain commitment browsers ship with; opt in with SM_HSTS_PRELOAD=1.
    SECURE_HSTS_PRELOAD = env_bool("SM_HSTS_PRELOAD", False)
    if not SECURE_HSTS_PRELOAD:
        SILENCED_SYSTEM_CHECKS = ["security.W021"]
SESSION_COOKIE_HTTPONLY = True
SM_DEMO = env_bool("SM_DEMO", False)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    # Layers, bottom to top; a lower app never imports a higher one (import-linter checks it: pyproject.toml).
    "core",
    "ops",
    "knowledge",
    "workflow",
    "agent",
    "mcpserver",
    "channels",
]

MIDDLEWARE = [
    "storemind.middleware.ErrorContractMiddleware",
    "storemind.middleware.SecurityHeadersMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "storemind.login_guard.LoginGuardMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "storemind.middleware.HtmxLoginRedirectMiddleware",
    "core.middleware.AuditContextMiddleware",
]
CSRF_FAILURE_VIEW = "storemind.middleware.csrf_failure"
AUTHENTICATION_BACKENDS = ["core.auth.OneQueryModelBackend"]  # ModelBackend, permissions in one query

ROOT_URLCONF = "storemind.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "storemind.context_processors.role",
            ],
        },
    },
]
WSGI_APPLICATION = "storemind.wsgi.application"
ASGI_APPLICATION = "storemind.asgi.application"

# --- Database: always PostgreSQL with pgvector -------------------------------------------
DATABASE_URL = env("DATABASE_URL")
if DATABASE_URL:
    import dj_database_url

    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("SM_DB_CONN_MAX_AGE", 60))}
else:
    if not DEBUG:
        raise ImproperlyConfigured("DATABASE_URL must be set when SM_DEBUG=0.")
    from .embedded_db import embedded_database_settings

    DATABASES = {"default": embedded_database_settings(BASE_DIR)}
# Django turns psycopg's prepared statements off (prepare_threshold None), which also makes an
# explicit `execute(..., prepare=True)` a no-op. The retrieval queries ask for it (the same text
# on every question; planning one costs as much as running it), so preparation is on, but only
# when asked: the threshold is out of reach for the ORM's own queries. SM_DB_PREPARE=0 turns it
# off for a transaction-mode pooler (pgbouncer), where a prepared statement outlives its session.
if env_bool("SM_DB_PREPARE", True):
    DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = 2**31 - 1
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Celery and cache --------------------------------------------------------------------
REDIS_URL = env("REDIS_URL")
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_RESULT_BACKEND = REDIS_URL
    CELERY_TASK_ALWAYS_EAGER = False
    # Short socket timeouts: a cache that does not answer is skipped, not waited on (rate limits do not use it).
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                          "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1}}}
else:
    CELERY_BROKER_URL = "memory://"
    CELERY_RESULT_BACKEND = "cache+memory://"
    CELERY_TASK_ALWAYS_EAGER = True
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
CELERY_TASK_EAGER_PROPAGATES = True
# An unreachable broker must fail a publish in about a second (the API answers 503 and the
# chat page answers synchronously), not after kombu's retries.
CELERY_TASK_PUBLISH_RETRY = False
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_connect_timeout": 2, "socket_timeout": 5, "max_retries": 1}
CELERY_REDIS_SOCKET_CONNECT_TIMEOUT = 2
CELERY_REDIS_SOCKET_TIMEOUT = 5
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"retry_policy": {"max_retries": 1, "interval_start": 0, "interval_step": 0.2,
                                                            "interval_max": 0.5}}
CELERY_TASK_STORE_EAGER_RESULT = True  # async chat polls the result even when eager
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "Asia/Shanghai"

# --- Auth, i18n, static ------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/?logged_out=1"  # logout stays in the product, never on the admin's page
LANGUAGE_CODE = "zh-hans"
LOCALE_PATHS = [BASE_DIR / "locale"]  # the few admin strings Django ships untranslated (compiled .mo committed)
TIME_ZONE = "Asia/Shanghai"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)  # whitenoise warns on every request when it is missing
WHITENOISE_USE_FINDERS = DEBUG  # dev and tests serve app static files without collectstatic
STATICFILES_DIRS = [BASE_DIR / "static"] if (BASE_DIR / "static").exists() else []

# --- REST API ----------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "ops.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "ops.authentication.PosTokenOnlyOnPosEndpoints",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # JSON in, JSON out: one body format to validate and to document (no form or browsable API).
    "DEFAULT_PARSER_CLASSES": ["storemind.parsers.StrictJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "EXCEPTION_HANDLER": "storemind.api.exception_handler",
    # Views name a throttle_scope; its rate is in SM_RATES and it counts in the database (core.ratelimit).
    "DEFAULT_THROTTLE_CLASSES": ["core.throttling.ScopedRateThrottle"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "StoreMind API",
    "DESCRIPTION": "门店运营 Copilot：POS 订单写入、经营数据查询、知识库检索、问答与工作流。",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI served from our own static files: nothing is fetched from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Request and response shapes differ (write-only vs read-only fields): separate components.
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "storemind.openapi.postprocess"],
}

# --- StoreMind ---------------------------------------------------------------------------
SM_POS_MAX_BATCH = env_int("SM_POS_MAX_BATCH", 500)
SM_CORPUS_DIR = Path(env("SM_CORPUS_DIR", str(BASE_DIR / "corpus")) or BASE_DIR / "corpus")
# Which evaluation corpus (knowledge/corpora.py) `manage.py eval` reads its questions from: set by
# `eval … --corpus NAME` for the process it starts in that corpus's own database.
SM_EVAL_CORPUS = env("SM_EVAL_CORPUS", "bundled")
SM_EVAL_CORPORA_DIR = Path(env("SM_EVAL_CORPORA_DIR", str(BASE_DIR / "eval" / "corpora")) or BASE_DIR / "eval" / "corpora")
# The largest document a knowledge owner may upload (a ZIP of documents: each file, and 4× this unpacked).
SM_UPLOAD_MAX_MB = env_int("SM_UPLOAD_MAX_MB", 20)
# How many days back a POS may date an order (a 2001 order moved the first recorded sale back 25
# years); a chain importing older history raises it for the import, 0 lifts the limit.
SM_ORDER_MAX_AGE_DAYS = env_int("SM_ORDER_MAX_AGE_DAYS", 731)
if SM_ORDER_MAX_AGE_DAYS < 0:  # a cutoff in the future would refuse every order
    raise ImproperlyConfigured("SM_ORDER_MAX_AGE_DAYS must be 0 (no limit) or a number of days.")
# The domain lexicon (everyday staff words → the words SOPs use); default knowledge/lexicon.txt, "" for none.
SM_LEXICON_PATH = env("SM_LEXICON_PATH", None)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["stderr"], "level": env("SM_LOG_LEVEL", "WARNING")},
}

# --- Knowledge and agent (embedders, LLM backends) ---------------------------------------
SM_EMBED_BACKEND = env("SM_EMBED_BACKEND", "e5")  # e5 | hashing | ollama | openai
SM_EMBED_DIM = env_int("SM_EMBED_DIM", 512)  # hashing backend only
SM_EMBED_MODEL = env("SM_EMBED_MODEL", "bge-m3")  # ollama / openai backends
SM_EMBED_QUERY_CACHE = env_int("SM_EMBED_QUERY_CACHE", 2048)  # query vectors kept per process (LRU); 0 turns it off
SM_LLM_BACKEND = env("SM_LLM_BACKEND", "none")  # none | ollama | openai
SM_LLM_MODEL = env("SM_LLM_MODEL", "qwen2.5:7b")
SM_LLM_TIMEOUT = env_float("SM_LLM_TIMEOUT", 30.0)  # one call, capped by what is left of the budget
SM_LLM_BUDGET = env_float("SM_LLM_BUDGET", 8.0)  # seconds of LLM time per question (judge + rewrite + answer)
SM_LLM_BREAKER_FAILURES = env_int("SM_LLM_BREAKER_FAILURES", 3)
SM_LLM_BREAKER_SECONDS = env_float("SM_LLM_BREAKER_SECONDS", 30.0)
SM_OLLAMA_BASE = env("SM_OLLAMA_BASE", "http://127.0.0.1:11434")
SM_OPENAI_BASE = env("SM_OPENAI_BASE", "https://api.deepseek.com/v1")
SM_OPENAI_KEY = env("SM_OPENAI_KEY", "")
SM_OPENAI_MODEL = env("SM_OPENAI_MODEL", "deepseek-chat")
SM_AGENT_MAX_ATTEMPTS = env_int("SM_AGENT_MAX_ATTEMPTS", 2)
# Fusion: unset, each of these is what `manage.py eval tune-fusion --across` chose over every
# evaluation corpus for the embedder (knowledge/fusion_e5.json); a choice stored in the index
# metadata (`eval tune-fusion` on one index) wins over both.
SM_RRF_K = env_int("SM_RRF_K", None)
SM_RRF_VECTOR_WEIGHT = env_float("SM_RRF_VECTOR_WEIGHT", None)
SM_RRF_LEXICAL_WEIGHT = env_float("SM_RRF_LEXICAL_WEIGHT", None)
SM_RRF_SENTENCE_WEIGHT = env_float("SM_RRF_SENTENCE_WEIGHT", None)
SM_RRF_ALIAS_WEIGHT = env_float("SM_RRF_ALIAS_WEIGHT", None)
SM_RRF_GRAM_WEIGHT = env_float("SM_RRF_GRAM_WEIGHT", None)
SM_TITLE_BOOST = env_float("SM_TITLE_BOOST", None)
SM_RETRIEVAL_CANDIDATES = env_int("SM_RETRIEVAL_CANDIDATES", None)
# A question taught in the admin (learning loop), asked again this close to the taught wording,
# is answered by the section the manager chose (e5 cosine; tests with the hashing embedder set their own).
SM_TAUGHT_ALIAS_MIN = env_float("SM_TAUGHT_ALIAS_MIN", 0.92)
# Threads per process that run retrieval's vector half beside its lexical half (0: one after
# the other in the request thread). Each keeps its own database connection. Side by side pays
# only with a core to spare for the second PostgreSQL backend: on 2 cores it saved 1 ms of
# 13.6 at 100k chunks and cost 0.8 ms of CPU per search, so it is off there by default (the
# cores this process may run on; a container's CPU quota is not seen: set it explicitly).
_USABLE_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
SM_RETRIEVAL_THREADS = env_int("SM_RETRIEVAL_THREADS", 4 if _USABLE_CORES > 2 else 0)
SM_RERANKER = env("SM_RERANKER", "knowledge.rerank.learned_rerank")
SM_RERANK_MODEL = env("SM_RERANK_MODEL", None)  # the learned rerank's model file; unset: knowledge/rerank_e5.json, "": none
# Produced by `manage.py eval calibrate` with the e5 embedder on this corpus (answerable
# min 0.862 vs far-from-domain max 0.860); a calibration stored in the index metadata wins.
SM_REFUSAL_THRESHOLD = env_float("SM_REFUSAL_THRESHOLD", 0.861)
SM_JUDGE_THRESHOLD = env_float("SM_JUDGE_THRESHOLD", 0.857)
SM_HISTORY_TOKENS = env_int("SM_HISTORY_TOKENS", 1200)
SM_MAX_QUERY_CHARS = 2000
SM_LOGIN_MAX_FAILURES = env_int("SM_LOGIN_MAX_FAILURES", 5)  # per account; 5x that per client address
SM_LOGIN_LOCKOUT_SECONDS = env_int("SM_LOGIN_LOCKOUT_SECONDS", 900)
# The one rate table, for every channel (REST, the chat page and its HTMX forms, MCP over stdio
# and HTTP): per person (per client address when anonymous), counted atomically in the
# database (core.ratelimit), so limits hold when Redis is down. "N/min", "N/hour", "N/day", "N/15min".
SM_RATES = {
    "pos_write": env("SM_POS_WRITE_RATE", "600/min"),
    "api_write": env("SM_API_WRITE_RATE", "120/min"),  # proposal creation, uploads
    "chat": env("SM_CHAT_RATE", "30/min"),  # a question, in any channel
    "feedback": env("SM_FEEDBACK_RATE", "30/min"),
    "decide": env("SM_DECIDE_RATE", "30/min"),  # confirm / reject
    "mcp": env("SM_MCP_RATE", "120/min"),  # MCP tool calls and resource reads
    # Member balance lookups: a bartender looks a member up now and then; walking the member
    # list (240 lookups in 10 s was seen) meets these within the first minutes.
    "member_lookup": env("SM_MEMBER_LOOKUP_RATE", "20/10min"),
    "member_lookup_day": env("SM_MEMBER_LOOKUP_DAY_RATE", "120/day"),
    # Wrong API tokens per client address (a guessing run). Failed logins: SM_LOGIN_* above.
    "bad_token": env("SM_BAD_TOKEN_RATE", "20/min"),
}
# Proxies whose X-Forwarded-For is believed (addresses or networks, comma-separated): the client's
# address is then the last one in that header that is not one of them. Unset: only the
# connecting address counts, and any X-Forwarded-For is ignored. docker-compose sets its network.
SM_TRUSTED_PROXIES = env("SM_TRUSTED_PROXIES", "") or ""
SM_PROPOSAL_TTL_HOURS = env_int("SM_PROPOSAL_TTL_HOURS", 72)
# An async question still pending this long after it was queued is reported failed (lost).
SM_CHAT_TASK_LOST_AFTER_S = env_int("SM_CHAT_TASK_LOST_AFTER_S", 600)

# Messaging platforms (the channels app). A platform is on when its settings are; its callback
# URL answers 404 otherwise. SM_PUBLIC_URL is where links in messages point (the chat page,
# binding links): the address staff reach StoreMind at.
SM_PUBLIC_URL = env("SM_PUBLIC_URL", "http://127.0.0.1:8000")
SM_WECOM_CORP_ID = env("SM_WECOM_CORP_ID", "")
SM_WECOM_AGENT_ID = env("SM_WECOM_AGENT_ID", "")
SM_WECOM_SECRET = env("SM_WECOM_SECRET", "")
SM_WECOM_TOKEN = env("SM_WECOM_TOKEN", "")
SM_WECOM_AES_KEY = env("SM_WECOM_AES_KEY", "")
SM_WECOM_API_BASE = env("SM_WECOM_API_BASE", "https://qyapi.weixin.qq.com")
SM_DINGTALK_APP_SECRET = env("SM_DINGTALK_APP_SECRET", "")
SM_DINGTALK_API_BASE = env("SM_DINGTALK_API_BASE", "https://oapi.dingtalk.com")
SM_FEISHU_APP_ID = env("SM_FEISHU_APP_ID", "")
SM_FEISHU_APP_SECRET = env("SM_FEISHU_APP_SECRET", "")
SM_FEISHU_VERIFICATION_TOKEN = env("SM_FEISHU_VERIFICATION_TOKEN", "")
SM_FEISHU_ENCRYPT_KEY = env("SM_FEISHU_ENCRYPT_KEY", "")
SM_FEISHU_API_BASE = env("SM_FEISHU_API_BASE", "https://open.feishu.cn")
# Sends queue behind a rate (Celery's per-worker rate limit) and retry with backoff from this base.
SM_CHANNEL_SEND_RATE = env("SM_CHANNEL_SEND_RATE", "600/m")
SM_CHANNEL_RETRY_BASE_S = env_float("SM_CHANNEL_RETRY_BASE_S", 2.0)
if not DEBUG and (SM_WECOM_CORP_ID or SM_DINGTALK_APP_SECRET or SM_FEISHU_APP_ID) and env("SM_PUBLIC_URL") is None:
    # Binding links and answer links would point at 127.0.0.1 on every phone.
    raise ImproperlyConfigured("SM_PUBLIC_URL must be set when a messaging platform is configured and SM_DEBUG=0.")
CELERY_BEAT_SCHEDULE = {
    "expire-proposals-hourly": {"task": "workflow.expire_proposals", "schedule": 3600.0},
    "purge-chat-tasks-daily": {"task": "agent.purge_chat_tasks", "schedule": 86400.0},
}
