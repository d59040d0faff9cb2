"""Nodes that answer before the router does, each for one narrow kind of message: 「确认提案7」
(decide_in_chat), 「查看审计记录」 (point_to_page), 「我的补货申请批了吗」 (proposal_status).
Each sets the route it took, so the trace says which one answered."""
from __future__ import annotations

import re

from ops.selectors import find_product_in_text
from workflow import presenters

from .. import vocabulary as vocab
from ..router import ACTION, Route
from .state import AgentState

STATUS_MAX_CHARS = 40  # a question about a proposal's status is short; longer ones ask a rule
PAGE_REQUEST_MAX_CHARS = 24  # 「查看审计记录」: a request to see a page, not a question


def decide_in_chat(state: AgentState) -> bool:
    """「确认提案7」: a proposal is confirmed or rejected by a person on its card (the chat page,
    /proposals/, the admin), never by the assistant; say where, instead of refusing."""
    if vocab.ASKS_WHERE_IT_STANDS.search(state.question):
        return False
    m = vocab.DECIDE_PROPOSAL.search(state.question)
    after = None if m else vocab.DECIDE_PROPOSAL_AFTER.search(state.question)
    # 「确认提案」 right after the proposal was made in this thread was declined as unrelated to the store.
    this = None if m or after else (state.previous.get("proposal_id") and vocab.DECIDE_THIS.fullmatch(state.question))
    if not (m or after or this):
        return False
    pk = next(g for g in m.groups()[1:] if g) if m else after.group(1) if after else state.previous["proposal_id"]
    state.decided_on = str(pk)
    state.route = Route(ACTION, f"确认或驳回提案 #{pk}：在提案卡片上完成，助手不代为决定")
    from workflow.selectors import proposal_for_status

    if state.user is not None and str(pk).isdigit() and proposal_for_status(state.user, int(pk)) is None:
        # 「确认提案99999」 sent people to /proposals/ to look for a proposal that does not exist.
        state.answer = presenters.proposal_number_answer(state.user, int(pk), None)
    else:
        state.answer = (f"提案 #{pk} 要由有权限的人在提案卡片上点「确认」或「拒绝」：打开顶部菜单的「操作提案」页面（/proposals/）找到 #{pk}；"
                        "店长也可以在后台的「操作提案」里处理。我不会替任何人确认或拒绝。")
    with state.trace.step("route") as detail:
        detail.update(state.route.as_dict())
    return True


def proposal_status(state: AgentState) -> bool:
    """「我提的补货申请批了没」「有哪些待我确认的补货申请」: the proposals themselves (the asker's
    stores only), not a rule about proposals."""
    question = state.question.strip()
    number = vocab.PROPOSAL_NUMBER.search(question)
    if number and len(question) <= STATUS_MAX_CHARS and state.user is not None and not vocab.ASKS_HOW.search(question):
        from workflow.selectors import proposal_for_status

        pk = int(next(g for g in number.groups() if g))
        state.route = Route(ACTION, f"查提案 #{pk}")  # 「提案6是什么」 was declined as unrelated to the store
        state.answer = presenters.proposal_number_answer(state.user, pk, proposal_for_status(state.user, pk))
        with state.trace.step("route") as detail:
            detail.update(state.route.as_dict())
        return True
    awaiting = bool(vocab.AWAITING_ME.search(question))
    # 「科罗娜为什么被拒了」: a product named with 被拒 asks about its restock proposal.
    product_refused = bool(vocab.WHY_REFUSED.search(question)) and find_product_in_text(question) is not None
    if len(question) > STATUS_MAX_CHARS or not (awaiting or product_refused or vocab.PROPOSAL_STATUS.search(question)) or state.user is None \
            or vocab.ASKS_HOW.search(question):  # 「补货申请被拒了怎么办」 asks for the rule
        return False
    from workflow.selectors import proposals_for_status

    state.route = Route(ACTION, "查提案进度：" + ("待我确认的提案" if awaiting else "我提交的提案"))
    kind = "restock" if "补货" in question or product_refused else "ticket" if re.search(r"工单|客诉|投诉", question) else None
    items, total = proposals_for_status(state.user, awaiting_me=awaiting, kind=kind)
    state.answer = presenters.proposals_status_answer(state.user, items, total, awaiting_me=awaiting)
    with state.trace.step("route") as detail:
        detail.update(state.route.as_dict())
    return True


def point_to_page(state: AgentState) -> bool:
    """「查看审计记录」: a short request to see a page of the product gets its address (the page
    itself checks who may open it)."""
    question = state.question.strip()
    if len(question) > PAGE_REQUEST_MAX_CHARS or not vocab.SHOW_ME.search(question):
        return False
    page = next(((name, url, also) for pattern, name, url, also in vocab.PAGES if pattern.search(question)), None)
    if page is None:
        return False
    name, url, also = page
    state.route = Route(ACTION, f"找页面：{name}（{url}）")
    state.answer = f"「{name}」在 {url}（{also}）。能看到哪些内容取决于你的角色和门店。"
    with state.trace.step("route") as detail:
        detail.update(state.route.as_dict())
    return True
