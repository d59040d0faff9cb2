"""The permission matrix: every caller × action × channel, generated from core.roles.MATRIX.

Callers: staff of A, manager of A, manager of B, head office, POS of A, a role-less account,
anonymous. Channels: REST (tokens; the POS device uses its store token), chat (the chat API),
HTMX (the web pages, logged in), MCP (the server's dispatch, which both transports run; the
real stdio and HTTP transports are driven for a representative subset at the end), WeCom (a
bound account's message or card button, through the channels services), admin.
Each cell asserts the outcome the table promises (allowed / denied 403 / hidden: exactly what
a missing object or unknown store gets) and, for every refusal of a known user, a
`permission_denied` audit row written by that very attempt.
"""
from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import anyio
import pytest
from django.conf import settings
from rest_framework.test import APIClient

from core.roles import ACTIONS, ALLOW, CALLERS, DENY, HIDDEN, MATRIX

A, B = "GZ-TH", "FS-ZM"
A_NAME, B_NAME = "广州天河店", "佛山祖庙店"
PASSWORD = "pw-123456"
USERS = {  # caller → (username, role, stores)
    "staff_a": ("mx_staff_a", "staff", [A]),
    "manager_a": ("mx_manager_a", "manager", [A]),
    "manager_b": ("mx_manager_b", "manager", [B]),
    "hq": ("mx_hq", "hq", []),
    "pos_a": ("mx_pos_a", "pos", [A]),
    "no_role": ("mx_no_role", None, [A]),
}
CHANNELS = {
    "rest": ["read_sales_a", "read_sales_b", "propose", "confirm_restock", "confirm_ticket", "read_audit",
             "write_order_a", "write_order_b", "adjust_inventory", "read_doc_a", "upload_doc_a"],
    "chat": ["read_sales_a", "read_sales_b", "read_member_balance", "propose"],
    "htmx": ["read_sales_a", "read_sales_b", "read_member_balance", "propose", "confirm_restock", "confirm_ticket",
             "read_audit"],
    "mcp": ["read_sales_a", "read_sales_b", "read_member_balance", "propose", "confirm_restock", "confirm_ticket"],
    # 企业微信 (the channels app): a bound account asks in a message and decides from a card.
    "wecom": ["read_sales_a", "read_sales_b", "read_member_balance", "propose", "confirm_restock", "confirm_ticket"],
    "admin": ["read_sales_a", "read_sales_b", "list_members", "read_audit", "confirm_restock", "confirm_ticket",
              "edit_inventory_admin", "upload_doc_a"],
}
QUESTIONS = {
    "read_sales_a": "上周天河店卖了多少", "read_sales_b": "上周祖庙店卖了多少",
    "read_member_balance": "会员M00001余额还有多少", "propose": "天河店的青岛啤酒快没了，帮我补 20 箱",
}
RESTOCK = {"lines": [{"sku": "B001", "quantity": 3, "unit": "箱", "reason": "矩阵测试"}]}
TICKET = {"category": "酒水品质", "severity": "一般", "description": "矩阵测试：啤酒有异味。"}


def cells():
    for channel, actions in CHANNELS.items():
        for action in actions:
            for caller in CALLERS:
                if channel in ("mcp", "wecom") and caller == "anonymous":
                    continue  # no anonymous identity: MCP over HTTP answers 401; an unbound WeCom account is told to bind
                yield pytest.param(caller, action, channel, id=f"{channel}-{action}-{caller}")


