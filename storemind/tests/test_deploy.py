"""docker-compose.yml can't run here (no Docker engine), so its shape is checked: the
services, their healthchecks, and that every variable it sets is one settings reads."""
from pathlib import Path

import yaml
from django.conf import settings

COMPOSE = Path(settings.BASE_DIR) / "docker-compose.yml"


def load():
    return yaml.safe_load(COMPOSE.read_text())


def test_compose_has_the_production_services_with_healthchecks():
    services = load()["services"]
    assert {"postgres", "redis", "web", "worker", "ollama"} <= set(services)
    for name in ("postgres", "redis", "web", "worker", "ollama"):
        assert "healthcheck" in services[name], name
    assert "pgvector" in services["postgres"]["image"]
    assert services["ollama"]["profiles"] == ["ollama"]
    assert "gunicorn" in services["web"]["command"]
    assert services["worker"]["command"].startswith("celery -A storemind worker")
    for app in ("web", "worker"):
        deps = services[app]["depends_on"]
        assert deps["postgres"]["condition"] == deps["redis"]["condition"] == "service_healthy"


def test_every_app_env_var_is_read_by_settings():
    services = load()["services"]
    for app in ("web", "worker"):
        env = services[app]["environment"]
        assert {"DATABASE_URL", "REDIS_URL"} <= set(env)
        unknown = set(env) - settings.ENV_VARS_READ
        assert not unknown, f"{app} sets variables settings never reads: {unknown}"


def test_health_is_liveness_and_ready_reports_each_dependency(client, db):
    assert client.get("/health").json() == {"status": "ok"}
    r = client.get("/ready")
    assert r.status_code == 200, r.json()
    checks = r.json()["checks"]
    assert checks["database"]["status"] == checks["index"]["status"] == "ok"
    assert checks["index"]["chunks"] > 0
    assert checks["llm"]["circuit"]["state"] == "closed"


def test_openapi_schema_generates_without_errors_or_warnings(db):
    import io

    from django.core.management import call_command

    err = io.StringIO()
    call_command("spectacular", "--file", "/dev/null", "--fail-on-warn", stderr=err)
    assert "Error" not in err.getvalue()


def test_compose_serves_https_through_a_proxy_and_production_settings():
    compose = load()
    services = compose["services"]
    assert compose["x-app-env"]["SM_DEBUG"] == "0"
    assert "ports" not in services["web"], "gunicorn must only be reachable through the TLS proxy"
    proxy = services["proxy"]
    assert proxy["image"].startswith("caddy") and "443:443" in proxy["ports"]
    assert any(v.startswith("./deploy/Caddyfile:") for v in proxy["volumes"])
    caddyfile = (Path(settings.BASE_DIR) / "deploy" / "Caddyfile").read_text()
    assert "reverse_proxy web:8000" in caddyfile and "X-Forwarded-Proto" in caddyfile


def _production_env(**over) -> dict:
    import os
    import secrets

    # A clean environment: variables other tests set in this process (e.g. DJANGO_ALLOW_ASYNC_UNSAFE) stay out.
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "XDG_RUNTIME_DIR", "VIRTUAL_ENV") if k in os.environ}
    env.update({"SM_DEBUG": "0", "SM_SECRET_KEY": secrets.token_urlsafe(64), "SM_ALLOWED_HOSTS": "storemind.example.com",
                "DATABASE_URL": "postgres://storemind:pw@postgres.invalid:5432/storemind", "REDIS_URL": "redis://redis.invalid:6379/0"})
    env.update(over)
    return env


def _manage(*args, env):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "manage.py", *args], cwd=settings.BASE_DIR, env=env, capture_output=True, text=True,
                          timeout=120)


def test_check_deploy_is_clean_with_the_compose_environment():
    r = _manage("check", "--deploy", "--fail-level", "WARNING", env=_production_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no issues" in r.stdout


def test_production_refuses_a_weak_secret_key():
    for weak in ("x", "django-insecure-" + "a1b2c3" * 10, "a" * 60):
        r = _manage("check", env=_production_env(SM_SECRET_KEY=weak))
        assert r.returncode != 0 and "SM_SECRET_KEY is too weak" in r.stderr, weak


def test_postgresql_keeps_the_search_indexes_in_its_own_cache(db):
    # The default 128MB holds less than one HNSW index at 100k chunks (bench retrieval:
    # a vector channel 14–18 ms with it, 4 ms with 1GB). Compose and the embedded server set it.
    import os

    from django.db import connection

    from storemind import embedded_db

    assert "shared_buffers=${SM_PG_SHARED_BUFFERS:-1GB}" in load()["services"]["postgres"]["command"]
    if os.environ.get("DATABASE_URL"):
        return  # someone else's server: its configuration is theirs
    with connection.cursor() as cur:
        cur.execute("SELECT pg_size_bytes(current_setting('shared_buffers')) = pg_size_bytes(%s)", [embedded_db.SHARED_BUFFERS])
        assert cur.fetchone()[0]
    assert embedded_db._default_shared_buffers().endswith("MB")


def test_every_page_has_a_csp_and_private_answers_are_never_cached(client, db):
    """#28: no Content-Security-Policy or Permissions-Policy on any page, and no
    `Cache-Control: no-store` on private pages and API answers."""
    from rest_framework.test import APIClient

    from ops.services import api_token_issue
    from ops.tests.factories import make_user

    login = client.get("/accounts/login/")
    csp = login["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-eval" not in csp and "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]
    assert "frame-ancestors 'none'" in csp and "camera=()" in login["Permissions-Policy"]
    assert "no-store" not in client.get("/health").get("Cache-Control", "")  # anonymous and public: as before

    user = make_user("headers_staff", role="staff", stores=["GZ-TH"])
    client.force_login(user)
    for path in ("/", "/proposals/", "/admin/"):
        r = client.get(path, follow=False)
        assert r["Cache-Control"] == "no-store" and r["Content-Security-Policy"] == csp, path
    _, key = api_token_issue(user=user, name="headers")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    r = api.get("/api/v1/stores")
    assert r.status_code == 200 and r["Cache-Control"] == "no-store"
    assert api.get("/api/v1/nowhere")["Cache-Control"] == "no-store"  # the error answers too
