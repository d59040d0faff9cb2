"""`manage.py eval agent | equivalence | calibrate` on eval/golden.jsonl.

Expected figures for data questions are computed here from the database with the expected
tool and parameters, never typed into the golden file. Evaluation never persists
conversations, except `equivalence`, which goes through the real sync and Celery paths
and removes its own rows afterwards.
"""
from __future__ import annotations

import re
import statistics
import time
from datetime import date
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from tqdm import tqdm

from core.bench import percentile
from knowledge.evaluation import load_golden
from knowledge.models import IndexMeta
from knowledge.selectors import search
from ops.models import Store
from ops.periods import parse_period
from ops.tools import local_today, run_tool

from .pipeline import answer_question

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
    top = _section_of(result)
    return top == f"{turn['expect_doc']} > {turn['expect_section']}" if top else False


def eval_agent(cmd, opts) -> dict:
    users = eval_users()
    today = local_today()
    items = [i for i in load_golden() if i.get("kind") in ("policy", "data", "both", "refuse", "conversation")]
    attempts_on = 0 if opts.get("agent_off") else settings.SM_AGENT_MAX_ATTEMPTS
    counts = {k: [0, 0] for k in ("routing", "tool", "params", "refusal", "key_content", "figures")}
    false_refusals, fabricated, latency, misses = 0, 0, {}, []
    recall = {"on": [0, 0], "off": [0, 0]}

    for item in tqdm(items, desc="eval agent", file=cmd.stderr):
        for turn, result, state, ms in _run_item(item, users, today, attempts_on):
            latency.setdefault(turn.get("expect_intent", item["kind"]), []).append(ms)
            fabricated += _fabricated(result)
            if "expect_intent" in turn:
                ok = result.intent == turn["expect_intent"]
                counts["routing"][0] += ok
                counts["routing"][1] += 1
                if not ok:
                    misses.append({"id": item["id"], "query": turn["query"], "what": "routing", "expected": turn["expect_intent"], "got": result.intent})
            if "expect_tool" in turn:
                tool = state.plan.tool if state.plan else None
                counts["tool"][0] += tool == turn["expect_tool"]
                counts["tool"][1] += 1
                want = expected_params(turn["expect_params"], today)
                got = actual_params(state.plan.params) if state.plan else {}
                counts["params"][0] += got == want
                counts["params"][1] += 1
                if tool != turn["expect_tool"] or got != want:
                    misses.append({"id": item["id"], "query": turn["query"], "what": "tool/params", "expected": [turn["expect_tool"], want], "got": [tool, got]})
                # The figures: the expected tool run independently must give the rows the answer cites.
                expected_rows = run_tool(turn["expect_tool"], turn["expect_params"], user=None, today=today).rows
                cited_rows = [d["row"] for d in result.data]
                figures_ok = cited_rows == expected_rows
                counts["figures"][0] += figures_ok
                counts["figures"][1] += 1
                if not figures_ok:
                    misses.append({"id": item["id"], "query": turn["query"], "what": "figures", "expected": expected_rows[:3], "got": cited_rows[:3]})
            if item["kind"] == "refuse":
                counts["refusal"][0] += result.refused
                counts["refusal"][1] += 1
                if not result.refused:
                    misses.append({"id": item["id"], "query": turn["query"], "what": f"should refuse ({item['scope']})", "got": _section_of(result)})
            elif result.refused:
                false_refusals += 1
                misses.append({"id": item["id"], "query": turn["query"], "what": "false refusal", "got": result.route_reason})
            if turn.get("expect_answer_contains"):
                hit = all(s in result.answer for s in turn["expect_answer_contains"])
                counts["key_content"][0] += hit
                counts["key_content"][1] += 1
                if not hit:
                    misses.append({"id": item["id"], "query": turn["query"], "what": "key content", "expected": turn["expect_answer_contains"]})
            if turn.get("expect_section"):
                recall["on"][0] += _top1(result, turn)
                recall["on"][1] += 1

    # A/B: the same policy questions with the agent layer off, in the same run.
    policy = [i for i in items if i["kind"] == "policy"]
    for item in tqdm(policy, desc="agent off (A/B)", file=cmd.stderr):
        for turn, result, _, _ in _run_item(item, users, today, 0):
            recall["off"][0] += _top1(result, turn)
            recall["off"][1] += 1
    recall_on_policy = sum(
        _top1(r, t) for i in policy for t, r, _, _ in _run_item(i, users, today, attempts_on)
    ) / max(1, len(policy))

    def ratio(pair):
        return round(pair[0] / pair[1], 4) if pair[1] else None

    report = {
        "n": sum(len(_turns(i)) for i in items),
        "routing_accuracy": ratio(counts["routing"]),
        "tool_accuracy": ratio(counts["tool"]),
        "param_accuracy": ratio(counts["params"]),
        "figure_accuracy": ratio(counts["figures"]),
        "refusal_accuracy": ratio(counts["refusal"]),
        "false_refusals": false_refusals,
        "key_content_hit": ratio(counts["key_content"]),
        "fabricated_citations": fabricated,
        "recall@1_agent_on": round(recall_on_policy, 4),
        "recall@1_agent_off": ratio(recall["off"]),
        "recall@1_all_turns": ratio(recall["on"]),
        "latency_ms": {k: {"p50": round(percentile(v, 50), 1), "p95": round(percentile(v, 95), 1), "n": len(v)} for k, v in sorted(latency.items())},
        "agent_max_attempts": attempts_on,
        "llm_backend": settings.SM_LLM_BACKEND,
        "embedder": IndexMeta.objects.first().signature if IndexMeta.objects.exists() else None,
        "misses": misses,
    }
    phrasings = eval_data_phrasings()
    report["data_phrasings"] = phrasings["accuracy"]
    report["data_phrasings_misses"] = phrasings["misses"]
    w = cmd.stdout.write
    w(f"eval agent · {report['n']} questions · LLM {report['llm_backend']} · embedder {report['embedder']} · max attempts {attempts_on}")
    for key in ("routing_accuracy", "tool_accuracy", "param_accuracy", "figure_accuracy", "refusal_accuracy", "key_content_hit"):
        w(f"  {key:20s} {report[key]}")
    w(f"  data_phrasings       {report['data_phrasings']} (n={phrasings['n']}, eval/phrasings.jsonl: intent + tool + parameters exact)")
    w(f"  false_refusals       {false_refusals}")
    w(f"  fabricated_citations {fabricated}")
    w(f"  recall@1 agent on {report['recall@1_agent_on']} · off {report['recall@1_agent_off']} (policy questions, same run)")
    for intent, lat in report["latency_ms"].items():
        w(f"  latency {intent:12s} p50 {lat['p50']} ms · p95 {lat['p95']} ms (n={lat['n']})")
    for m in misses:
        w(f"  miss {m['id']} 「{m['query']}」 {m['what']}: expected {m.get('expected', '')} got {m.get('got', '')}")
    return report


