"""Running one question or conversation through the agent for evaluation, and tallying answers: the
first citation, the key facts, refusals of answerable, near and far questions, routing."""
from __future__ import annotations

import re
import time
from datetime import date, timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from knowledge.evaluation import same_heading
from ops.models import Store
from ops.periods import parse_period

from ..pipeline import answer_question

_REF = re.compile(r"\[(D?\d+)\]")


def eval_users() -> dict[str, object]:
    """Two evaluation identities (no password): a staff and a manager at every store."""
    User = get_user_model()
    users = {}
    for role in ("staff", "manager"):
        user, created = User.objects.get_or_create(username=f"eval_{role}")
        if created:
            user.set_unusable_password()
            user.save()
        user.groups.add(Group.objects.get_or_create(name=role)[0])
        for store in Store.objects.all():
            store.members.add(user)
        users[role] = user
    return users


def expected_params(params: dict, today: date) -> dict:
    out = dict(params)
    if "period" in out:
        p = parse_period(out["period"], today)
        out["period"] = {"start": p.start.isoformat(), "end": p.end.isoformat()}
    return out


def actual_params(plan_params: dict) -> dict:
    out = {k: v for k, v in plan_params.items() if v is not None or k == "store"}
    if isinstance(out.get("period"), dict):
        out["period"] = {"start": out["period"]["start"], "end": out["period"]["end"]}
    if "category" in out and out["category"] is None:
        out.pop("category")
    return out


def _turns(item: dict) -> list[dict]:
    return item["turns"] if item["kind"] == "conversation" else [item]


def _section_of(result) -> str | None:
    return result.citations[0]["section_path"] if result.citations else None


def _fabricated(result) -> int:
    refs = set(_REF.findall(result.answer))
    known = {c["ref"] for c in result.citations} | {d["ref"] for d in result.data}
    return len(refs - known)


def _run_item(item, users, today, max_attempts):
    """Run one golden item (every turn of a conversation); yield (turn, result, state, ms)."""
    previous, history = {}, []
    user = users["manager" if item.get("as_role") == "manager" else "staff"]
    for turn in _turns(item):
        started = time.perf_counter()
        result, state = answer_question(turn["query"], user=user, previous=previous, history=history, today=today,
                                        max_attempts=max_attempts)
        ms = (time.perf_counter() - started) * 1000
        yield turn, result, state, ms
        previous = result.context
        history = history + [(turn["query"], result.answer)]


def _top1(result, turn) -> bool:
    c = result.citations[0] if result.citations else None
    return bool(c) and c["document"] == turn["expect_doc"] and same_heading(c["section_path"].split(" > ")[-1], turn["expect_section"])


ANSWER_KEYS = ("key_fact_hit", "answer_top1", "near_refusal", "far_refusal", "false_refusals")


class AnswerTally:
    """The answer-level figures both `eval retrieval` and `eval agent` report per set."""

    def __init__(self):
        self.facts, self.top1, self.near, self.far = [0, 0], [0, 0], [0, 0], [0, 0]
        self.false_refusals = 0
        self.answerable = 0
        self.misses: list[dict] = []

    def add(self, item: dict, turn: dict, result) -> None:
        if item["kind"] == "refuse":
            pair = self.near if item.get("scope") == "near" else self.far
            pair[0] += result.refused
            pair[1] += 1
            if not result.refused:
                self.misses.append({"id": item["id"], "query": turn["query"], "what": f"should refuse ({item.get('scope')})",
                                    "got": _section_of(result)})
            return
        if turn.get("expect_section"):
            self.answerable += 1
            if result.refused:
                self.false_refusals += 1
                self.misses.append({"id": item["id"], "query": turn["query"], "what": "false refusal", "got": result.route_reason})
            ok = _top1(result, turn)
            self.top1[0] += ok
            self.top1[1] += 1
            if not ok and not result.refused:
                self.misses.append({"id": item["id"], "query": turn["query"], "what": "first citation",
                                    "expected": f"{turn['expect_doc']} > {turn['expect_section']}", "got": _section_of(result)})
        if turn.get("expect_answer_contains"):
            hit = all(s in result.answer for s in turn["expect_answer_contains"])
            self.facts[0] += hit
            self.facts[1] += 1
            if not hit and not result.refused:
                self.misses.append({"id": item["id"], "query": turn["query"], "what": "key fact missing",
                                    "expected": [s for s in turn["expect_answer_contains"] if s not in result.answer]})

    def figures(self) -> dict:
        return {
            "key_fact_hit": _ratio(self.facts), "answer_top1": _ratio(self.top1),
            "near_refusal": _ratio(self.near), "far_refusal": _ratio(self.far),
            "false_refusals": self.false_refusals, "answerable": self.answerable,
        }


def _ratio(pair) -> float | None:
    return round(pair[0] / pair[1], 4) if pair[1] else None


def _answer_items(items: list[dict]) -> list[dict]:
    return [i for i in items if i["kind"] == "refuse" or (i["kind"] == "policy" and i.get("expect_section"))]


def _fmt(value) -> str:
    return "-" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))


def _write_misses(w, report: dict) -> None:
    """Every miss of the held-out set (the tuning set's are in the JSON)."""
    hold = report.get("holdout")
    if not hold:
        return
    for m in hold.get("misses", []):
        w(f"  holdout retrieval miss {m['id']} 「{m['query']}」 expected {m['expected']} · hybrid #{m['hybrid_rank'] or '>10'} "
          f"(vector #{m['vector_rank'] or '>10'}, lexical #{m['lexical_rank'] or '>10'}) · got {m['got']}")
    for m in hold.get("answer_misses", []):
        w(f"  holdout answer miss {m['id']} 「{m['query']}」 {m['what']}: expected {m.get('expected', '')} got {m.get('got', '')}")


def clean_up_after(users: dict) -> None:
    """What an evaluation leaves behind, removed: its questions on the unanswered list, its
    conversations, and the restock and ticket proposals its questions made (expired, audited:
    they stood pending on the stores' desks as 「eval_staff 提交」, for a manager to confirm)."""
    from workflow.services import proposals_expire

    from ..models import Conversation, UnansweredQuestion

    UnansweredQuestion.objects.filter(user__in=users.values()).delete()
    Conversation.objects.filter(user__in=users.values()).delete()
    proposals_expire(older_than=timedelta(0), proposed_by=list(users.values()), reason="评测生成的提案，评测结束时撤回")