def test_every_action_of_the_table_is_exercised_on_some_channel():
    assert {a for actions in CHANNELS.values() for a in actions} == set(ACTIONS)


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """Committed users and tokens: the agent's guard threads and the MCP server processes use
    connections of their own."""
    from django.contrib.auth import get_user_model

    from ops.models import ApiToken, Store
    from ops.services import api_token_issue
    from ops.tests.factories import make_user
    from workflow.models import Proposal, RestockRequest, Ticket
    from workflow.services import proposal_create

    with django_db_blocker.unblock():
        User = get_user_model()
        users, tokens = {}, {}
        for caller, (username, role, stores) in USERS.items():
            user = User.objects.filter(username=username).first() or make_user(username, role=role, stores=stores, is_staff=True)
            for code in stores:  # a new day's reseed empties the stores, and their members, of a kept user
                Store.objects.get(code=code).members.add(user)
            users[caller] = user
            ApiToken.objects.filter(user=user).delete()  # the last run's tokens
            store = Store.objects.get(code=A) if caller == "pos_a" else None
            tokens[caller] = api_token_issue(user=user, name="matrix", store=store)[1]
        mine = Proposal.objects.filter(proposed_by__in=users.values())

        def clean():  # the database is shared and committed: leave no pending proposal for other tests to find
            RestockRequest.objects.filter(proposal__in=mine).delete()
            Ticket.objects.filter(proposal__in=mine).delete()
            mine.delete()

        from knowledge.documents import document_publish, document_upload
        from knowledge.models import Document

        def clean_documents():
            from knowledge.services import remove_documents

            docs = list(Document.objects.filter(title__startswith="矩阵测试"))
            remove_documents(docs)
            Document.objects.filter(pk__in=[d.pk for d in docs]).delete()

        clean()
        clean_documents()
        # For the transports (other processes): committed pending proposals at A.
        restock, _ = proposal_create(user=users["staff_a"], kind="restock", store=A, payload=RESTOCK, source="api")
        # A document only A's people read (published by A's manager).
        doc_a = document_upload(user=users["manager_a"], name="矩阵.md", data="# 矩阵测试A店制度\n\n## 一、冰桶\n\n冰桶 4 小时更换。\n".encode(),
                                stores=[A])
        document_publish(version=doc_a, user=users["manager_a"], run_now=True)
        try:
            yield {"users": users, "tokens": tokens, "restock_id": restock.pk, "doc_a": doc_a.document_id,
                   "stores": {code: Store.objects.get(code=code) for code in (A, B)}}
        finally:
            clean()
            clean_documents()


def _refused_store(message: str) -> bool:
    """A store outside the caller's scope: unknown (「没有叫…」), or the chain's and not theirs."""
    return message.startswith("没有叫「") or "没有权限查看" in message or message.startswith("你不能为")


def denials(user) -> int:
    """Refusals recorded for the user: audit rows, each counting its repeats within a minute
    (core.DenialRepeat) — re-running the matrix within a minute counts up instead of adding rows."""
    from django.db.models import Sum
    from django.db.models.functions import Coalesce

    from core.models import AuditLog

    rows = AuditLog.objects.filter(actor=user, action__in=("permission_denied", "scope_refused"))
    return rows.aggregate(n=Coalesce(Sum("repeat__times"), 0))["n"] + rows.filter(repeat__isnull=True).count()


def pending(kind: str):
    from django.contrib.auth import get_user_model

    from workflow.models import Proposal
    from workflow.services import proposal_create

    proposer = get_user_model().objects.get(username="mx_staff_a")
    return proposal_create(user=proposer, kind=kind, store=A, payload=RESTOCK if kind == "restock" else TICKET,
                           source="api", idempotency_key=uuid.uuid4().hex)[0], Proposal


# --- channels: each returns the observed outcome -----------------------------------------


