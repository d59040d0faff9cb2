"""The requests the router hands to a handler of their own (Route.handler) instead of a question
to answer from the rules or the data: 「确认提案7」 (decide_in_chat), 「查看审计记录」
(point_to_page), 「我的补货申请批了吗」 (proposal_status), 「算了」 with nothing waiting (nothing_pending). The router's rule that read the request
is in the trace (Route.rule); the handler answers from what that rule found (Route.target)."""
from __future__ import annotations

from workflow import presenters
from workflow.selectors import proposal_for_status, proposals_for_status

from .state import AgentState


def decide_in_chat(state: AgentState) -> None:
    """A proposal is decided by a person on its card, never by the assistant: say where."""
    pk = state.route.target["proposal"]
    state.decided_on = pk
    if state.user is not None and pk.isdigit() and proposal_for_status(state.user, int(pk)) is None:
        # 「确认提案99999」 sent people to /proposals/ to look for a proposal that does not exist.
        state.answer = presenters.proposal_number_answer(state.user, int(pk), None)
    else:
        state.answer = (f"提案 #{pk} 要由有权限的人在提案卡片上点「确认」或「拒绝」：打开顶部菜单的「操作提案」页面（/proposals/）找到 #{pk}；"
                        "店长也可以在后台的「操作提案」里处理。我不会替任何人确认或拒绝。")


def withdraw_in_chat(state: AgentState) -> None:
    """「撤回刚才那个工单」: the proposer's own pending proposal, withdrawn through the audited
    service behind the card's 撤回; anyone else is told who may, and how."""
    from django.core.exceptions import PermissionDenied, ValidationError

    from core.errors import Conflict, NotFound, message_text
    from workflow.models import Proposal
    from workflow.services import proposal_withdraw

    pk = int(state.route.target["proposal"])
    state.decided_on = str(pk)
    proposal = proposal_for_status(state.user, pk) if state.user is not None else None
    if proposal is None:
        state.answer = presenters.proposal_number_answer(state.user, pk, None)
        return
    what = "补货" if proposal.kind == Proposal.Kind.RESTOCK else "客诉工单"
    if proposal.status == Proposal.Status.WITHDRAWN:
        state.answer = f"{what}提案 #{pk} 已经撤回了。"
        return
    try:  # the service says who may, and audits a refusal as the card's 撤回 does
        proposal_withdraw(proposal=proposal, user=state.user, reason="在对话里撤回")
    except (PermissionDenied, ValidationError, Conflict, NotFound) as exc:
        state.answer = f"没能撤回{what}提案 #{pk}：{message_text(exc)}"
    else:
        state.answer = f"已撤回{what}提案 #{pk}，改动记入审计，它不会再等待确认。要重新提交，直接再说一次就行。"


def proposal_status(state: AgentState) -> None:
    """One proposal by its number, or the asker's proposals (those awaiting them, or theirs)."""
    target = state.route.target
    if "proposal" in target:
        pk = target["proposal"]
        state.answer = presenters.proposal_number_answer(state.user, pk, proposal_for_status(state.user, pk))
        return
    items, total = proposals_for_status(state.user, awaiting_me=target["awaiting_me"], kind=target["kind"])
    state.answer = presenters.proposals_status_answer(state.user, items, total, awaiting_me=target["awaiting_me"])


def point_to_page(state: AgentState) -> None:
    """A page's address (the page itself checks who may open it)."""
    page = state.route.target
    state.answer = f"「{page['name']}」在 {page['url']}（{page['also']}）。能看到哪些内容取决于你的角色和门店。"


def nothing_pending(state: AgentState) -> None:
    """「算了」「五箱吧」 with no restock or ticket waiting for a reply: say so, and how to start one;
    a quantity right after the chat named a pending restock changes that proposal (slots.amend_quantity_in_chat)."""
    target = state.route.target
    # 「改成3箱」 under 「科罗娜已在待确认的补货提案 #1 里」: that proposal, not a new request.
    if not target["cancel"] and target.get("proposal") and state.user is not None:
        from ..slots import amend_quantity_in_chat

        if (amended := amend_quantity_in_chat(user=state.user, proposal_id=target["proposal"], said=state.question)):
            state.answer = amended
            return
    head = "现在没有进行中的补货申请或工单，不需要取消。" if target["cancel"] else "现在没有在等你回复的补货申请或工单。"
    made = f"提案 #{target['proposal']} 的进度在顶部菜单的「操作提案」页面（/proposals/）。" if target.get("proposal") else ""
    state.answer = head + made + "要补货可以直接说「补两箱科罗娜」，要登记客诉可以说「帮我建个投诉工单：8号桌客人说酒有异味」。"


