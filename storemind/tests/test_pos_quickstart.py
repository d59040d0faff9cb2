"""The README's POS quick start, run as written: a fresh token from `manage.py issue_token`,
then only its three curl calls (catalog, first order, replay) against a live server."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

BASE = Path(settings.BASE_DIR)
EXTERNAL_ID = "TH-POS1-000001"


def quickstart_block() -> str:
    readme = (BASE / "README.md").read_text("utf-8")
    found = re.search(r"<!-- pos-quick-start:[^>]*-->\n```bash\n(.*?)```", readme, re.S)
    assert found, "README has no POS quick-start block"
    return found.group(1)


@pytest.fixture
def live(django_db_setup, django_db_blocker):
    """A live server on the committed test database (pytest-django's live_server would flush it)."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from ops.models import ApiToken, Order
    from ops.tests.factories import make_user
    from storemind.tests.servers import live_server

    with django_db_blocker.unblock():
        Order.objects.filter(store__code="GZ-TH", external_id=EXTERNAL_ID).delete()
        if not get_user_model().objects.filter(username="pos_gz_th").exists():
            make_user("pos_gz_th", role="pos", stores=["GZ-TH"])
        try:
            with live_server() as url:
                yield url, connection.settings_dict["NAME"]
        finally:
            Order.objects.filter(store__code="GZ-TH", external_id=EXTERNAL_ID).delete()
            ApiToken.objects.filter(user__username="pos_gz_th", name="吧台 POS 1").delete()


@pytest.mark.skipif(shutil.which("curl") is None, reason="the quick start is curl calls")
def test_a_fresh_token_and_the_readmes_three_calls_write_a_first_order(live, django_db_blocker):
    from ops.models import Order

    url, database = live
    script = quickstart_block()
    assert script.count("curl ") == 3
    script = script.replace("http://127.0.0.1:8000", url).replace(".venv/bin/python", sys.executable)
    env = {**os.environ, "SM_DB_NAME": database}  # issue_token writes to the database the server reads
    if os.environ.get("DATABASE_URL"):
        env["DATABASE_URL"] = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/" + database
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=BASE, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    outputs = r.stdout.strip().split("\n")
    codes = [line for line in outputs if re.fullmatch(r"\d{3}", line)]
    assert codes == ["200", "201", "200"], r.stdout[-2000:]
    assert '"sku":"B001"' in r.stdout and '"store":"GZ-TH"' in r.stdout  # the catalog
    assert r.stdout.count('"result":"created"') == 1 and r.stdout.count('"result":"replayed"') == 1
    with django_db_blocker.unblock():
        order = Order.objects.get(store__code="GZ-TH", external_id=EXTERNAL_ID)
        assert str(order.total) == "58.00" and order.lines.count() == 2


def test_the_readme_names_the_async_box_as_the_chat_page_labels_it():
    # The page said 「稍后看」 where the README said 「后台」.
    page = (BASE / "templates" / "agent" / "chat.html").read_text("utf-8")
    label = re.search(r'name="async"[^>]*><span>([^<]+)</span>', page).group(1)
    assert f"tick {label} " in (BASE / "README.md").read_text("utf-8")