def rest(world, caller, action) -> str:
    from ops.tests.factories import order_payload

    c = APIClient()
    if caller != "anonymous":
        c.credentials(HTTP_AUTHORIZATION=f"Bearer {world['tokens'][caller]}")
    if action in ("read_sales_a", "read_sales_b"):
        r = c.get("/api/v1/sales/summary", {"store": A_NAME if action.endswith("a") else B_NAME, "period": "上周"})
        hidden = r.status_code == 400 and _refused_store(r.json()["store"][0])
    elif action == "propose":
        r = c.post("/api/v1/proposals", {"kind": "restock", "store": A, "payload": RESTOCK}, format="json")
        hidden = r.status_code == 400 and _refused_store(r.json()["store"][0])
    elif action in ("confirm_restock", "confirm_ticket"):
        p, _ = pending(action.split("_")[1])
        r = c.post(f"/api/v1/proposals/{p.pk}/confirm")
        hidden = r.status_code == 404
        if hidden:  # exactly what a proposal that does not exist gets
            missing = c.post(f"/api/v1/proposals/{10**12}/confirm")
            assert missing.status_code == 404 and missing.json()["detail"].replace(str(10**12), str(p.pk)) == r.json()["detail"]
        if r.status_code == 200:
            assert r.json()["status"] == "confirmed"
    elif action == "read_audit":
        r = c.get("/api/v1/audit")
        hidden = False
    elif action in ("write_order_a", "write_order_b"):
        r = c.post("/api/v1/orders", order_payload(f"MX-{uuid.uuid4().hex[:10]}", store=A if action.endswith("a") else B),
                   format="json")
        hidden = r.status_code == 400 and r.json()["store"][0].startswith("没有编码或名称为「")
    elif action == "adjust_inventory":
        r = c.post("/api/v1/inventory/adjustments", {"store": A, "sku": "B001", "delta": 1, "reason": "receive",
                                                     "external_id": f"MX-{uuid.uuid4().hex[:10]}"}, format="json")
        hidden = r.status_code == 400 and r.json()["store"][0].startswith("没有门店「")
    elif action == "read_doc_a":
        r = c.get(f"/api/v1/knowledge/documents/{world['doc_a']}")
        hidden = r.status_code == 404
        if r.status_code == 200:
            assert r.json()["title"] == "矩阵测试A店制度"
    elif action == "upload_doc_a":
        import io

        body = f"# 矩阵测试上传{uuid.uuid4().hex[:8]}\n\n## 一、冰铲\n\n冰铲单独存放。\n".encode()
        r = c.post("/api/v1/knowledge/documents", {"file": io.BytesIO(body), "stores": A}, format="multipart")
        hidden = False
    if r.status_code in (200, 201):
        return ALLOW
    if hidden:
        return HIDDEN
    assert r.status_code == (401 if caller == "anonymous" else 403), (r.status_code, r.content)
    return DENY


def chat(world, caller, action) -> str:
    c = APIClient()
    if caller != "anonymous":
        c.credentials(HTTP_AUTHORIZATION=f"Bearer {world['tokens'][caller]}")
    r = c.post("/api/v1/chat", {"query": QUESTIONS[action]}, format="json")
    if r.status_code in (401, 403):
        assert r.status_code == (401 if caller == "anonymous" else 403)
        return DENY
    assert r.status_code == 200, r.content
    return _answer_outcome(action, r.json()["answer"], r.json()["data"], r.json()["proposal"])


def _answer_outcome(action, answer: str, data, proposal) -> str:
    if action == "propose":
        if proposal:
            return ALLOW
        if _refused_store(answer) or "你不能为" in answer:
            return HIDDEN
        assert "只有店员或店长可以提交提案" in answer, answer
        return DENY
    if data:
        return ALLOW
    if "没有叫「" in answer or "的数据你没有权限查看" in answer:
        return HIDDEN
    assert "没有查询这类数据的权限" in answer, answer
    return DENY


def htmx(world, caller, action, client) -> str:
    from agent.models import Message

    headers = {"HTTP_HX_REQUEST": "true"}
    if action in QUESTIONS:
        r = client.post("/", {"query": QUESTIONS[action]}, **headers)
        if caller == "anonymous":  # htmx is sent to the login page (HX-Redirect), never shown it inside the chat
            assert r.status_code == 204 and r["HX-Redirect"].startswith("/accounts/login/")
            return DENY
        if "不能使用门店助手" in r.content.decode():
            return DENY
        reply = Message.objects.filter(conversation__user=world["users"][caller], role="assistant").order_by("-id").first()
        assert r.status_code == 200 and reply is not None
        return _answer_outcome(action, reply.content, reply.data, reply.proposal)
    if action in ("confirm_restock", "confirm_ticket"):
        p, Proposal = pending(action.split("_")[1])
        r = client.post(f"/proposals/{p.pk}/confirm", **headers)
        if caller == "anonymous":
            assert r.status_code == 204 and r["HX-Redirect"].startswith("/accounts/login/")
            return DENY
        assert r.status_code == 200
        if Proposal.objects.get(pk=p.pk).status == "confirmed":
            return ALLOW
        return HIDDEN if "没有这个提案" in r.content.decode() else DENY
    if action == "read_audit":
        r = client.get("/audit/", **headers)
        if caller == "anonymous":
            assert r.status_code == 204 and r["HX-Redirect"].startswith("/accounts/login/")
            return DENY
        if r.status_code == 200:
            assert 'id="audit-list"' in r.content.decode()
            return ALLOW
        assert r.status_code == 403
        return DENY
    raise AssertionError(action)


