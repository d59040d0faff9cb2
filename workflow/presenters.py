"""Proposals as a person reads them in a chat answer: where each stands, and where to see and
(for those who may) decide them — the 「操作提案」 page."""
from __future__ import annotations

from django.urls import reverse

from core.localtime import local_time

from .models import CONFIRM_PERMS, Proposal


def proposals_status_answer(user, items: list, total: int, *, awaiting_me: bool) -> str:
    """Where each proposal stands, in one line each, and where to see (and, for those who may,
    decide) them: the 「操作提案」 page."""

    page = reverse("workflow:proposals")
    if not items:
        return (f"你能确认的门店里，目前没有待确认的提案（「操作提案」页面：{page}）。" if awaiting_me
                else "你还没有提交过提案。要补货可以说「帮我补两箱青岛」。")
    if awaiting_me:
        head = f"待你确认的提案共 {total} 个" + (f"，最近 {len(items)} 个：" if total > len(items) else "：")
    else:
        head = f"你最近提交的 {len(items)} 个提案："

    lines = [f"- #{p.pk} {p.get_kind_display()} · {p.store.name} · {p.content_text()} · {_stands(p)}" for p in items]
    return "\n".join([head, *lines, _where_to_decide(user, items, page)])


def proposal_number_answer(user, pk: int, proposal) -> str:
    """「提案6是什么」: that proposal in one line, or that there is none the asker may see."""
    page = reverse("workflow:proposals")
    if proposal is None:
        return f"没有提案 #{pk}，或者它不属于你的门店（「操作提案」页面：{page}）。"
    p = proposal
    by = p.proposed_by.username if p.proposed_by else "—"
    return "\n".join([f"提案 #{p.pk}：{p.get_kind_display()} · {p.store.name} · {p.content_text()}（{by} 提交）· {_stands(p)}",
                      _where_to_decide(user, [p], page)])


def _stands(p) -> str:
    when = local_time(p.decided_at, p.store).strftime("%m-%d %H:%M") if p.decided_at else ""
    who = p.decided_by.username if p.decided_by else "系统"
    if p.status == Proposal.Status.PENDING:
        return "待确认"
    if p.status == Proposal.Status.REJECTED:
        return f"已拒绝（{who}，{when}）：{p.decision_note}"
    return f"{p.get_status_display()}（{who}，{when}）"


def _where_to_decide(user, items: list, page: str) -> str:
    decides = any(p.status == "pending" and user.has_perm(CONFIRM_PERMS[p.kind]) for p in items)  # staff confirm tickets, not restocks
    return f"详情和确认、拒绝都在「操作提案」页面（{page}）。" if decides else f"详情在「操作提案」页面（{page}）。"
