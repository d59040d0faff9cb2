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
