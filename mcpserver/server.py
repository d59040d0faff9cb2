"""StoreMind as an MCP server (official `mcp` SDK), over stdio and Streamable HTTP.

Every tool calls the same services and selectors as the REST API, the chat page and the
admin: nothing here reimplements a query or a write, and every permission and store scope is
the services' own (core.roles, `restrict()`). Identity: stdio runs as one user (`--user`);
HTTP requires a person's API token (a POS device token is refused: it may call POS
endpoints only). Failure semantics:
an unknown tool or arguments that fail validation are JSON-RPC errors; a tool that ran
but found nothing, or was denied, returns a result with isError=true and a clear message.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import jsonschema
import mcp_types as types
from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import close_old_connections, connections
from mcp.server import Server
from mcp.shared.exceptions import MCPError

from agent.services import THREAD_ID_MAX
from ops.tools import TOOLS as OPS_TOOLS  # the one whitelist of query tools
from workflow.services import DESCRIPTION_MAX, DESCRIPTION_MIN, REJECT_REASON_MAX, TICKET_CATEGORIES, TICKET_SEVERITIES

log = logging.getLogger("mcpserver")
SERVER_NAME = "storemind"
RESOURCE_PREFIX = "storemind://corpus/"


class ToolFailure(Exception):
    """The tool ran and failed for a reason the caller should read (isError result)."""


@dataclass(frozen=True)
class ToolDef:
    name: str
    description: str
    schema: dict
    run: Callable[[Any, dict], tuple[str, Any]]


def _messages(exc: ValidationError) -> str:
    if hasattr(exc, "error_dict"):
        return "；".join(f"{k}: {m}" for k, ms in exc.message_dict.items() for m in ms)
    return "；".join(exc.messages)


# --- tools: thin adapters over services/selectors -----------------------------------------


def _search_knowledge(user, args):
    from knowledge.selectors import search

    result = search(args["query"], user=user, k=args.get("k", 5))
    if not result.hits:
        raise ToolFailure(f"知识库里没有找到和「{args['query']}」相关的内容。")
    hits = [{"document": h.document, "section_path": h.section_path, "score": round(h.score, 4), "text": h.text} for h in result.hits]
    text = "\n\n".join(f"[{i}] {h['section_path']}（{h['score']}）\n{h['text']}" for i, h in enumerate(hits, 1))
    return text, {"query": args["query"], "hits": hits}


def _list_documents(user, args):
    from django.db.models import Count

    from knowledge.models import Document
    docs = Document.objects.visible_to(user).annotate(n=Count("chunks")).order_by("path")
    rows = [{"id": d.id, "title": d.title, "path": d.path, "doc_type": d.doc_type, "version": d.version, "chunks": d.n,
             "uri": f"{RESOURCE_PREFIX}{d.id}"} for d in docs]
    return "\n".join(f"{r['id']}. {r['title']}（{r['doc_type']}，{r['chunks']} 段）" for r in rows), {"documents": rows}


def _ask(user, args):
    from agent.services import answer_for, chat_ask

    result, conv, _ = chat_ask(user=user, query=args["query"], thread_id=args.get("thread_id"), channel="mcp")
    payload = answer_for(user, result, thread_id=conv.thread_id)
    return result.answer, payload


def _list_stores(user, args):
    from ops.models import Store

    rows = [{"code": s.code, "name": s.name, "city": s.city, "aliases": s.aliases} for s in Store.objects.for_user(user, "view")]
    return "\n".join(f"{r['code']} {r['name']}（{'、'.join(r['aliases'])}）" for r in rows), {"stores": rows}


def _list_products(user, args):
    from ops.selectors import catalog_for

    rows = [{"sku": p.sku, "name": p.name, "aliases": p.aliases, "category": p.category, "unit": p.unit,
             "case_size": p.case_size, "price": str(p.price), "active": p.active} for p in catalog_for(user)]
    return "\n".join(f"{r['sku']} {r['name']}（{'、'.join(r['aliases'])}）· {r['unit']} · 每箱 {r['case_size']} · ¥{r['price']}"
                     + ("" if r["active"] else " · 停售") for r in rows), {"products": rows}


def _ops_params_help() -> str:
    """Each tool's parameters, from its own schema (a client learned them from errors: that
    period_compare needs baseline, member_balance takes member)."""
    parts = []
    for name, spec in OPS_TOOLS.items():
        props, required = spec.schema.get("properties", {}), set(spec.schema.get("required") or ())
        fields = "、".join(f"{k}{'（必填）' if k in required else ''}" for k in props)
        parts.append(f"{name}：{fields or '无'}")
    return ("按 tool 传参数。" + "；".join(parts) + "。门店用名称、别名或编码（list_stores）；period 用「上周」「本月」「最近7天」"
            "「2026-11-01~2026-11-07」等；商品用名称、别名或编码；member 是会员号（M00012）或 11 位手机号。")


def _query_ops(user, args):
    from ops.tools import run_tool

    try:
        result = run_tool(args["tool"], args.get("params") or {}, user=user)
    except ValidationError as exc:
        raise MCPError(types.INVALID_PARAMS, f"参数不正确：{_messages(exc)}") from None
    if not result.rows:
        raise ToolFailure(result.summary)
    return result.summary, result.as_dict()


def _proposal_out(p, user):
    from workflow.chat import proposal_dict

    d = proposal_dict(p, user)
    return f"{d['kind_display']} #{d['id']} · {d['store']} · {d['status_display']}", d


def _propose_restock(user, args):
    from workflow.services import proposal_create

    p, _ = proposal_create(user=user, kind="restock", store=args["store"], payload={"lines": args["lines"]}, source="mcp",
                           idempotency_key=args.get("idempotency_key"))
    return _proposal_out(p, user)


def _propose_ticket(user, args):
    from workflow.services import proposal_create

    payload = {k: args[k] for k in ("category", "severity", "description", "order", "member") if k in args}
    p, _ = proposal_create(user=user, kind="ticket", store=args["store"], payload=payload, source="mcp",
                           idempotency_key=args.get("idempotency_key"))
    return _proposal_out(p, user)


def _list_pending(user, args):
    from workflow.chat import proposal_dict
    from workflow.services import proposals_visible

    qs = proposals_visible(user).filter(status="pending")
    if args.get("kind"):
        qs = qs.filter(kind=args["kind"])
    rows = [proposal_dict(p, user) for p in qs[:100]]
    if not rows:
        raise ToolFailure("你所在门店没有待处理的提案。")
    return "\n".join(f"#{r['id']} {r['kind_display']} · {r['store']} · 可确认：{'是' if r['can_confirm'] else '否'}" for r in rows), {"proposals": rows}


def _confirm(user, args):
    from workflow.services import proposal_confirm

    return _proposal_out(proposal_confirm(proposal=args["proposal_id"], user=user), user)


def _reject(user, args):
    from workflow.services import proposal_reject

    return _proposal_out(proposal_reject(proposal=args["proposal_id"], user=user, reason=args["reason"]), user)


def _withdraw(user, args):
    from workflow.services import proposal_withdraw

    return _proposal_out(proposal_withdraw(proposal=args["proposal_id"], user=user, reason=args.get("reason", "")), user)


def _amend(user, args):
    from workflow.models import Proposal
    from workflow.services import proposal_amend

    if "lines" in args:
        payload = {"lines": args["lines"]}
    else:  # a ticket: the fields given, over what it says now (the service decides who may change it)
        current = Proposal.objects.filter(pk=args["proposal_id"], kind=Proposal.Kind.TICKET).values_list("payload", flat=True).first() or {}
        payload = {**current, **{k: args[k] for k in ("category", "severity", "description", "order", "member") if k in args}}
    return _proposal_out(proposal_amend(proposal=args["proposal_id"], user=user, payload=payload), user)


_STORE = {"type": "string", "minLength": 1, "description": "门店编码、名称或别名，如 GZ-TH、天河店"}
_RESTOCK_LINES = {"type": "array", "minItems": 1, "maxItems": 50, "items": {"type": "object", "properties": {
    "sku": {"type": "string", "minLength": 1, "description": "商品编码、名称或别名（list_products），如 B001、青岛、科罗娜"},
    "product": {"type": "string", "minLength": 1, "description": "也可以用这个字段写商品名称或别名"},
    "quantity": {"type": "integer", "minimum": 1},
    "unit": {"type": "string", "description": "商品的单位（瓶、杯…）或「箱」，省略时按商品单位"},
    "reason": {"type": "string"}},
    "anyOf": [{"required": ["sku"]}, {"required": ["product"]}], "required": ["quantity"], "additionalProperties": False}}
TOOLS: list[ToolDef] = [
    ToolDef("search_knowledge",
            "在门店制度文档（SOP、规则、产品知识）里做混合检索。返回命中的章节路径、相关度分数和原文片段；店员看不到仅店长可见的文档。",
            {"type": "object", "properties": {"query": {"type": "string", "minLength": 1, "maxLength": 500},
                                              "k": {"type": "integer", "minimum": 1, "maximum": 20}},
             "required": ["query"], "additionalProperties": False}, _search_knowledge),
    ToolDef("list_documents", "列出你能看到的全部制度文档和每篇的段落数。每篇文档也能以 storemind://corpus/{id} 资源直接读取全文。",
            {"type": "object", "properties": {}, "additionalProperties": False}, _list_documents),
    ToolDef("ask",
            "完整的门店助手：路由问题、检索制度和查询经营数据、自检后给出带引用的答案。返回答案、引用、数据行和执行轨迹；传入 thread_id 可以接着上一轮追问。",
            {"type": "object", "properties": {"query": {"type": "string", "minLength": 1, "maxLength": settings.SM_MAX_QUERY_CHARS},
                                              "thread_id": {"type": "string", "maxLength": THREAD_ID_MAX}},
             "required": ["query"], "additionalProperties": False}, _ask),
    ToolDef("list_stores", "列出你能查看的门店的编码、名称和别名。查询经营数据和提交提案时用这些名字指定门店。",
            {"type": "object", "properties": {}, "additionalProperties": False}, _list_stores),
    ToolDef("list_products", "列出商品目录：编码、名称、别名、单位、每箱数量、标价、是否在售。补货和查销量时可以用编码、名称或别名指定商品。",
            {"type": "object", "properties": {}, "additionalProperties": False}, _list_products),
    ToolDef("query_ops",
            f"运行一个白名单经营数据工具（{'、'.join(OPS_TOOLS)}），参数先校验再查询，从不执行自由 SQL。返回数据行、一句话摘要和实际使用的参数。",
            {"type": "object", "properties": {
                "tool": {"type": "string", "enum": list(OPS_TOOLS)},
                "params": {"type": "object", "description": _ops_params_help()}},
             "required": ["tool"], "additionalProperties": False}, _query_ops),
    ToolDef("propose_restock",
            "为一家门店提交补货提案（只是提案，不会下单）。需要店长确认后才会生成补货单；同一个 idempotency_key 重复提交返回同一个提案。",
            {"type": "object", "properties": {
                "store": _STORE,
                "lines": _RESTOCK_LINES,
                "idempotency_key": {"type": "string", "maxLength": 128}},
             "required": ["store", "lines"], "additionalProperties": False}, _propose_restock),
    ToolDef("propose_ticket",
            "为一家门店提交客诉工单提案，写明类别、严重程度和描述，可关联订单号或会员号。店员和店长都可以确认，确认后才建立工单。",
            {"type": "object", "properties": {
                "store": _STORE,
                "category": {"type": "string", "enum": TICKET_CATEGORIES},
                "severity": {"type": "string", "enum": TICKET_SEVERITIES},
                "description": {"type": "string", "minLength": DESCRIPTION_MIN, "maxLength": DESCRIPTION_MAX},
                "order": {"type": "string"}, "member": {"type": "string"}, "idempotency_key": {"type": "string", "maxLength": 128}},
             "required": ["store", "category", "severity", "description"], "additionalProperties": False}, _propose_ticket),
    ToolDef("list_pending", "列出你所在门店待确认的提案，并说明你能否确认每一个。",
            {"type": "object", "properties": {"kind": {"type": "string", "enum": ["restock", "ticket"]}}, "additionalProperties": False},
            _list_pending),
    ToolDef("confirm_proposal",
            "确认一个提案并执行写入（补货单或工单）。补货必须由该门店的店长确认；越权会被拒绝并记入审计日志；重复确认返回第一次的结果。",
            {"type": "object", "properties": {"proposal_id": {"type": "integer", "minimum": 1}}, "required": ["proposal_id"],
             "additionalProperties": False}, _confirm),
    ToolDef("reject_proposal", "拒绝一个待确认的提案，必须写明原因。权限与确认相同，并记入审计日志。",
            {"type": "object", "properties": {"proposal_id": {"type": "integer", "minimum": 1},
                                              "reason": {"type": "string", "minLength": 1, "maxLength": REJECT_REASON_MAX}},
             "required": ["proposal_id", "reason"], "additionalProperties": False}, _reject),
    ToolDef("withdraw_proposal", "撤回自己提交的、仍待确认的提案（数量写错了、货已经到了）。只有提交人可以撤回；记入审计日志。",
            {"type": "object", "properties": {"proposal_id": {"type": "integer", "minimum": 1},
                                              "reason": {"type": "string", "maxLength": REJECT_REASON_MAX}},
             "required": ["proposal_id"], "additionalProperties": False}, _withdraw),
    ToolDef("amend_proposal", "修改仍待确认的提案：补货给出新的 lines（整份替换，规则同 propose_restock），工单给出要改的字段。"
                              "提交人或有权确认的人（如店长确认前改数量）可以修改；改前改后记入审计日志。",
            {"type": "object", "properties": {
                "proposal_id": {"type": "integer", "minimum": 1},
                "lines": _RESTOCK_LINES,
                "category": {"type": "string", "enum": TICKET_CATEGORIES}, "severity": {"type": "string", "enum": TICKET_SEVERITIES},
                "description": {"type": "string", "minLength": DESCRIPTION_MIN, "maxLength": DESCRIPTION_MAX},
                "order": {"type": "string"}, "member": {"type": "string"}},
             "required": ["proposal_id"], "additionalProperties": False}, _amend),
]
TOOLS_BY_NAME = {t.name: t for t in TOOLS}


# --- identity -----------------------------------------------------------------------------


def token_from_header(header: str | None, address: str = "-"):
    """The API token of an Authorization header; None when missing or invalid. Too many wrong
    tokens from one address raise rest_framework's Throttled, as over REST."""
    from rest_framework.exceptions import AuthenticationFailed

    from ops.authentication import authenticate_key

    if not header or not header.lower().startswith(("bearer ", "token ")):
        return None
    try:
        return authenticate_key(header.split(None, 1)[1].strip(), address=address)[1]
    except AuthenticationFailed:
        return None


