"""StoreMind as an MCP server (official `mcp` SDK), over stdio and Streamable HTTP.

Every tool calls the same services and selectors as the REST API, the chat page and the
admin: nothing here reimplements a query or a write, and every permission and store scope is
the services' own (core.roles, `restrict()`). Identity: stdio runs as one user (`--user`);
HTTP requires a person's API token (a POS device token is refused: it may call POS
endpoints only). Failure semantics:
an unknown tool or arguments that fail validation are JSON-RPC errors; a tool that ran
but found nothing, or was denied, returns a result with isError=true and a clear message.

The pieces: tools.py (the adapters), identity.py, prompts.py, wire.py (transport repairs);
this module dispatches a call and serves both transports."""
from __future__ import annotations

import json
import logging
import uuid

import anyio
import jsonschema
import mcp_types as types
from django.conf import settings
from django.db import close_old_connections, connections
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from rest_framework.exceptions import Throttled

from core.audit import request_meta
from core.errors import DATABASE_DOWN, RETRY_AFTER_SECONDS, is_database_outage, refusal_of
from core.ratelimit import address_of
from core.throttling import throttle_person
from core.validation import find_bad_text
from knowledge.chunking import without_aliases
from knowledge.models import Document
from knowledge.selectors import IndexNotReady

from .identity import _may_use_assistant, _refuse_pos_token, _reload_user, token_from_header, user_from_token
from .prompts import PROMPTS, PROMPTS_BY_NAME
from .tools import RESOURCE_PREFIX, TOOLS, TOOLS_BY_NAME, ToolFailure, _list_documents, _messages
from .wire import integers_as_int, malformed_reply, schema_error_text, unreadable_reply

log = logging.getLogger("mcpserver")

SERVER_NAME = "storemind"


def dispatch(user, name: str, args: dict) -> types.CallToolResult:
    """Run one validated tool call for `user` (synchronously, in the caller's connection).
    Both transports end here; tests call it directly for the whole permission matrix."""
    tool = TOOLS_BY_NAME[name]
    if bad := find_bad_text(args):  # the same check as every REST body and form field
        raise MCPError(types.INVALID_PARAMS, f"{name} 的参数不正确（{bad[0]}）：{bad[1]}")
    if not _may_use_assistant(user, name):
        return _error_result("这个账号没有店员、店长或总部角色，不能使用 StoreMind 的工具；请联系店长分配角色。", denied=True)
    # The same rate table as REST and the chat page: MCP calls per person, and a question is a chat.
    wait = throttle_person(user, "mcp") or (throttle_person(user, "chat") if name == "ask" else None)
    if wait is not None:
        return _error_result(f"操作太频繁，请 {int(wait) + 1} 秒后再试。")
    try:
        text, structured = tool.run(user, args)
    except MCPError:
        raise
    except (ToolFailure, IndexNotReady) as exc:
        return _error_result(str(exc))
    except Exception as exc:
        return _refused(name, exc)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured if isinstance(structured, dict) else {"result": structured},
    )


def _refused(name: str, exc: Exception) -> types.CallToolResult:
    """A service's refusal as MCP reports it (core.errors.refusal_of): bad arguments and the
    database down are JSON-RPC errors; a denial, a conflict, nothing found are error results."""
    refusal = refusal_of(exc)
    if refusal is None:
        log.exception("tool %s failed", name)
        return _error_result(f"{name} 执行出错：{type(exc).__name__}")
    if refusal.status == 400:  # field names kept: the caller is a program
        raise MCPError(types.INVALID_PARAMS, f"{name} 的参数不正确：{_messages(exc)}") from None
    if refusal.status == 503:  # the client retries later, as a 503 says elsewhere
        raise MCPError(types.INTERNAL_ERROR, refusal.message) from None
    return _error_result(refusal.message, denied=refusal.status == 403)


def _sync(fn, *args):
    """Run Django ORM work in a worker thread with fresh connections."""

    def call():
        close_old_connections()
        meta = request_meta.set({"request_id": uuid.uuid4().hex, "channel": "mcp"})
        try:
            return fn(*args)
        finally:
            request_meta.reset(meta)
            connections.close_all()

    return anyio.to_thread.run_sync(call)