def mcp(world, caller, action) -> str:
    from mcp.shared.exceptions import MCPError

    from mcpserver.server import dispatch

    user = world["users"][caller]
    if action in ("read_sales_a", "read_sales_b", "read_member_balance"):
        params = ({"tool": "member_balance", "params": {"member": "M00001"}} if action == "read_member_balance" else
                  {"tool": "store_sales", "params": {"store": A_NAME if action.endswith("a") else B_NAME, "period": "上周"}})
        name, args = "query_ops", params
    elif action == "propose":
        name, args = "propose_restock", {"store": A, "lines": RESTOCK["lines"], "idempotency_key": uuid.uuid4().hex}
    else:
        p, _ = pending(action.split("_")[1])
        name, args = "confirm_proposal", {"proposal_id": p.pk}
    try:
        result = dispatch(user, name, args)
    except MCPError as exc:
        assert exc.code == -32602 and ("没有叫「" in str(exc) or "没有权限查看" in str(exc) or "你不能为" in str(exc)), str(exc)
        return HIDDEN
    if not result.is_error:
        return ALLOW
    if result.structured_content.get("denied"):
        return DENY
    assert "没有提案" in result.content[0].text, result.content[0].text
    return HIDDEN


def wecom(world, caller, action) -> str:
    """A message (or, for a decision, a card button) from the caller's bound WeCom account, run
    through the channels services as the Celery task runs it."""
    from agent.models import Message
    from channels.models import Identity, Inbound
    from channels.platforms.base import Event
    from channels.services import answer_inbound, inbound_record

    user = world["users"][caller]
    Identity.objects.get_or_create(platform="wecom", external_id=f"mx-{caller}", defaults={"user": user})
    if action in QUESTIONS:
        before = Message.objects.filter(conversation__user=user, role="assistant").count()
        inbound, _ = inbound_record("wecom", Event(message_id=uuid.uuid4().hex, external_id=f"mx-{caller}", text=QUESTIONS[action]))
        answer_inbound(inbound.pk)
        replies = Message.objects.filter(conversation__user=user, role="assistant", conversation__channel="wecom").order_by("-id")
        if Message.objects.filter(conversation__user=user, role="assistant").count() == before:
            assert "不能使用门店助手" in Inbound.objects.get(pk=inbound.pk).deliveries.get().payload["text"]
            return DENY
        reply = replies.first()
        return _answer_outcome(action, reply.content, reply.data, reply.proposal)
    p, Proposal = pending(action.split("_")[1])
    inbound, _ = inbound_record("wecom", Event(message_id=uuid.uuid4().hex, external_id=f"mx-{caller}", kind="card",
                                              action=f"confirm:{p.pk}"))
    answer_inbound(inbound.pk)
    said = Inbound.objects.get(pk=inbound.pk).deliveries.get().payload["text"]
    if Proposal.objects.get(pk=p.pk).status == "confirmed":
        return ALLOW
    return HIDDEN if "没有提案" in said else DENY