def user_from_token(header: str | None, address: str = "-"):
    """The user of a person's API token; None when missing, invalid or a POS device token."""
    token = token_from_header(header, address)
    return token.user if token is not None and not token.store_id else None


def _refuse_pos_token(token) -> None:
    from core.audit import audit_denial

    audit_denial(actor=token.user, attempt="mcp over http", reason="POS token on a non-POS endpoint", store=token.store, channel="mcp")


def _reload_user(pk: int):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.filter(pk=pk, is_active=True).first()


def _may_use_assistant(user, tool_name: str) -> bool:
    """The same gate as the chat: a store role (checked as a permission); a refusal is audited."""
    from agent.services import assistant_require

    try:
        assistant_require(user)
    except PermissionDenied:
        return False
    return True


def dispatch(user, name: str, args: dict) -> types.CallToolResult:
    """Run one validated tool call for `user` (synchronously, in the caller's connection).
    Both transports end here; tests call it directly for the whole permission matrix."""
    from core.throttling import throttle_person
    from ops.validation import find_bad_text

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
    except ValidationError as exc:
        raise MCPError(types.INVALID_PARAMS, f"{name} 的参数不正确：{_messages(exc)}") from None
    except (ToolFailure, PermissionDenied) as exc:
        return _error_result(str(exc) or "没有权限。", denied=isinstance(exc, PermissionDenied))
    except Exception as exc:
        from core.errors import Conflict, NotFound
        from knowledge.selectors import IndexNotReady

        if isinstance(exc, (Conflict, NotFound)):
            return _error_result(exc.message)
        if isinstance(exc, IndexNotReady):
            return _error_result(str(exc))
        from core.errors import DATABASE_DOWN, is_database_outage

        if is_database_outage(exc):  # the client retries later, as a 503 says elsewhere
            raise MCPError(types.INTERNAL_ERROR, DATABASE_DOWN) from None
        log.exception("tool %s failed", name)
        return _error_result(f"{name} 执行出错：{type(exc).__name__}")
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured if isinstance(structured, dict) else {"result": structured},
    )


