"""The MCP server, started both ways and driven by the official SDK's client
(`ClientSession` over stdio and over Streamable HTTP), against the test database."""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from django.conf import settings
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from storemind.tests.servers import free_port

BASE = Path(settings.BASE_DIR)
TOOL_NAMES = {"search_knowledge", "list_documents", "ask", "list_stores", "list_products", "query_ops", "propose_restock", "propose_ticket",
              "list_pending", "confirm_proposal", "reject_proposal", "withdraw_proposal", "amend_proposal"}


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """Committed users, tokens and a pending restock: the server runs in another process."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from ops.models import Store
    from ops.services import api_token_issue
    from ops.tests.factories import make_user
    from workflow.models import Proposal, RestockRequest, Ticket
    from workflow.services import proposal_create

    with django_db_blocker.unblock():
        User = get_user_model()
        users = {}
        for name, role in (("mcp_staff", "staff"), ("mcp_manager", "manager"), ("mcp_norole", None)):
            users[role or "none"] = User.objects.filter(username=name).first() or make_user(name, role=role, stores=["GZ-TH"])
        mine = Proposal.objects.filter(proposed_by__in=users.values())

        def clean():  # the database is shared and committed: leave no pending proposal for other tests to find
            RestockRequest.objects.filter(proposal__in=mine).delete()
            Ticket.objects.filter(proposal__in=mine).delete()
            mine.delete()

        clean()
        restock, _ = proposal_create(user=users["staff"], kind="restock", store=Store.objects.get(code="GZ-TH"), source="api",
                                     payload={"lines": [{"sku": "B002", "quantity": 3, "unit": "箱"}]})
        _, staff_token = api_token_issue(user=users["staff"], name="mcp test")
        _, manager_token = api_token_issue(user=users["manager"], name="mcp test")
        env = {
            **os.environ, "DJANGO_SETTINGS_MODULE": "storemind.settings", "SM_DB_NAME": connection.settings_dict["NAME"],
            "SM_EMBED_BACKEND": "hashing", "SM_EMBED_DIM": "256", "SM_LLM_BACKEND": "none",
            "SM_REFUSAL_THRESHOLD": "0", "SM_JUDGE_THRESHOLD": "0",
        }
        env.pop("REDIS_URL", None)
        try:
            yield {"users": users, "restock_id": restock.pk, "env": env, "staff_token": staff_token, "manager_token": manager_token}
        finally:
            clean()


def stdio_params(world, user=None):
    # As an MCP client's config would: the person's API token in SM_MCP_TOKEN; --user for an operator.
    if user is not None:
        return StdioServerParameters(command=sys.executable, args=[str(BASE / "manage.py"), "mcp", "--stdio", "--user", user],
                                     env=world["env"], cwd=str(BASE))
    return StdioServerParameters(command=sys.executable, args=[str(BASE / "manage.py"), "mcp", "--stdio"],
                                 env={**world["env"], "SM_MCP_TOKEN": world["staff_token"]}, cwd=str(BASE))


def test_stdio_acts_as_the_owner_of_a_token_and_refuses_any_other(world, django_db_blocker):
    # `mcp --stdio --user NAME` let anyone at the shell act as anyone; a token names who acts.
    from django.contrib.auth import get_user_model

    from ops.tests.factories import pos_token

    def run(*args, env=None):
        return subprocess.run([sys.executable, str(BASE / "manage.py"), "mcp", "--stdio", *args], cwd=BASE,
                              env={**world["env"], **(env or {})}, input="", capture_output=True, text=True, timeout=60)

    wrong = run("--token", "not-a-token")
    assert wrong.returncode != 0 and "令牌无效" in wrong.stderr and not wrong.stdout
    with django_db_blocker.unblock():  # committed: the server runs in another process
        get_user_model().objects.filter(username="mcp_pos_device").delete()
        device_key = pos_token("GZ-TH", username="mcp_pos_device")
    try:
        device = run(env={"SM_MCP_TOKEN": device_key})
    finally:
        with django_db_blocker.unblock():
            get_user_model().objects.filter(username="mcp_pos_device").delete()
    assert device.returncode != 0 and "POS device token" in device.stderr
    nobody = run()
    assert nobody.returncode != 0 and "--token" in nobody.stderr
    both = run("--token", world["staff_token"], "--user", "mcp_staff")
    assert both.returncode != 0 and "not both" in both.stderr


async def exercise(session: ClientSession, world) -> dict:
    """Every tool once, resources, and both error kinds; returns what was seen."""
    seen = {}
    init = await session.initialize()
    seen["server"] = init.server_info.name
    tools = (await session.list_tools()).tools
    seen["tools"] = {t.name: t.input_schema for t in tools}

    async def call(name, args):
        result = await session.call_tool(name, args)
        seen[name] = result
        return result

    await call("search_knowledge", {"query": "会员卡能跨店用吗"})
    await call("list_documents", {})
    await call("ask", {"query": "上周天河店卖了多少"})
    await call("list_stores", {})
    await call("query_ops", {"tool": "store_sales", "params": {"store": "天河店", "period": "上周"}})
    await call("list_products", {})
    # A product by its everyday name, as in chat (the schema required `sku` and no tool listed products).
    await call("propose_restock", {"store": "天河店", "lines": [{"product": "青岛", "quantity": 12, "unit": "箱", "reason": "MCP"}]})
    ticket = await call("propose_ticket", {"store": "GZ-TH", "category": "酒水品质", "severity": "一般", "description": "MCP 测试：啤酒有异味。"})
    await call("list_pending", {})
    # Staff change and take back their own pending proposal (they could do neither).
    mine = await session.call_tool("propose_restock", {"store": "天河店", "lines": [{"sku": "B002", "quantity": 2, "unit": "箱"}]})
    await call("amend_proposal", {"proposal_id": mine.structured_content["id"], "lines": [{"product": "百威", "quantity": 3, "unit": "箱"}]})
    await call("withdraw_proposal", {"proposal_id": mine.structured_content["id"], "reason": "MCP 测试"})
    seen["amend_ticket"] = await session.call_tool("amend_proposal", {"proposal_id": ticket.structured_content["id"],
                                                                      "description": "MCP 测试：啤酒有异味，已换一瓶。"})
    seen["confirm_restock"] = await session.call_tool("confirm_proposal", {"proposal_id": world["restock_id"]})
    await call("confirm_proposal", {"proposal_id": ticket.structured_content["id"]})
    await call("reject_proposal", {"proposal_id": ticket.structured_content["id"], "reason": "重复"})
    seen["nothing_found"] = await session.call_tool("query_ops", {"tool": "low_stock", "params": {"store": "天河店"}})
    seen["trend"] = await session.call_tool("query_ops", {"tool": "daily_trend", "params": {"store": "天河店", "period": "上周"}})
    resources = (await session.list_resources()).resources
    seen["resources"] = resources
    seen["read"] = await session.read_resource(resources[0].uri)
    # Every document's text as its readers see it (the hand-written 常见问法 lines were included).
    seen["read_all"] = [await session.read_resource(r.uri) for r in resources]
    # Resource templates and prompts answered "Method not found".
    seen["templates"] = (await session.list_resource_templates()).resource_templates
    seen["prompts"] = (await session.list_prompts()).prompts
    seen["prompt"] = await session.get_prompt("restock", {"store": "天河店", "product": "青岛"})
    try:
        await session.get_prompt("restock", {"product": "青岛"})
        seen["prompt_missing"] = None
    except MCPError as exc:
        seen["prompt_missing"] = exc
    seen["k_float"] = await session.call_tool("search_knowledge", {"query": "会员卡能跨店用吗", "k": 2.0})  # was a TypeError
    for label, name, args in (("unknown_tool", "drop_tables", {}), ("bad_args", "search_knowledge", {"q": 1}),
                              ("too_long", "search_knowledge", {"query": "酒" * 20000}),
                              ("wrong_type", "search_knowledge", {"query": "会员", "k": "12"}),
                              ("bad_params", "query_ops", {"tool": "store_sales", "params": {"store": "三里屯店", "period": "上周"}})):
        try:
            await session.call_tool(name, args)
            seen[label] = None
        except MCPError as exc:
            seen[label] = exc
    try:
        await session.read_resource("storemind://corpus/999999")
        seen["missing_resource"] = None
    except MCPError as exc:
        seen["missing_resource"] = exc
    return seen


def check(seen, world, django_db_blocker):
    from core.models import AuditLog
    from workflow.models import Proposal

    assert seen["server"] == "storemind"
    assert set(seen["tools"]) == TOOL_NAMES
    assert all(schema["type"] == "object" and "properties" in schema for schema in seen["tools"].values())
    for name in TOOL_NAMES - {"confirm_proposal", "reject_proposal"}:
        result = seen[name]
        assert not result.is_error, (name, result.content)
        assert result.content[0].type == "text" and result.content[0].text
        assert isinstance(result.structured_content, dict)
    assert seen["search_knowledge"].structured_content["hits"][0]["section_path"]
    assert all(d["title"] != "店长手册" for d in seen["list_documents"].structured_content["documents"])  # staff
    assert seen["ask"].structured_content["intent"] == "data" and seen["ask"].structured_content["data"]
    assert seen["query_ops"].structured_content["params"]["store"] == "广州天河店"
    trend = seen["trend"].structured_content
    assert not seen["trend"].is_error and len(trend["rows"]) == 7 and trend["column_labels"]["revenue"] == "营业额"
    assert "daily_trend" in seen["tools"]["query_ops"]["properties"]["tool"]["enum"]
    assert seen["propose_restock"].structured_content["status"] == "pending"
    assert seen["propose_restock"].structured_content["payload"]["lines"][0]["sku"] == "B001"
    products = seen["list_products"].structured_content["products"]
    assert {"sku": "B001", "name": "青岛啤酒"}.items() <= next(p for p in products if p["sku"] == "B001").items()
    assert seen["amend_proposal"].structured_content["payload"]["lines"][0]["quantity"] == 3
    assert seen["withdraw_proposal"].structured_content["status"] == "withdrawn"
    amended = seen["amend_ticket"].structured_content
    assert not seen["amend_ticket"].is_error and amended["payload"]["description"].endswith("已换一瓶。") and amended["payload"]["category"] == "酒水品质"
    assert seen["confirm_proposal"].structured_content["status"] == "confirmed"  # staff may confirm tickets
    assert "不能再拒绝" in seen["reject_proposal"].content[0].text and seen["reject_proposal"].is_error
    denied = seen["confirm_restock"]
    assert denied.is_error and "店长" in denied.content[0].text and denied.structured_content["denied"] is True
    # The low-stock rows over MCP are the tool's own rows for that user (whatever the seed left low).
    from ops.tools import run_tool

    low = seen["nothing_found"]
    with django_db_blocker.unblock():
        expected = run_tool("low_stock", {"store": "天河店"}, user=world["users"]["staff"])
    assert not low.is_error and [r["sku"] for r in low.structured_content["rows"]] == [r["sku"] for r in expected.rows]
    assert str(seen["resources"][0].uri).startswith("storemind://corpus/")
    assert all("店长手册" != r.title for r in seen["resources"])
    assert seen["read"].contents[0].text.startswith("#")
    assert not any("常见问法" in r.contents[0].text for r in seen["read_all"])
    assert [t.uri_template for t in seen["templates"]] == ["storemind://corpus/{doc_id}"]
    assert {p.name for p in seen["prompts"]} == {"rule_question", "data_question", "restock"}
    text = seen["prompt"].messages[0].content.text
    assert "天河店" in text and "青岛" in text and "propose_restock" in text
    assert isinstance(seen["prompt_missing"], MCPError) and "store" in str(seen["prompt_missing"])
    for label in ("unknown_tool", "bad_args", "bad_params", "missing_resource", "too_long", "wrong_type"):
        assert isinstance(seen[label], MCPError), label
        assert seen[label].code == -32602, (label, seen[label].code)
    assert not seen["k_float"].is_error and len(seen["k_float"].structured_content["hits"]) == 2
    # In Chinese, without echoing the value (a 100,000-character query came back whole).
    assert "最多 500 个字符" in str(seen["too_long"]) and len(str(seen["too_long"])) < 200
    assert "（k）：应为整数" in str(seen["wrong_type"]) and "（参数）：缺少必填参数 query" in str(seen["bad_args"])
    with django_db_blocker.unblock():
        audit = AuditLog.objects.filter(target_id=world["restock_id"], action="permission_denied").order_by("-id").first()
        assert audit is not None and audit.actor_username == "mcp_staff"
        assert Proposal.objects.get(pk=world["restock_id"]).status == "pending"
        assert Proposal.objects.filter(source="mcp", proposed_by__username="mcp_staff").count() >= 2


def test_stdio_transport_with_the_sdk_client(world, django_db_blocker):
    async def main():
        async with stdio_client(stdio_params(world)) as (read, write), ClientSession(read, write) as session:
            return await exercise(session, world)

    check(anyio.run(main), world, django_db_blocker)


def test_stdio_stdout_carries_protocol_messages_only(world):
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "search_knowledge", "arguments": {"query": "黑牌多少钱"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "ask", "arguments": {"query": "客人说酒有异味怎么办"}}},
    ]
    proc = subprocess.Popen([sys.executable, str(BASE / "manage.py"), "mcp", "--stdio", "--user", "mcp_staff"], cwd=BASE,
                            env=world["env"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines = []
    try:
        for m in messages:
            proc.stdin.write((json.dumps(m, ensure_ascii=False) + "\n").encode())
            proc.stdin.flush()
            if "id" in m:
                lines.append(proc.stdout.readline().decode())
    finally:
        proc.stdin.close()  # EOF: the server finishes and exits
        rest = proc.stdout.read()
        proc.wait(timeout=60)
    lines += rest.decode().splitlines()
    lines = [line for line in lines if line.strip()]
    assert len(lines) >= 4
    for line in lines:
        message = json.loads(line)  # anything but JSON-RPC would fail here
        assert message["jsonrpc"] == "2.0"
    assert {json.loads(line).get("id") for line in lines} >= {1, 2, 3, 4}


def test_stdio_answers_lines_it_cannot_read_instead_of_leaving_the_client_waiting(world):
    # Broken JSON, a JSON array and a lone surrogate got no reply at all (the SDK drops them).
    lines = [
        "{not json",
        "[]",
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        '{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "ask", "arguments": {"query": "\\ud800x"}}}',
        json.dumps({"jsonrpc": "2.0", "id": 10, "method": "tools/list"}),
        # An id that is no string or integer made the request a notification: no reply at all.
        json.dumps({"jsonrpc": "2.0", "id": None, "method": "tools/list"}),
        json.dumps({"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}),
        b'{"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "ask", "arguments": {"query": "\xff\xfe"}}}',
    ]
    proc = subprocess.Popen([sys.executable, str(BASE / "manage.py"), "mcp", "--stdio", "--user", "mcp_staff"], cwd=BASE,
                            env=world["env"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    replies, received = [], queue.Queue()
    threading.Thread(target=lambda: [received.put(out) for out in iter(proc.stdout.readline, b"")], daemon=True).start()
    try:
        for line in lines:
            proc.stdin.write((line + "\n").encode() if isinstance(line, str) else line + b"\n")
            proc.stdin.flush()
            if b"notifications/" not in (line.encode() if isinstance(line, str) else line):  # everything else: one reply
                try:  # a line left unanswered must fail the test, not hang it
                    replies.append(json.loads(received.get(timeout=60).decode()))
                except queue.Empty:
                    raise AssertionError(f"no reply to {line!r}") from None
    finally:
        proc.kill()
    errors = [(r["id"], r["error"]["code"]) for r in replies if "error" in r]
    assert errors[:2] == [(None, -32700), (None, -32600)]
    assert (9, -32602) in errors and "代理项" in next(r for r in replies if r.get("id") == 9)["error"]["message"]
    assert any(r.get("id") == 10 and r["result"]["tools"] for r in replies)  # the session goes on
    assert errors[-3:-1] == [(None, -32600), (None, -32600)] and "id" in replies[-2]["error"]["message"]
    assert errors[-1] == (11, -32602) and "UTF-8" in replies[-1]["error"]["message"]


@pytest.fixture(scope="module")
def http_server(world):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "storemind.asgi:application", "--host", "127.0.0.1", "--port", str(port),
                             "--log-level", "warning"], cwd=BASE, env=world["env"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.5)
    else:
        proc.kill()
        raise RuntimeError(proc.stderr.read().decode()[-2000:])
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def test_http_requires_a_token(http_server):
    r = httpx.post(f"{http_server}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                   headers={"Accept": "application/json, text/event-stream"})
    assert r.status_code == 401
    r = httpx.post(f"{http_server}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                   headers={"Accept": "application/json, text/event-stream", "Authorization": "Bearer sm_wrong"})
    assert r.status_code == 401


def test_streamable_http_transport_with_the_sdk_client(http_server, world, django_db_blocker):
    async def main():
        client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {world['staff_token']}"}, timeout=60)
        async with client, streamable_http_client(f"{http_server}/mcp", http_client=client) as (read, write), \
                ClientSession(read, write) as session:
            return await exercise(session, world)

    check(anyio.run(main), world, django_db_blocker)


def test_a_user_without_a_role_is_denied_and_audited(world, django_db_blocker):
    from core.models import AuditLog

    async def main():
        async with stdio_client(stdio_params(world, user="mcp_norole")) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            try:
                await session.list_resources()
                resources = None
            except MCPError as exc:  # the documents too need a store role
                resources = exc
            return await session.call_tool("list_stores", {}), resources

    result, resources = anyio.run(main)
    assert result.is_error and "角色" in result.content[0].text
    assert isinstance(resources, MCPError) and "角色" in str(resources)
    with django_db_blocker.unblock():
        assert AuditLog.objects.filter(actor_username="mcp_norole", action="permission_denied").exists()


def test_a_role_taken_away_during_a_stdio_session_takes_effect_at_once(world, django_db_blocker):
    from django.contrib.auth.models import Group

    user = world["users"]["staff"]

    def set_role(on: bool):  # the ORM is synchronous: run it in a worker thread
        with django_db_blocker.unblock():
            group = Group.objects.get(name="staff")
            user.groups.add(group) if on else user.groups.remove(group)

    async def main():
        async with stdio_client(stdio_params(world)) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            before = await session.call_tool("list_stores", {})
            await anyio.to_thread.run_sync(set_role, False)
            try:
                after = await session.call_tool("list_stores", {})
            finally:
                await anyio.to_thread.run_sync(set_role, True)
            return before, after

    before, after = anyio.run(main)
    assert not before.is_error and after.is_error and after.structured_content["denied"] is True


def test_the_example_client_config_points_where_the_readme_serves_mcp_over_http():
    # It pointed at :8000/mcp, a 404: Streamable HTTP is served by uvicorn (README), not runserver/gunicorn.
    import re

    url = json.loads((BASE / "mcp.example.json").read_text())["mcpServers"]["storemind-http"]["url"]
    served = re.search(r"Streamable HTTP at (\S+)", (BASE / "README.md").read_text()).group(1)
    assert url == served


def test_schema_errors_are_chinese_and_short_and_integers_are_read_at_any_depth():
    import jsonschema

    from mcpserver.server import TOOLS_BY_NAME, integers_as_int, schema_error_text

    schema = TOOLS_BY_NAME["propose_restock"].schema
    args = {"store": "天河店", "lines": [{"sku": "B001", "quantity": 2.0, "unit": "箱"}]}
    assert integers_as_int(args, schema)["lines"][0]["quantity"] == 2 and isinstance(integers_as_int(args, schema)["lines"][0]["quantity"], int)
    try:
        jsonschema.validate({**args, "k" * 100_000: 1}, schema)
    except jsonschema.ValidationError as exc:
        text = schema_error_text(exc)
    assert text.startswith("不认识的参数 kkkk") and len(text) < 40, text


def test_query_ops_tells_a_client_every_tools_parameters():
    # 「params」 was one example: a client learned from errors that period_compare needs baseline and
    # member_balance takes member.
    from mcpserver.server import TOOLS as MCP_TOOLS
    from ops.tools import TOOLS

    schema = next(t for t in MCP_TOOLS if t.name == "query_ops").schema
    help_text = schema["properties"]["params"]["description"]
    for name, spec in TOOLS.items():
        assert f"{name}：" in help_text
        for field in spec.schema.get("required") or ():
            assert f"{field}（必填）" in help_text.split(f"{name}：", 1)[1].split("；", 1)[0], (name, field)