class _Handlers:
    """The MCP requests a server answers, for the caller `identity()` resolves: the stdio
    transport's fixed user (read again per call) or the HTTP request's token."""

    def __init__(self, fixed_user=None):
        self.fixed_user = fixed_user

    async def identity(self, ctx):
        if self.fixed_user is not None:
            # Read again per call: a role or store taken away (or the account deactivated)
            # while a long stdio session runs takes effect at once, not at the next start.
            user = await _sync(_reload_user, self.fixed_user.pk)
            if user is None:
                raise MCPError(types.INVALID_REQUEST, "这个账号已停用。")
            return user
        request = getattr(ctx, "request", None)
        header = request.headers.get("authorization") if request is not None else None
        user = await _sync(user_from_token, header)
        if user is None:
            raise MCPError(types.INVALID_REQUEST, "需要有效的 API 令牌（Authorization: Bearer …）。")
        return user

    async def list_tools(self, ctx, params):
        return types.ListToolsResult(tools=[
            types.Tool(name=t.name, title=t.name, description=t.description, input_schema=t.schema) for t in TOOLS
        ])

    async def call_tool(self, ctx, params):
        tool = TOOLS_BY_NAME.get(params.name)
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"没有工具 {params.name}。可用：{'、'.join(TOOLS_BY_NAME)}")
        args = params.arguments or {}
        try:
            jsonschema.validate(args, tool.schema)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path)[:60] or "参数"
            raise MCPError(types.INVALID_PARAMS, f"{params.name} 的参数不正确（{where}）：{schema_error_text(exc)}") from None
        args = integers_as_int(args, tool.schema)
        user = await self.identity(ctx)
        return await _sync(dispatch, user, params.name, args)

    async def permitted(self, ctx, what: str):
        user = await self.identity(ctx)
        if not await _sync(_may_use_assistant, user, what):
            raise MCPError(types.INVALID_REQUEST, "这个账号没有店员、店长或总部角色，不能读取 StoreMind 的文档。")
        return user

    async def list_resources(self, ctx, params):
        user = await self.permitted(ctx, "resources/list")
        text, data = await _sync(_list_documents, user, {})
        return types.ListResourcesResult(resources=[
            types.Resource(uri=d["uri"], name=d["path"], title=d["title"], mime_type="text/markdown",
                           description=f"{d['doc_type']} · 版本 {d['version']} · {d['chunks']} 段")
            for d in data["documents"]
        ])

    async def read_resource(self, ctx, params):
        user = await self.permitted(ctx, "resources/read")
        uri = str(params.uri)
        if not uri.startswith(RESOURCE_PREFIX) or not uri[len(RESOURCE_PREFIX):].isdigit():
            raise MCPError(types.INVALID_PARAMS, f"不认识的资源：{uri}")

        def load():
            return Document.objects.visible_to(user).filter(pk=int(uri[len(RESOURCE_PREFIX):])).first()

        doc = await _sync(load)
        if doc is None:  # missing and not-allowed look the same: no existence leak
            raise MCPError(types.INVALID_PARAMS, f"没有这个文档，或你无权查看：{uri}")

        # The document as its readers see it: the hand-written 常见问法 lines are the index's, not the rules.
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown",
                                                                             text=without_aliases(doc.body))])

    async def list_resource_templates(self, ctx, params):
        await self.permitted(ctx, "resources/templates/list")
        return types.ListResourceTemplatesResult(resource_templates=[types.ResourceTemplate(
            name="document", title="制度文档", uri_template=RESOURCE_PREFIX + "{doc_id}", mime_type="text/markdown",
            description="一篇制度文档的全文（doc_id 见 list_documents 或 resources/list；只能读你有权查看的文档）")])

    async def list_prompts(self, ctx, params):
        await self.identity(ctx)
        return types.ListPromptsResult(prompts=[
            types.Prompt(name=p.name, title=p.title, description=p.description,
                         arguments=[types.PromptArgument(name=a, description=d, required=r) for a, d, r in p.arguments])
            for p in PROMPTS])

    async def get_prompt(self, ctx, params):
        await self.identity(ctx)
        prompt = PROMPTS_BY_NAME.get(params.name)
        if prompt is None:
            raise MCPError(types.INVALID_PARAMS, f"没有提示词 {params.name}。可用：{'、'.join(PROMPTS_BY_NAME)}")
        args = params.arguments or {}
        missing = [a for a, _, required in prompt.arguments if required and not str(args.get(a) or "").strip()]
        if missing:
            raise MCPError(types.INVALID_PARAMS, f"{params.name} 缺少参数：{'、'.join(missing)}")
        text = prompt.render({a: str(args.get(a) or "").strip() for a, _, _ in prompt.arguments})
        return types.GetPromptResult(description=prompt.description,
                                     messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))])


