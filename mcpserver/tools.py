"""The MCP tools: thin adapters over the same services and selectors as the REST API, the chat page
and the admin (nothing here reimplements a query or a write), each with its JSON schema."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import Count
from mcp.shared.exceptions import MCPError

from agent.services import THREAD_ID_MAX, answer_for, chat_ask
from knowledge.models import Document
from knowledge.selectors import search
from ops.models import Store
from ops.selectors import catalog_for
from ops.tools import TOOLS as OPS_TOOLS  # the one whitelist of query tools
from ops.tools import run_tool
from workflow.chat import proposal_dict
from workflow.models import Proposal
from workflow.payloads import DESCRIPTION_MAX, DESCRIPTION_MIN, TICKET_CATEGORIES, TICKET_SEVERITIES
from workflow.selectors import proposals_visible
from workflow.services import (
    REJECT_REASON_MAX,
    proposal_amend,
    proposal_confirm,
    proposal_create,
    proposal_reject,
    proposal_withdraw,
)

RESOURCE_PREFIX = "storemind://corpus/"  # a document as an MCP resource: this prefix and its id


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


def _search_knowledge(user, args):
    result = search(args["query"], user=user, k=args.get("k", 5))
    if not result.hits:
        raise ToolFailure(f"知识库里没有找到和「{args['query']}」相关的内容。")
    hits = [{"document": h.document, "section_path": h.section_path, "score": round(h.score, 4), "text": h.text} for h in result.hits]
    text = "\n\n".join(f"[{i}] {h['section_path']}（{h['score']}）\n{h['text']}" for i, h in enumerate(hits, 1))
    return text, {"query": args["query"], "hits": hits}


def _list_documents(user, args):
    docs = Document.objects.visible_to(user).annotate(n=Count("chunks")).order_by("path")
    rows = [{"id": d.id, "title": d.title, "path": d.path, "doc_type": d.doc_type, "version": d.version, "chunks": d.n,
             "uri": f"{RESOURCE_PREFIX}{d.id}"} for d in docs]
    return "\n".join(f"{r['id']}. {r['title']}（{r['doc_type']}，{r['chunks']} 段）" for r in rows), {"documents": rows}


def _ask(user, args):
    result, conv, _ = chat_ask(user=user, query=args["query"], thread_id=args.get("thread_id"), channel="mcp")
    payload = answer_for(user, result, thread_id=conv.thread_id)
    return result.answer, payload


def _list_stores(user, args):
    rows = [{"code": s.code, "name": s.name, "city": s.city, "aliases": s.aliases} for s in Store.objects.for_user(user, "view")]
    return "\n".join(f"{r['code']} {r['name']}（{'、'.join(r['aliases'])}）" for r in rows), {"stores": rows}


def _list_products(user, args):
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
    try:
        result = run_tool(args["tool"], args.get("params") or {}, user=user)
    except ValidationError as exc:
        raise MCPError(types.INVALID_PARAMS, f"参数不正确：{_messages(exc)}") from None
    if not result.rows:
        raise ToolFailure(result.summary)
    return result.summary, result.as_dict()


def _proposal_out(p, user):
    d = proposal_dict(p, user)
    return f"{d['kind_display']} #{d['id']} · {d['store']} · {d['status_display']}", d


def _propose_restock(user, args):
    p, _ = proposal_create(user=user, kind="restock", store=args["store"], payload={"lines": args["lines"]}, source="mcp",
                           idempotency_key=args.get("idempotency_key"))
    return _proposal_out(p, user)


def _propose_ticket(user, args):
    payload = {k: args[k] for k in ("category", "severity", "description", "order", "member") if k in args}
    p, _ = proposal_create(user=user, kind="ticket", store=args["store"], payload=payload, source="mcp",
                           idempotency_key=args.get("idempotency_key"))
    return _proposal_out(p, user)


def _list_pending(user, args):
    qs = proposals_visible(user).filter(status="pending")
    if args.get("kind"):
        qs = qs.filter(kind=args["kind"])
    rows = [proposal_dict(p, user) for p in qs[:100]]
    if not rows:
        raise ToolFailure("你所在门店没有待处理的提案。")
    return "\n".join(f"#{r['id']} {r['kind_display']} · {r['store']} · 可确认：{'是' if r['can_confirm'] else '否'}" for r in rows), {"proposals": rows}


def _confirm(user, args):
    return _proposal_out(proposal_confirm(proposal=args["proposal_id"], user=user), user)


def _reject(user, args):
    return _proposal_out(proposal_reject(proposal=args["proposal_id"], user=user, reason=args["reason"]), user)


def _withdraw(user, args):
    return _proposal_out(proposal_withdraw(proposal=args["proposal_id"], user=user, reason=args.get("reason", "")), user)


def _amend(user, args):
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
