"""Node refuse, and what a refusal says: what the SOPs do not cover, where the nearest thing
they cover is, or who answers a topic they leave to someone else."""
from __future__ import annotations

from ops.selectors import find_product_in_text

from .. import vocabulary as vocab
from ..router import BOTH, DATA, POLICY
from .state import AgentState

REFUSAL_TEXT = (
    "抱歉，现有的门店制度文档里没有能回答这个问题的内容，我不能凭空作答。"
    "请咨询店长或区域经理；这个问题已记录到\"未解答问题\"，管理人员会据此补充制度。"
)

# Who answers what the SOPs do not, by who is asking: a store manager was told to ask the store
# manager. Head office publishes the SOPs, so it is told where the gap is filed.
WHO_TO_ASK = {
    "manager": "请咨询区域经理或总部",
    "hq": "请与负责这部分制度的部门确认，并可在后台「未解答问题」里把它标为制度缺失",
}
DEFAULT_WHO_TO_ASK = "请咨询店长或区域经理"


def who_to_ask(user) -> str:
    from core.roles import role_label

    return WHO_TO_ASK.get(role_label(user), DEFAULT_WHO_TO_ASK)


def generic_refusal(user) -> str:
    return REFUSAL_TEXT.replace(DEFAULT_WHO_TO_ASK, who_to_ask(user))


def refuse(state: AgentState, layer: str, reason: str) -> None:
    state.refused, state.refusal_layer, state.refusal_reason = True, layer, reason
    state.answer = refusal_text(state) if layer in ("answerability", "uncovered") else generic_refusal(state.user)
    with state.trace.step("refuse", layer=layer, reason=reason):
        pass


def far_from_domain(state: AgentState) -> bool:
    """A refused question that is not about the store or the job at all (no word of that
    world: 店, 客人, 酒, 上班 …) is out of scope, not a gap in the rules, and its intent says
    so. How close the nearest section scores says little here: 「红烧肉怎么做」 lands near the
    recipes, 「店里WiFi密码多久换」 near nothing."""
    # A product the bar sells is the store's world too (「那百威呢」 was declined as unrelated), and so
    # is a topic the SOPs leave to someone else (「在职证明找谁开」 is the job's, and its owner is named).
    if state.chosen is not None and state.chosen.layer == "uncovered":
        return False
    # 「他能打印出来给他吗」 right after a member's balance, 「为啥要问这个」 after the steps: about what the
    # thread was on, not out of the store's world (they were declined as 与门店运营无关).
    if state.previous.get("intent") in (POLICY, BOTH, DATA) and vocab.REFERS_BACK.search(state.question):
        return False
    return not vocab.about_the_store(state.question) and find_product_in_text(state.question) is None


def refusal_text(state: AgentState) -> str:
    """Say what the corpus does not cover, and where the nearest thing it covers is; for a topic
    the SOPs leave to someone else, who answers it instead."""
    v = state.chosen.verdict if state.chosen else None
    if v is not None and v.uncovered:
        return (f"抱歉，门店制度不涉及{uncovered_words(v.uncovered)}，我不能凭空作答。{uncovered_owner(v.uncovered)}；"
                "这个问题已记录到\"未解答问题\"。")
    missing = "、".join(f"「{t}」" for t in (v.missing_terms if v else [])[:3])
    # Named only when the question shares a word with that section: 「团建经费有多少」 was pointed at
    # 《团购与平台券核销》 for the character 团.
    related = v is None or v.signals.get("section_coverage", 1.0) > 0
    nearest = state.chosen.hits[0].document if state.chosen and state.chosen.hits and related else ""
    head = f"制度里没有关于{missing}的规定" if missing else "现有的门店制度文档里没有能回答这个问题的内容"
    near = f"；相近的内容在《{nearest}》" if nearest else ""
    return (f"抱歉，{head}{near}，我不能凭空作答。{who_to_ask(state.user)}；这个问题已记录到\"未解答问题\"，"
            "管理人员会据此补充制度。") + file_it_as_a_ticket(state.question)


def file_it_as_a_ticket(question: str) -> str:
    """「客人说鸡翅是生的」 was refused with nowhere to go: a guest's complaint the rules have nothing
    for can still be filed (a ticket's category read from its words, as the ticket itself is)."""
    from workflow.models import Ticket

    from ..slots import ticket_category

    said = question.strip().rstrip("。！？?!")
    if not vocab.GUEST_COMPLAINS.search(said) or ticket_category(said) == Ticket.Category.OTHER or len(said) > 60:
        return ""
    return f"\n要登记为客诉工单，可以说「帮我建个投诉工单：{said}」。"


def uncovered_words(uncovered: dict) -> str:
    return "、".join(f"「{w}」" for w in uncovered["words"][:3])


def uncovered_owner(uncovered: dict) -> str:
    return f"{uncovered['topic']}方面的问题请问{uncovered['ask']}"
