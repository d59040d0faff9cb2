"""From a chat question to a pending proposal (the agent's `action` intent and the
low-stock offer). Nothing here writes business records: proposals wait for a person."""
from __future__ import annotations

import hashlib
import re

from django.core.exceptions import PermissionDenied, ValidationError

from ops.models import Product
from ops.selectors import UnknownStore, find_store_in_text, stores_for_user
from ops.tools import run_tool

from .models import Proposal
from .services import can_confirm, proposal_create

_QTY = re.compile(r"(\d+|[一二两三四五六七八九十百]+)\s*(箱|瓶|杯|份|件|桶)")
_ORDER_REF = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}-[A-Z]{2}-\d{8}-\d{5}(?!\d)")
_MEMBER = re.compile(r"(?<![A-Za-z0-9])M\d{5}(?!\d)", re.IGNORECASE)


def proposal_dict(p: Proposal, user) -> dict:
    allowed, why = can_confirm(user, p) if user is not None else (False, "")
    return {
        "id": p.pk, "kind": p.kind, "kind_display": p.get_kind_display(), "store": p.store.name, "status": p.status,
        "status_display": p.get_status_display(), "payload": p.payload, "source": p.source,
        "proposed_by": p.proposed_by.username, "created_at": p.created_at.isoformat(),
        "can_confirm": allowed and p.status == Proposal.Status.PENDING, "why_not": "" if allowed else why,
    }


def _store_for(state):
    try:
        match = find_store_in_text(state.question)
    except UnknownStore as exc:
        return None, exc.messages[0]
    if match and match.store:
        return match.store, None
    mine = stores_for_user(state.user)
    if len(mine) == 1:
        return mine[0], None
    return None, "请说明是哪家门店，例如「天河店的青岛啤酒帮我补 20 箱」。"


def _products_in(text: str) -> list[Product]:
    found = []
    for product in Product.objects.filter(active=True):
        names = [product.name, *product.aliases]
        if any(n and n in text for n in names):
            found.append(product)
    # 「黑牌单杯」 also contains 「黑牌」: keep the most specific names only.
    return [p for p in found if not any(p is not q and p.name in q.name for q in found)]


def _key(state, kind: str) -> str:
    digest = hashlib.sha256(f"{state.question}|{state.today}".encode()).hexdigest()[:16]
    return f"chat:{state.user.pk}:{kind}:{digest}"


def _outcome(message, proposal=None, tool_result=None, **detail):
    from agent.actions import ActionOutcome

    return ActionOutcome(message=message, proposal=proposal, tool_result=tool_result, detail=detail)


def proposal_from_chat(state):
    from ops.periods import cn_number

    question = state.question
    kind = Proposal.Kind.TICKET if re.search(r"工单|投诉单|客诉单", question) else Proposal.Kind.RESTOCK
    store, problem = _store_for(state)
    if store is None:
        return _outcome(problem, kind=kind)
    try:
        if kind == Proposal.Kind.RESTOCK:
            products = _products_in(question)
            if not products:
                return _outcome("要补哪个商品？请说出商品名，例如「帮我补 20 箱青岛啤酒」。", kind=kind)
            m = _QTY.search(question)
            lines, figures = [], {}
            suggestion = None
            if m is None:
                suggestion = run_tool("low_stock", {"store": store.name}, today=state.today)
                figures = {r["product"]: r for r in suggestion.rows}
            for product in products:
                if m:
                    qty, unit = cn_number(m.group(1)), m.group(2)
                    unit = unit if unit in ("箱", product.unit) else product.unit
                elif product.name in figures:
                    qty, unit = figures[product.name]["suggested_qty"], product.unit
                else:
                    return _outcome(f"请说明{product.name}要补多少（{product.unit}或箱）。", kind=kind)
                lines.append({"sku": product.sku, "quantity": qty, "unit": unit, "reason": f"聊天申请：{question[:80]}"})
            proposal, created = proposal_create(user=state.user, kind=kind, store=store, payload={"lines": lines},
                                                source=Proposal.Source.CHAT, idempotency_key=_key(state, kind))
            listing = "、".join(f"{line['product']} {line['quantity']}{line['unit']}" for line in proposal.payload["lines"])
            message = (f"已为{store.name}生成补货提案 #{proposal.pk}：{listing}。"
                       "提案目前是「待确认」，店长确认之前不会下单。")
        else:
            previous = state.history[-1][0] if state.history else ""
            text = f"{previous} {question}".strip()
            category = ("食品安全" if re.search(r"吃|食物|菜|变质|拉肚子", text) else "酒水品质" if re.search(r"酒|异味|饮料", text)
                        else "服务态度" if "态度" in text else "收银结账" if re.search(r"结账|收银|多收", text)
                        else "会员储值" if re.search(r"会员|储值", text) else "其他")
            severity = "严重" if re.search(r"不舒服|身体不适|就医|医院|受伤|过敏", text) else "较重" if re.search(r"投诉|赔|曝光", text) else "一般"
            payload = {"category": category, "severity": severity, "description": text[:2000]}
            if (ref := _ORDER_REF.search(text)):
                payload["order"] = ref.group(0)
            if (mem := _MEMBER.search(text)):
                payload["member"] = mem.group(0).upper()
            proposal, created = proposal_create(user=state.user, kind=kind, store=store, payload=payload,
                                                source=Proposal.Source.CHAT, idempotency_key=_key(state, kind))
            message = (f"已为{store.name}生成客诉工单提案 #{proposal.pk}（{category}，{severity}）。"
                       "确认后才会建立工单；店员和店长都可以确认。")
    except PermissionDenied as exc:
        return _outcome(f"不能提交这个提案：{exc}", kind=kind, denied=True)
    except ValidationError as exc:
        messages = [m for ms in getattr(exc, "message_dict", {"": exc.messages}).values() for m in ms]
        return _outcome("提案内容有误：" + "；".join(messages), kind=kind)
    return _outcome(message, proposal_dict(proposal, state.user), None, kind=kind, proposal_id=proposal.pk, created=created)


def restock_offer(state):
    """After a low-stock answer for one store: a pending restock proposal with the suggested
    quantities (safety stock + 7 days of sales − on hand)."""
    rows = state.tool_result.rows
    stores = {r["store"] for r in rows}
    if len(stores) != 1:
        return None, ""
    store = next((s for s in stores_for_user(state.user) if s.name in stores), None)
    if store is None:
        return None, ""
    lines = [
        {"sku": r["sku"], "quantity": r["suggested_qty"], "unit": r["unit"],
         "reason": f"在库 {r['on_hand']} < 安全库存 {r['safety_stock']}，近7天日均 {r['velocity_per_day']}"}
        for r in rows if r["suggested_qty"] > 0
    ]
    if not lines:
        return None, ""
    try:
        proposal, _ = proposal_create(user=state.user, kind=Proposal.Kind.RESTOCK, store=store, payload={"lines": lines},
                                      source=Proposal.Source.CHAT, idempotency_key=_key(state, "offer"))
    except (PermissionDenied, ValidationError):
        return None, ""
    return proposal_dict(proposal, state.user), f"已按建议量生成补货提案 #{proposal.pk}（待店长确认，确认前不会下单）。"