def _sync(fn, *args):
    """Run Django ORM work in a worker thread with fresh connections."""

    def call():
        import uuid

        from core.audit import request_meta

        close_old_connections()
        meta = request_meta.set({"request_id": uuid.uuid4().hex, "channel": "mcp"})
        try:
            return fn(*args)
        finally:
            request_meta.reset(meta)
            connections.close_all()

    return anyio.to_thread.run_sync(call)


# --- prompts: the three things people ask, worded so a client's model uses the tools --------


@dataclass(frozen=True)
class PromptDef:
    name: str
    title: str
    description: str
    arguments: tuple[tuple[str, str, bool], ...]  # (name, description, required)
    template: str

    def render(self, args: dict[str, str]) -> str:
        return self.template.format(**{k: v or "（未指定）" for k, v in args.items()})


PROMPTS = (
    PromptDef("rule_question", "制度问题", "按门店制度文档回答一个问题，每句话注明出处。",
              (("question", "要问的制度问题，如「客人说酒有异味怎么办」", True),),
              "请用 StoreMind 的 ask 工具（或先用 search_knowledge 查找）回答这个门店制度问题：{question}\n"
              "只根据检索到的制度章节回答，每句话后注明出处（《文档》› 章节）；制度里没有的，直接说没有，不要编。"),
    PromptDef("data_question", "经营数据", "用白名单数据工具查询一家门店或全部门店的经营数据。",
              (("question", "要查的经营问题，如「上周卖了多少」「哪天生意最好」", True),
               ("store", "门店名称、编码或别名（list_stores）；省略时是你能查看的全部门店", False)),
              "请用 StoreMind 的 query_ops 工具回答这个经营数据问题：{question}\n门店：{store}\n"
              "先用 list_stores 确认门店名，选一个合适的工具（store_sales、daily_trend、top_products …），"
              "按工具返回的数字作答，不要估算。"),
    PromptDef("restock", "补货提案", "为一家门店提交补货提案（店长确认之前不会下单）。",
              (("store", "门店名称、编码或别名", True), ("product", "商品名称、别名或编码（list_products）", True),
               ("quantity", "数量，如 20 或「2箱」", False)),
              "请为门店「{store}」的商品「{product}」准备补货提案，数量：{quantity}。\n"
              "先用 query_ops 的 product_stock 看在库、安全库存和建议补货量；数量未指定时用建议量。"
              "然后用 propose_restock 提交（只是提案，要店长确认才会下单），并把提案编号和状态告诉我。"),
)
PROMPTS_BY_NAME = {p.name: p for p in PROMPTS}