def _comparable(result: dict) -> tuple:
    sections = set()
    for step in result["trace"]:
        detail = step["detail"]
        for hit in (detail.get("retrieve_guard") or {}).get("hits", []) + detail.get("hits", []):
            sections.add(hit["section_path"])
    top = result["citations"][0]["section_path"] if result["citations"] else None
    return result["intent"], top, frozenset(sections)


def eval_equivalence(cmd, opts) -> dict:
    """The golden set through the request path and through the Celery task; compare intent,
    top-1 section and the set of retrieved chunks (not wording)."""
    from .models import Conversation, UnansweredQuestion
    from .services import chat_ask
    from .tasks import ask_task

    users = eval_users()
    items = [i for i in load_golden() if i.get("kind") in ("policy", "data", "both", "refuse")]
    same, diffs = 0, []
    try:
        for item in tqdm(items, desc="equivalence", file=cmd.stderr):
            user = users["manager" if item.get("as_role") == "manager" else "staff"]
            sync, _, _ = chat_ask(user=user, query=item["query"])
            task = ask_task.delay(user.pk, item["query"], None).get(timeout=120)
            a, b = _comparable(sync.as_dict()), _comparable(task)
            if a == b:
                same += 1
            else:
                diffs.append({"id": item["id"], "query": item["query"], "request": [a[0], a[1]], "task": [b[0], b[1]]})
    finally:
        UnansweredQuestion.objects.filter(user__in=users.values()).delete()
        Conversation.objects.filter(user__in=users.values()).delete()
    mode = "eager (REDIS_URL unset)" if settings.CELERY_TASK_ALWAYS_EAGER else f"worker via {settings.CELERY_BROKER_URL}"
    cmd.stdout.write(f"equivalence {same}/{len(items)} (Celery {mode})")
    for d in diffs:
        cmd.stdout.write(f"  differs {d['id']} 「{d['query']}」 request {d['request']} · task {d['task']}")
    return {"n": len(items), "equivalent": same, "diffs": diffs, "exit_code": 0 if same == len(items) else 1}


def _best_split(positives: list[float], negatives: list[float]) -> tuple[float, int, int]:
    """Threshold that misclassifies the fewest, never refusing an answerable question when a
    split exists; returns (threshold, false refusals, missed refusals)."""
    candidates = sorted(set(positives + negatives))
    best = None
    for i in range(len(candidates) + 1):
        lo = candidates[i - 1] if i else candidates[0] - 0.01
        hi = candidates[i] if i < len(candidates) else candidates[-1] + 0.01
        t = (lo + hi) / 2
        fr = sum(1 for p in positives if p < t)
        mr = sum(1 for n in negatives if n >= t)
        key = (fr, mr, -t)
        if best is None or key < best[0]:
            best = (key, t, fr, mr)
    return best[1], best[2], best[3]


