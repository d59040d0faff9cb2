"""The state one question carries through the pipeline, its trace, and the result it ends as.

What every node would otherwise look up again is resolved once, when the question starts
(`start`): who is reading (audiences) and the LLM client; the index metadata is read
when a policy question first needs it, then once per question."""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from django.conf import settings

from knowledge.selectors import SearchResult, current_index, visibility_for
from ops.tools import ToolResult

from .. import compose
from .. import vocabulary as vocab
from ..data_guard import DataPlan
from ..llm import get_llm
from ..router import Route


class Trace:
    def __init__(self, on_step=None):
        self.steps: list[dict] = []
        self.on_step = on_step  # told about each finished step (async progress); never changes the answer

    @contextmanager
    def step(self, name: str, **detail):
        started = time.perf_counter()
        entry = {"step": name, "ms": 0.0, "detail": dict(detail)}
        try:
            yield entry["detail"]
        finally:
            entry["ms"] = round((time.perf_counter() - started) * 1000, 2)
            self.steps.append(entry)
            if self.on_step is not None:
                self.on_step(entry)


@dataclass
class Round:
    attempt: int
    query: str
    result: SearchResult | None
    enough: bool = False
    layer: str = ""
    reason: str = ""
    score: float = 0.0
    verdict: Any = None

    @property
    def hits(self):
        return self.result.hits if self.result else []


@dataclass
class AgentState:
    question: str
    user: Any
    today: date
    previous: dict = field(default_factory=dict)
    history: list[tuple[str, str]] = field(default_factory=list)
    max_attempts: int = 2
    trace: Trace = field(default_factory=Trace)
    on_delta: Any = None  # called with each piece of an LLM-written answer as it arrives (the chat page streams it)
    resolved_query: str = ""
    follow_up_alone: str = ""  # a follow-up's new thing on its own (「换桶」 of 「那换桶呢」): searched beside the resolved query
    data_subject: str = ""  # what the last data answer was about (「会员储值余额」), for a rules question about it
    route: Route | None = None
    plan: DataPlan | None = None
    tool_result: ToolResult | None = None
    tool_error: str | None = None
    rounds: list[Round] = field(default_factory=list)
    chosen: Round | None = None
    refused: bool = False
    refusal_layer: str = ""
    answer: str = ""
    sources: compose.Sources = field(default_factory=compose.Sources)
    proposal: dict | None = None
    pending_action: dict | None = None  # an action still waiting for slots (agent/slots.py)
    decided_on: str | None = None  # the proposal a 「确认提案…」 turn was about
    clarify: bool = False
    audiences: Any = None  # who is reading (knowledge.selectors.Visibility): resolved once, in start()
    first: SearchResult | None = None  # the question's own retrieval: what every round is judged against
    verdict: Any = None  # the chosen round's answerability verdict
    refusal_reason: str = ""  # why, as the refuse step recorded it
    hedged: bool = False  # answered with the closest rule, and told so
    llm: Any = None  # the configured LLM client (agent.llm): resolved once, in start()

    @property
    def rules_query(self) -> str:
        """What the rules are searched and judged with: the resolved question with a member's
        number or phone read as 「会员」 / 「手机号」 (the data tools get the number itself).
        「帮我查下M00010最近消费了啥」 was refused for want of a rule about 「m00010」. A question about
        the figures just given (「他能打印出来给他吗」 after a member's balance) is searched with what
        they were about."""
        return vocab.as_rule_words(f"{self.data_subject} {self.resolved_query}".strip())

    @property
    def index(self):
        """The index metadata, read when a policy question first needs it (a data question
        never does) and then once per question (index_read_once)."""
        return current_index()


@dataclass
class AgentResult:
    answer: str
    intent: str
    route_reason: str
    refused: bool
    citations: list[dict]
    data: list[dict]
    proposal: dict | None
    trace: list[dict]
    context: dict
    # Why it was refused (the layer: router, answerability, uncovered; and its reason), the best
    # answerability score of its rounds, and whether it was answered with the closest rule only.
    refusal_layer: str = ""
    refusal_reason: str = ""
    score: float | None = None
    hedged: bool = False
    uncovered_reason: str = ""  # answered (figures), the rules half left to someone else: why

    def as_dict(self) -> dict:
        return {
            "answer": self.answer, "intent": self.intent, "route_reason": self.route_reason, "refused": self.refused,
            "citations": [{k: v for k, v in c.items() if k != "chunk_id"} for c in self.citations],
            "data": self.data, "proposal": self.proposal, "trace": self.trace,
            "suggestions": self.context.get("suggestions", []),
        }


def thresholds() -> tuple[float, float]:
    """The calibrated cosine thresholds (`eval calibrate`): no longer a refusal gate (the
    answerability score decides), still the scale the chat page grades relevance 高/中/低 on."""
    meta = current_index()
    refusal = meta.refusal_threshold if meta and meta.refusal_threshold is not None else settings.SM_REFUSAL_THRESHOLD
    judge = meta.judge_threshold if meta and meta.judge_threshold is not None else settings.SM_JUDGE_THRESHOLD
    return refusal, judge


def start(question: str, *, user, today: date, previous: dict | None = None, history: list | None = None,
          max_attempts: int | None = None, on_step=None, on_delta=None) -> AgentState:
    """A question's state, with what every node needs resolved once: who is reading (the guard
    threads use their own connections and must not look the user's role up again; the judge runs
    up to three times) and the LLM client."""
    return AgentState(
        question=question, user=user, today=today, previous=previous or {}, history=history or [],
        max_attempts=settings.SM_AGENT_MAX_ATTEMPTS if max_attempts is None else max_attempts, trace=Trace(on_step),
        on_delta=on_delta, audiences=visibility_for(user), llm=get_llm(),
    )