# --- the server -----------------------------------------------------------------------------


def build_server(*, fixed_user=None) -> Server:
    """fixed_user: the --user of the stdio transport; HTTP resolves the token per request."""

    async def identity(ctx):
        if fixed_user is not None:
            # Read again per call: a role or store taken away (or the account deactivated)
            # while a long stdio session runs takes effect at once, not at the next start.
            user = await _sync(_reload_user, fixed_user.pk)
            if user is None:
                raise MCPError(types.INVALID_REQUEST, "这个账号已停用。")
            return user
        request = getattr(ctx, "request", None)
        header = request.headers.get("authorization") if request is not None else None
        user = await _sync(user_from_token, header)
        if user is None:
            raise MCPError(types.INVALID_REQUEST, "需要有效的 API 令牌（Authorization: Bearer …）。")
        return user

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=[
            types.Tool(name=t.name, title=t.name, description=t.description, input_schema=t.schema) for t in TOOLS
        ])

    async def call_tool(ctx, params):
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
        user = await identity(ctx)
        return await _sync(dispatch, user, params.name, args)

    async def permitted(ctx, what: str):
        user = await identity(ctx)
        if not await _sync(_may_use_assistant, user, what):
            raise MCPError(types.INVALID_REQUEST, "这个账号没有店员、店长或总部角色，不能读取 StoreMind 的文档。")
        return user

    async def list_resources(ctx, params):
        user = await permitted(ctx, "resources/list")
        text, data = await _sync(_list_documents, user, {})
        return types.ListResourcesResult(resources=[
            types.Resource(uri=d["uri"], name=d["path"], title=d["title"], mime_type="text/markdown",
                           description=f"{d['doc_type']} · 版本 {d['version']} · {d['chunks']} 段")
            for d in data["documents"]
        ])

    async def read_resource(ctx, params):
        user = await permitted(ctx, "resources/read")
        uri = str(params.uri)
        if not uri.startswith(RESOURCE_PREFIX) or not uri[len(RESOURCE_PREFIX):].isdigit():
            raise MCPError(types.INVALID_PARAMS, f"不认识的资源：{uri}")

        def load():
            from knowledge.models import Document
            return Document.objects.visible_to(user).filter(pk=int(uri[len(RESOURCE_PREFIX):])).first()

        doc = await _sync(load)
        if doc is None:  # missing and not-allowed look the same: no existence leak
            raise MCPError(types.INVALID_PARAMS, f"没有这个文档，或你无权查看：{uri}")
        from knowledge.chunking import without_aliases

        # The document as its readers see it: the hand-written 常见问法 lines are the index's, not the rules.
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown",
                                                                             text=without_aliases(doc.body))])

    async def list_resource_templates(ctx, params):
        await permitted(ctx, "resources/templates/list")
        return types.ListResourceTemplatesResult(resource_templates=[types.ResourceTemplate(
            name="document", title="制度文档", uri_template=RESOURCE_PREFIX + "{doc_id}", mime_type="text/markdown",
            description="一篇制度文档的全文（doc_id 见 list_documents 或 resources/list；只能读你有权查看的文档）")])

    async def list_prompts(ctx, params):
        await identity(ctx)
        return types.ListPromptsResult(prompts=[
            types.Prompt(name=p.name, title=p.title, description=p.description,
                         arguments=[types.PromptArgument(name=a, description=d, required=r) for a, d, r in p.arguments])
            for p in PROMPTS])

    async def get_prompt(ctx, params):
        await identity(ctx)
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

    return Server(
        SERVER_NAME, version="1.0.0", title="StoreMind 门店助手",
        instructions="门店制度问答、经营数据查询和受控写操作（提案 → 有权限的人确认 → 审计）。",
        on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources, on_read_resource=read_resource,
        on_list_resource_templates=list_resource_templates, on_list_prompts=list_prompts, on_get_prompt=get_prompt,
    )


