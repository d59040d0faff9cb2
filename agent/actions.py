"""Agent → workflow hand-over: requests become pending proposals; nothing is written to the
business records until a person with the right role confirms."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ActionOutcome:
    message: str
    proposal: dict | None = None
    tool_result: object | None = None
    detail: dict = field(default_factory=dict)


def propose_from_question(state) -> ActionOutcome:
    from workflow.chat import proposal_from_chat

    return proposal_from_chat(state)


def offer_restock(state):
    from workflow.chat import restock_offer

    return restock_offer(state)