def admin(world, caller, action, client) -> str:
    from ops.models import Inventory

    def redirected_to_login(r):
        return r.status_code == 302 and "/admin/login/" in r["Location"]

    if action in ("read_sales_a", "read_sales_b"):
        store = world["stores"][A if action.endswith("a") else B]
        r = client.get("/admin/ops/order/", {"store__id__exact": store.pk})
        if caller == "anonymous":
            assert redirected_to_login(r)
            return DENY
        if r.status_code == 403:
            return DENY
        assert r.status_code == 200
        # Allowed: the page lists that store's orders; hidden: it lists none of them.
        return ALLOW if r.context_data["cl"].queryset.filter(store=store).exists() else HIDDEN
    if action in ("list_members", "read_audit"):
        r = client.get("/admin/ops/member/" if action == "list_members" else "/admin/core/auditlog/")
        if caller == "anonymous":
            assert redirected_to_login(r)
            return DENY
        if r.status_code == 403:
            return DENY
        assert r.status_code == 200
        if action == "list_members":
            from ops.models import Member

            page = r.content.decode()
            assert not any(m.phone in page for m in Member.objects.all()[:50])  # masked without view_member_pii
        return ALLOW
    if action in ("confirm_restock", "confirm_ticket"):
        p, Proposal = pending(action.split("_")[1])
        r = client.post("/admin/workflow/proposal/", {"action": "confirm_selected", "_selected_action": [p.pk], "index": 0},
                        follow=True)
        if caller == "anonymous":
            assert r.redirect_chain and "/admin/login/" in r.redirect_chain[0][0]
            return DENY
        if r.status_code == 403:
            return DENY
        if Proposal.objects.get(pk=p.pk).status == "confirmed":
            return ALLOW
        messages = [str(m) for m in r.context["messages"]]
        return DENY if any("没有权限" in m for m in messages) else HIDDEN
    if action == "upload_doc_a":
        import io

        from knowledge.models import DocumentVersion

        title = f"矩阵测试后台{uuid.uuid4().hex[:8]}"
        upload = io.BytesIO(f"# {title}\n\n## 一、冰铲\n\n冰铲单独存放。\n".encode())
        upload.name = "矩阵.md"
        r = client.post("/admin/knowledge/document/upload/", {"files": [upload], "stores": [A]})
        if caller == "anonymous":
            assert redirected_to_login(r)
            return DENY
        if DocumentVersion.objects.filter(title=title).exists():
            assert r.status_code == 302
            return ALLOW
        assert r.status_code in (400, 403), r.status_code
        return DENY
    if action == "edit_inventory_admin":
        inv = Inventory.objects.get(store__code=A, product__sku="B001")
        r = client.post(f"/admin/ops/inventory/{inv.pk}/change/",
                        {"store": inv.store_id, "product": inv.product_id, "on_hand": 9999, "safety_stock": 0})
        changed = Inventory.objects.get(pk=inv.pk)
        if caller == "anonymous":
            assert redirected_to_login(r) and changed.on_hand == inv.on_hand
            return DENY
        if r.status_code == 403:
            assert changed.on_hand == inv.on_hand
            return DENY
        assert r.status_code == 302
        if changed.on_hand == 9999:
            from core.models import AuditLog

            row = AuditLog.objects.filter(action="object_changed", target_id=inv.pk, actor=world["users"][caller]).latest("id")
            assert row.before["on_hand"] == inv.on_hand and row.after["on_hand"] == 9999
            return ALLOW
        assert changed.on_hand == inv.on_hand and r["Location"] == "/admin/"  # "does not exist", like a missing row
        return HIDDEN
    raise AssertionError(action)


@pytest.mark.django_db
@pytest.mark.parametrize("caller,action,channel", list(cells()))
def test_permission_matrix(world, client, caller, action, channel, settings, fake_http):
    user = world["users"].get(caller)
    if user is not None and channel in ("htmx", "admin"):
        client.force_login(user)
    before = denials(user) if user is not None else 0
    if channel == "rest":
        observed = rest(world, caller, action)
    elif channel == "chat":
        observed = chat(world, caller, action)
    elif channel == "htmx":
        observed = htmx(world, caller, action, client)
    elif channel == "mcp":
        observed = mcp(world, caller, action)
    elif channel == "wecom":
        from channels.tests.fakes import FakeWeCom, wecom_settings

        wecom_settings(settings, fake_http)
        FakeWeCom(fake_http)
        observed = wecom(world, caller, action)
    else:
        observed = admin(world, caller, action, client)
    assert observed == MATRIX[caller][action], f"{CALLERS[caller]} · {ACTIONS[action]} · {channel}"
    if user is not None:
        added = denials(user) - before
        if observed == ALLOW:
            assert added == 0
        else:
            assert added >= 1, "a refusal must leave a permission_denied audit row"