def schema_error_text(exc) -> str:
    """A schema violation in Chinese, never echoing the value (a 100,000-character query came
    back whole inside jsonschema's English message)."""
    rule, limit = exc.validator, exc.validator_value
    kinds = {"integer": "整数", "number": "数字", "string": "字符串", "object": "对象", "array": "数组", "boolean": "布尔值", "null": "空值"}
    unknown = sorted(set(exc.instance or {}) - set(exc.schema.get("properties", {}))) if rule == "additionalProperties" else []
    texts = {
        "type": lambda: "应为" + "或".join(kinds.get(t, t) for t in (limit if isinstance(limit, list) else [limit])),
        "required": lambda: "缺少必填参数 " + "、".join(k for k in limit if k not in (exc.instance or {})),
        # The names as sent, each cut short: a 100,000-character key must not come back whole.
        "additionalProperties": lambda: "不认识的参数 " + "、".join(k[:20] + ("…" if len(k) > 20 else "") for k in unknown[:5])
                                        + (f" 等 {len(unknown)} 个" if len(unknown) > 5 else ""),
        "minLength": lambda: f"至少 {limit} 个字符", "maxLength": lambda: f"最多 {limit} 个字符",
        "minimum": lambda: f"不能小于 {limit}", "maximum": lambda: f"不能大于 {limit}",
        "minItems": lambda: f"至少 {limit} 项", "maxItems": lambda: f"最多 {limit} 项",
        "enum": lambda: "只能是 " + "、".join(str(v) for v in limit), "pattern": lambda: "格式不对",
    }
    return texts[rule]() if rule in texts else "不符合参数要求"