def build_server(*, fixed_user=None) -> Server:
    """fixed_user: the --user of the stdio transport; HTTP resolves the token per request."""
    h = _Handlers(fixed_user)
    return Server(
        SERVER_NAME, version="1.0.0", title="StoreMind 门店助手",
        instructions="门店制度问答、经营数据查询和受控写操作（提案 → 有权限的人确认 → 审计）。",
        on_list_tools=h.list_tools, on_call_tool=h.call_tool, on_list_resources=h.list_resources, on_read_resource=h.read_resource,
        on_list_resource_templates=h.list_resource_templates, on_list_prompts=h.list_prompts, on_get_prompt=h.get_prompt,
    )


def _error_result(message: str, denied: bool = False) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)],
        structured_content={"error": message, "denied": denied},
        is_error=True,
    )


async def serve_stdio(user) -> None:
    server = build_server(fixed_user=user)
    async with stdio_server() as (read, write):
        # Between the transport and the server: a line it could not read is answered here.
        to_server, from_transport = anyio.create_memory_object_stream(0)

        async def forward():
            async with to_server:
                async for item in read:
                    if isinstance(item, Exception):
                        await write.send(unreadable_reply(item))
                    elif (reply := malformed_reply(item)) is not None:
                        await write.send(reply)
                    else:
                        await to_server.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(forward)
            await server.run(from_transport, write, server.create_initialization_options())
            tg.cancel_scope.cancel()


def http_app(on_database_outage=None):
    """The Streamable HTTP app (mounted at /mcp by storemind.asgi), token-protected."""

    hosts = [h for h in settings.ALLOWED_HOSTS if h and h != "*"]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection="*" not in settings.ALLOWED_HOSTS,
        allowed_hosts=[*hosts, *(f"{h}:*" for h in hosts)],
        allowed_origins=[*(f"http://{h}:*" for h in hosts), *(f"https://{h}" for h in hosts)],
    )
    app = build_server().streamable_http_app(streamable_http_path="/mcp", stateless_http=True, json_response=True,
                                             transport_security=security)
    return TokenGate(app, on_database_outage)


class TokenGate:
    """ASGI middleware: HTTP requests to the MCP endpoint need a valid API token (401 otherwise).
    A database outage is a JSON-RPC error with 503 and Retry-After, as on every other path
    (it was a plain-text 500 from the server underneath)."""

    def __init__(self, app, on_database_outage=None):
        self.app = app
        self.on_database_outage = on_database_outage  # storemind.asgi: start the embedded database again

    @staticmethod
    async def _reply(send, status: int, body: dict, *headers: tuple[bytes, bytes]) -> None:
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json; charset=utf-8"), *headers]})
        await send({"type": "http.response.body", "body": json.dumps(body, ensure_ascii=False).encode()})

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            address = address_of((scope.get("client") or ("",))[0] or "", headers.get("x-forwarded-for", ""))
            try:
                token = await _sync(token_from_header, headers.get("authorization"), address)
            except Throttled as exc:
                await self._reply(send, 429, {"error": str(exc.detail)}, (b"retry-after", str(exc.wait or 1).encode()))
                return
            except Exception as exc:
                if not is_database_outage(exc):
                    raise
                log.warning("database unavailable at the MCP gate: %s", exc)
                if self.on_database_outage is not None:
                    await _sync(self.on_database_outage)
                await self._reply(send, 503, {"jsonrpc": "2.0", "id": None, "error": {
                    "code": types.INTERNAL_ERROR, "message": DATABASE_DOWN}}, (b"retry-after", str(RETRY_AFTER_SECONDS).encode()))
                return
            if token is None or token.store_id:
                if token is not None:
                    await _sync(_refuse_pos_token, token)
                status, message = (403, "POS 设备令牌只能调用 POS 接口（写订单、库存调整）。") if token is not None else (
                    401, "需要有效的 API 令牌（Authorization: Bearer …）。")
                await self._reply(send, status, {"error": message}, (b"www-authenticate", b'Bearer realm="mcp"'))
                return
        await self.app(scope, receive, send)