def test_the_readme_table_is_the_matrix():
    from core.roles import matrix_markdown

    readme = (Path(settings.BASE_DIR) / "README.md").read_text(encoding="utf-8")
    assert matrix_markdown() in readme


# --- the real transports, for a representative subset of the same table ----------------------


def _env():
    from django.db import connection

    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "storemind.settings", "SM_DB_NAME": connection.settings_dict["NAME"],
           "SM_EMBED_BACKEND": "hashing", "SM_EMBED_DIM": "256", "SM_LLM_BACKEND": "none",
           "SM_REFUSAL_THRESHOLD": "0", "SM_JUDGE_THRESHOLD": "0"}
    env.pop("REDIS_URL", None)
    return env


SUBSET = [  # (caller, action, tool, arguments); the outcome comes from MATRIX
    ("staff_a", "read_sales_a", "query_ops", {"tool": "store_sales", "params": {"store": A_NAME, "period": "上周"}}),
    ("staff_a", "read_sales_b", "query_ops", {"tool": "store_sales", "params": {"store": B_NAME, "period": "上周"}}),
    ("manager_b", "confirm_restock", "confirm_proposal", None),
    ("hq", "propose", "propose_restock", {"store": A, "lines": RESTOCK["lines"]}),
]


async def _drive(session, world, caller, tool, args):
    from mcp.shared.exceptions import MCPError

    args = args if args is not None else {"proposal_id": world["restock_id"]}
    try:
        result = await session.call_tool(tool, args)
    except MCPError as exc:
        assert exc.code == -32602
        return HIDDEN
    if not result.is_error:
        return ALLOW
    return DENY if result.structured_content.get("denied") else HIDDEN


def test_mcp_stdio_follows_the_table(world):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def as_user(caller, subset):
        params = StdioServerParameters(command=sys.executable, env=_env(), cwd=str(settings.BASE_DIR),
                                       args=[str(Path(settings.BASE_DIR) / "manage.py"), "mcp", "--stdio", "--user", USERS[caller][0]])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return [await _drive(session, world, caller, tool, args) for _, _, tool, args in subset]

    for caller in ("staff_a", "manager_b"):
        subset = [s for s in SUBSET if s[0] == caller]
        assert anyio.run(as_user, caller, subset) == [MATRIX[caller][action] for _, action, _, _ in subset]
    pos = [("pos_a", "read_sales_a", "query_ops", SUBSET[0][3])]
    assert anyio.run(as_user, "pos_a", pos) == [MATRIX["pos_a"]["read_sales_a"]] == [DENY]


def test_mcp_http_follows_the_table_and_refuses_pos_tokens(world, django_db_blocker):
    import subprocess
    import time

    import httpx
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from storemind.tests.servers import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "storemind.asgi:application", "--host", "127.0.0.1",
                             "--port", str(port), "--log-level", "warning"], cwd=settings.BASE_DIR, env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)

        async def as_caller(caller, subset):
            client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {world['tokens'][caller]}"}, timeout=60)
            async with client, streamable_http_client(f"{url}/mcp", http_client=client) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                return [await _drive(session, world, caller, tool, args) for _, _, tool, args in subset]

        for caller in ("staff_a", "manager_b", "hq"):
            subset = [s for s in SUBSET if s[0] == caller]
            assert anyio.run(as_caller, caller, subset) == [MATRIX[caller][action] for _, action, _, _ in subset]
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        accept = {"Accept": "application/json, text/event-stream"}
        assert httpx.post(f"{url}/mcp", json=body, headers=accept).status_code == 401  # anonymous
        with django_db_blocker.unblock():
            before = denials(world["users"]["pos_a"])
        r = httpx.post(f"{url}/mcp", json=body, headers={**accept, "Authorization": f"Bearer {world['tokens']['pos_a']}"})
        assert r.status_code == 403 and "POS" in r.json()["error"]
        with django_db_blocker.unblock():
            assert denials(world["users"]["pos_a"]) == before + 1
    finally:
        proc.terminate()
        proc.wait(timeout=10)