def eval_calibrate(cmd, opts) -> dict:
    """Refusal thresholds from score distributions: top-1 vector similarity of answerable
    questions against far-from-domain ones (layer 1), and against near-domain ones (the
    judge's grey zone). Stored in the index metadata; every process reads them from there."""
    golden = load_golden()
    users = eval_users()

    def best(q: str, role: str = "staff") -> float:
        r = search(q, user=users[role], k=1)
        return max((h.vector_score or 0.0) for h in r.vector_ranking[:1]) if r.vector_ranking else 0.0

    answerable = [best(i["query"], "manager" if i.get("as_role") == "manager" else "staff") for i in golden if i["kind"] == "policy"]
    far = [best(i["query"]) for i in golden if i["kind"] == "refuse" and i["scope"] == "far"]
    near = [best(i["query"]) for i in golden if i["kind"] == "refuse" and i["scope"] == "near"]
    refusal_t, fr1, mr1 = _best_split(answerable, far)
    judge_t, fr2, mr2 = _best_split(answerable, near)
    meta = IndexMeta.objects.order_by("pk").first()
    meta.refusal_threshold, meta.judge_threshold = round(refusal_t, 4), round(judge_t, 4)
    meta.save(update_fields=["refusal_threshold", "judge_threshold"])

    def dist(xs):
        return f"min {min(xs):.3f} · p10 {percentile(xs, 10):.3f} · median {statistics.median(xs):.3f} · max {max(xs):.3f}"

    w = cmd.stdout.write
    w(f"calibrate · embedder {meta.signature}")
    w(f"  answerable ({len(answerable)}): {dist(answerable)}")
    w(f"  far ({len(far)}):        {dist(far)}")
    w(f"  near ({len(near)}):       {dist(near)}")
    w(f"  refusal gate threshold {refusal_t:.4f} (answerable below: {fr1}, far at/above: {mr1})")
    w(f"  judge grey-zone threshold {judge_t:.4f} (answerable below: {fr2}, near at/above: {mr2})")
    w("  stored in the index metadata (admin: 索引元数据)")
    return {"refusal_threshold": refusal_t, "judge_threshold": judge_t, "answerable": answerable, "far": far, "near": near,
            "refusal_errors": {"false_refusals": fr1, "missed": mr1}, "judge_errors": {"false_refusals": fr2, "missed": mr2}}


# --- the phrasing table: everyday data questions and rule questions with data-ish words -------

PHRASINGS = Path(settings.BASE_DIR) / "eval" / "phrasings.jsonl"
# The table's expected date ranges are written for this day (a Wednesday), so they are exact.
PHRASINGS_TODAY = date(2026, 11, 18)


def load_phrasings(path=None) -> list[dict]:
    return load_golden(path or PHRASINGS)


def plan_params(params: dict) -> dict:
    """A plan's parameters in the table's shape: period as [start, end], no empty optionals."""
    out = {k: v for k, v in params.items() if v is not None or k == "store"}
    if isinstance(out.get("period"), dict):
        out["period"] = [out["period"]["start"], out["period"]["end"]]
    return out


def check_phrasing(item: dict, today: date = PHRASINGS_TODAY) -> dict | None:
    """None when the router and the data planner get the item exactly right, else what they got."""
    from .data_guard import plan_data
    from .router import DATA, route_by_rules

    decision = route_by_rules(item["q"])
    got = {"intent": decision.intent, "reason": decision.reason}
    if decision.intent == DATA:
        plan = plan_data(item["q"], today=today, data_since=None)
        got.update(tool=plan.tool, params=plan_params(plan.params), clarify=plan.clarify)
    ok = got["intent"] == item["intent"]
    if ok and item["intent"] == DATA:
        ok = got["tool"] == item["tool"] and got["params"] == item["params"] and not got["clarify"]
    return None if ok else got


def eval_data_phrasings(cmd=None) -> dict:
    """Accuracy on eval/phrasings.jsonl: intent, tool and parameters all exact."""
    items = load_phrasings()
    misses = []
    for item in items:
        got = check_phrasing(item)
        if got is not None:
            misses.append({"id": item["id"], "query": item["q"], "expected": {k: item[k] for k in ("intent", "tool", "params")}, "got": got})
    accuracy = round((len(items) - len(misses)) / len(items), 4) if items else None
    if cmd is not None:
        cmd.stdout.write(f"  data_phrasings       {accuracy} ({len(items) - len(misses)}/{len(items)}, intent + tool + parameters exact)")
        for m in misses:
            cmd.stdout.write(f"  phrasing miss {m['id']} 「{m['query']}」 expected {m['expected']} got {m['got']}")
    return {"accuracy": accuracy, "n": len(items), "misses": misses}