def integers_as_int(value, schema: dict):
    """JSON Schema counts 2.0 as an integer; the tools slice and count with it (k=2.0 was a
    TypeError inside search). Nested too: a restock line's quantity 2.0 was refused later."""
    kind = schema.get("type")
    if kind == "integer" and isinstance(value, float):
        return int(value)
    if kind == "object" and isinstance(value, dict):
        props = schema.get("properties", {})
        return {k: integers_as_int(v, props[k]) if k in props else v for k, v in value.items()}
    if kind == "array" and isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [integers_as_int(v, schema["items"]) for v in value]
    return value


def _error_result(message: str, denied: bool = False) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)],
        structured_content={"error": message, "denied": denied},
        is_error=True,
    )


def unreadable_reply(exc: Exception):
    """The JSON-RPC error for a line the transport could not read (the SDK drops it silently,
    and the client waits for ever): -32700 for broken JSON, -32600 for JSON that is no request,
    and for valid JSON with a string PostgreSQL cannot store (a lone surrogate) -32602 under the
    request's own id."""
    import mcp.types as wire
    from mcp.shared.message import SessionMessage

    errors = exc.errors() if hasattr(exc, "errors") else []
    kind, line = (errors[0].get("type"), errors[0].get("input")) if errors else (None, None)
    code, message, request_id = wire.INVALID_REQUEST, "不是有效的 JSON-RPC 请求。", None
    if kind == "json_invalid":
        code, message = wire.PARSE_ERROR, "无法解析的 JSON。"
        try:
            parsed = json.loads(line) if isinstance(line, str) else None
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("id"), (int, str)) and not isinstance(parsed.get("id"), bool):
            code, message, request_id = wire.INVALID_PARAMS, "包含无效的 Unicode 字符（单独的代理项，如 \\ud800）。", parsed["id"]
    return SessionMessage(wire.JSONRPCError(jsonrpc="2.0", id=request_id, error=wire.ErrorData(code=code, message=message)))