SMALL_TALK_REPLIES = {
    # Examples any chain's SOPs and stores can answer (not the bundled bar's 「酒有异味」 or 天河店).
    "greeting": "你好，我在。可以问我门店制度（比如「客人投诉怎么处理」），也可以查经营数据（比如「上周卖了多少」）。",
    "thanks": "不客气，有问题随时问我。",
    "ack": "好的。还有别的要问的，直接说就行。",
    "bye": "好的，辛苦了，有需要随时找我。",
    "laugh": "😄 有问题随时问我。",
    "about": ("我是门店运营助手：可以按门店制度回答怎么处理（比如「客人投诉怎么处理」「开店前要做哪些检查」），"
              "查经营数据（比如「上周卖了多少」「哪个商品卖得最好」），也可以帮你提补货申请、登记客诉工单，由有权限的人确认后生效。"),
    "symbols": "没看懂这条消息。可以直接问门店制度或经营数据，比如「客人投诉怎么处理」「今天卖了多少」。",
}


def small_talk(state: AgentState) -> None:
    """「你好」「谢谢」「好的」: a line back, not a search of the SOPs."""
    state.answer = SMALL_TALK_REPLIES[state.route.target["kind"]]


def repeat_step(state: AgentState) -> None:
    """「第二步是啥」: that item of the previous answer, with the source it cited."""
    n = state.route.target["n"]
    steps = state.previous.get("steps") or []
    step = next((s for s in steps if s["n"] == n), None)
    if step is None:
        # 「第二步是啥」 after an answer with no numbered lines was searched and answered from an unrelated list.
        state.answer = (f"上一条回答只列了 {len(steps)} 条，没有第 {n} 条。" if steps else
                        f"上一条回答没有分步骤列出，所以没有「第 {n} 步」。可以点开上面引用的来源看完整规定，或者把想问的那一步直接说出来。")
        return
    state.answer = f"第 {n} 条：{step['line']}"
    state.sources.citations = [c for c in state.previous.get("step_sources") or [] if c["ref"] in step["refs"]]


def ticket_details(state: AgentState) -> None:
    """More of the complaint just proposed: added to that ticket's description (audited)."""
    from ..slots import add_ticket_details_in_chat

    pk = state.route.target["proposal"]
    state.decided_on = str(pk)
    state.answer = add_ticket_details_in_chat(user=state.user, proposal_id=pk, said=state.question)


def ticket_change(state: AgentState) -> None:
    """「严重程度改成严重」: that field of the complaint just proposed (audited)."""
    from ..slots import change_ticket_in_chat

    pk = state.route.target["proposal"]
    state.decided_on = str(pk)
    state.answer = change_ticket_in_chat(user=state.user, proposal_id=pk, value=state.route.target["value"])


def restock_advice(state: AgentState) -> None:
    """「要补吗」 right after a stock answer: for each product shown, below its safety stock or not,
    from the same tool run again (the figures may have moved), and how to ask for a restock."""
    from django.core.exceptions import PermissionDenied, ValidationError

    from core.errors import message_text
    from ops.tools import run_tool

    target = state.route.target
    try:
        rows = run_tool(target["tool"], target["params"], user=state.user, today=state.today).rows
    except (PermissionDenied, ValidationError) as exc:
        state.answer = f"查不到刚才的库存：{message_text(exc)}"
        return
    lines = []
    for r in rows[:5]:
        head = f"{r['store']} {r['product']}在库 {r['on_hand']}{r['unit']}"
        if r["on_hand"] < r["safety_stock"]:
            lines.append(f"{head}，低于安全库存 {r['safety_stock']}，建议补 {r['suggested_qty']}{r['unit']}（安全库存 + 近7天销量 − 在库）。")
        else:
            cover = f"，约够卖 {r['days_of_cover']} 天" if r.get("days_of_cover") is not None else ""
            lines.append(f"{head}，不低于安全库存 {r['safety_stock']}{cover}，现在不用补。")
    if not lines:
        state.answer = "刚才没有查到需要补的商品。"
        return
    offer = state.previous.get("pending_action")
    if offer and offer.get("offer_lines"):  # the offer still stands for the next 「好」
        state.pending_action = offer
        state.answer = "\n".join(lines) + "\n要我按建议量生成补货提案吗？回复「好」生成，店长确认之前不会下单。"
        return
    name = rows[0]["product"]
    state.answer = "\n".join(lines) + f"\n要补的话直接说，比如「补{name} 2箱」，店长确认之前不会下单。"


HANDLERS = {"withdraw_in_chat": withdraw_in_chat, "restock_advice": restock_advice, "ticket_change": ticket_change, "small_talk": small_talk, "repeat_step": repeat_step, "ticket_details": ticket_details, "decide_in_chat": decide_in_chat, "proposal_status": proposal_status, "point_to_page": point_to_page,
            "nothing_pending": nothing_pending}


def answer_request(state: AgentState) -> bool:
    """Answer the request the router read, if it read one (True: the turn is done)."""
    handler = HANDLERS.get(state.route.handler) if state.route else None
    if handler is None:
        return False
    handler(state)
    return True