def malformed_reply(item):
    """A request the SDK read as something else: with an id that is no string or integer
    (null, an object, 1.5) it becomes a notification and gets no reply, so the client waits for
    ever; a notification never names a request's method, so that is answered -32600. Bytes that
    were no UTF-8 arrive as U+FFFD and were answered as a question: -32602 under their id."""
    import mcp.types as wire
    from mcp.shared.message import SessionMessage

    message = item.message
    if isinstance(message, wire.JSONRPCNotification) and not message.method.startswith("notifications/"):
        return SessionMessage(wire.JSONRPCError(jsonrpc="2.0", id=None, error=wire.ErrorData(
            code=wire.INVALID_REQUEST, message="请求的 id 必须是字符串或整数（通知不能调用方法）。")))
    if isinstance(message, wire.JSONRPCRequest) and "\ufffd" in json.dumps(message.params or {}, ensure_ascii=False):
        return SessionMessage(wire.JSONRPCError(jsonrpc="2.0", id=message.id, error=wire.ErrorData(
            code=wire.INVALID_PARAMS, message="请求里有无法解码的字节（不是有效的 UTF-8）。")))
    return None


async def serve_stdio(user) -> None:
    from mcp.server.stdio import stdio_server

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
    from mcp.server.transport_security import TransportSecuritySettings

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
            from rest_framework.exceptions import Throttled

            from core.errors import DATABASE_DOWN, RETRY_AFTER_SECONDS, is_database_outage
            from core.ratelimit import address_of

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
