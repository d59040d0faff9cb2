"""`eval retrieval | agent | equivalence`: every figure for the tuning set (eval/golden.jsonl) and, side
by side, the held-out set (eval/holdout.jsonl), which is only ever reported, never tuned on."""
from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings
from tqdm import tqdm

from core.bench import percentile
from knowledge.evaluation import load_golden, load_sets, retrieval_figures, retrieval_items
from knowledge.models import IndexMeta
from ops.tools import local_today, run_tool

from .answers import (
    ANSWER_KEYS,
    AnswerTally,
    _answer_items,
    _fabricated,
    _fmt,
    _ratio,
    _run_item,
    _top1,
    _turns,
    _write_misses,
    actual_params,
    clean_up_after,
    eval_users,
    expected_params,
)
from .phrasings import eval_data_phrasings


def eval_retrieval(cmd, opts) -> dict:
    """Per set: each channel's recall@1/3/5 and MRR, and the answer-level figures."""
    users = eval_users()
    today = local_today()
    report = {}
    for name, items in load_sets().items():
        figures = retrieval_figures(retrieval_items(items), progress=lambda xs, n=name: tqdm(xs, desc=f"retrieval {n}", file=cmd.stderr))
        tally = AnswerTally()
        for item in tqdm(_answer_items(items), desc=f"answers {name}", file=cmd.stderr):
            for turn, result, _, _ in _run_item(item, users, today, settings.SM_AGENT_MAX_ATTEMPTS):
                tally.add(item, turn, result)
        figures.update(tally.figures())
        figures["answer_misses"] = tally.misses
        report[name] = figures
    w = cmd.stdout.write
    w(f"eval retrieval · embedder {next(iter(report.values()))['embedder']} · " + " · ".join(f"{n} {r['n']} questions" for n, r in report.items()))
    names = list(report)
    first = next(iter(report.values()))
    w(f"{'':22s}" + "".join(f"{n:>36s}" for n in names))
    w(f"{'channel':22s}" + "".join(f"{'R@1':>9s}{'R@3':>9s}{'R@5':>9s}{'MRR':>9s}" for _ in names))
    for channel in ("vector", "sentence", "alias", "lexical", "gram", "hybrid"):
        if channel not in first:
            continue
        row = "".join(f"{r[channel]['recall@1']:9.3f}{r[channel]['recall@3']:9.3f}{r[channel]['recall@5']:9.3f}{r[channel]['mrr']:9.3f}"
                      for r in report.values())
        w(f"{channel:22s}{row}")
    for key in ANSWER_KEYS:
        w(f"{key:22s}" + "".join(f"{_fmt(r[key]):>36s}" for r in report.values()))
    _write_misses(w, report)
    return report


def eval_agent(cmd, opts) -> dict:
    users = eval_users()
    today = local_today()
    attempts_on = 0 if opts.get("agent_off") else settings.SM_AGENT_MAX_ATTEMPTS
    report = {}
    try:
        for name, items in load_sets().items():
            items = [i for i in items if i.get("kind") in ("policy", "data", "both", "refuse", "conversation")]
            report[name] = _agent_figures(cmd, name, items, users, today, attempts_on)
    finally:
        clean_up_after(users)
    phrasings = eval_data_phrasings()
    report["data_phrasings"] = phrasings["accuracy"]
    report["data_phrasings_misses"] = phrasings["misses"]
    w = cmd.stdout.write
    sets = {n: r for n, r in report.items() if isinstance(r, dict) and "latency_ms" in r}
    first = next(iter(sets.values()))
    w(f"eval agent · LLM {first['llm_backend']} · embedder {first['embedder']} · max attempts {attempts_on} · "
      + " · ".join(f"{n} {r['n']} questions" for n, r in sets.items()))
    w(f"{'':22s}" + "".join(f"{n:>12s}" for n in sets))
    for key in ("routing_accuracy", "tool_accuracy", "param_accuracy", "figure_accuracy", "refusal_accuracy",
                "key_content_hit", *ANSWER_KEYS, "fabricated_citations", "recall@1_agent_on", "recall@1_agent_off"):
        w(f"{key:22s}" + "".join(f"{_fmt(r.get(key)):>12s}" for r in sets.values()))
    w(f"  data_phrasings {report['data_phrasings']} (n={phrasings['n']}, eval/phrasings.jsonl: intent + tool + parameters exact)")
    for name, r in report.items():
        if not isinstance(r, dict) or "latency_ms" not in r:
            continue
        for intent, lat in r["latency_ms"].items():
            w(f"  {name} latency {intent:12s} p50 {lat['p50']} ms · p95 {lat['p95']} ms (n={lat['n']})")
    hold = report.get("holdout")
    for m in (hold or {}).get("misses", []):
        w(f"  holdout miss {m['id']} 「{m['query']}」 {m['what']}: expected {m.get('expected', '')} got {m.get('got', '')}")
    return report


@dataclass
class _Scores:
    """What `eval agent` counts over the turns of one set: [right, asked] per figure, the misses."""

    counts: dict = field(default_factory=lambda: {k: [0, 0] for k in ("routing", "tool", "params", "refusal", "key_content", "figures")})
    recall_on: list = field(default_factory=lambda: [0, 0])
    misses: list = field(default_factory=list)

    def count(self, figure: str, ok: bool) -> None:
        self.counts[figure][0] += ok
        self.counts[figure][1] += 1

    def turn(self, item: dict, turn: dict, result, state, today) -> None:
        if "expect_intent" in turn:
            self.count("routing", result.intent == turn["expect_intent"])
            if result.intent != turn["expect_intent"]:
                self.misses.append({"id": item["id"], "query": turn["query"], "what": "routing", "expected": turn["expect_intent"], "got": result.intent})
        if "expect_tool" in turn:
            self.tool(item, turn, result, state, today)
        if item["kind"] == "refuse":
            self.count("refusal", result.refused)
        if turn.get("expect_answer_contains"):
            self.count("key_content", all(s in result.answer for s in turn["expect_answer_contains"]))
        if turn.get("expect_section"):
            self.recall_on[0] += _top1(result, turn)
            self.recall_on[1] += 1

    def tool(self, item: dict, turn: dict, result, state, today) -> None:
        tool = state.plan.tool if state.plan else None
        want = expected_params(turn["expect_params"], today)
        got = actual_params(state.plan.params) if state.plan else {}
        self.count("tool", tool == turn["expect_tool"])
        self.count("params", got == want)
        if tool != turn["expect_tool"] or got != want:
            self.misses.append({"id": item["id"], "query": turn["query"], "what": "tool/params", "expected": [turn["expect_tool"], want], "got": [tool, got]})
        # The figures: the expected tool run independently must give the rows the answer cites.
        expected_rows = run_tool(turn["expect_tool"], turn["expect_params"], user=None, today=today).rows
        cited_rows = [d["row"] for d in result.data]
        self.count("figures", cited_rows == expected_rows)
        if cited_rows != expected_rows:
            self.misses.append({"id": item["id"], "query": turn["query"], "what": "figures", "expected": expected_rows[:3], "got": cited_rows[:3]})


def _agent_figures(cmd, name, items, users, today, attempts_on) -> dict:
    scores, tally = _Scores(), AnswerTally()
    fabricated, latency = 0, {}
    for item in tqdm(items, desc=f"eval agent {name}", file=cmd.stderr):
        for turn, result, state, ms in _run_item(item, users, today, attempts_on):
            latency.setdefault(turn.get("expect_intent", item["kind"]), []).append(ms)
            fabricated += _fabricated(result)
            if item["kind"] in ("policy", "refuse"):
                tally.add(item, turn, result)
            scores.turn(item, turn, result, state, today)

    # A/B: the same policy questions with the agent layer off, in the same run.
    policy = [i for i in items if i["kind"] == "policy"]
    recall_off = [0, 0]
    for item in tqdm(policy, desc=f"agent off (A/B) {name}", file=cmd.stderr):
        for turn, result, _, _ in _run_item(item, users, today, 0):
            recall_off[0] += _top1(result, turn)
            recall_off[1] += 1
    recall_on_policy = sum(
        _top1(r, t) for i in policy for t, r, _, _ in _run_item(i, users, today, attempts_on)
    ) / max(1, len(policy))
    counts = scores.counts
    return {
        "n": sum(len(_turns(i)) for i in items),
        "routing_accuracy": _ratio(counts["routing"]),
        "tool_accuracy": _ratio(counts["tool"]),
        "param_accuracy": _ratio(counts["params"]),
        "figure_accuracy": _ratio(counts["figures"]),
        "refusal_accuracy": _ratio(counts["refusal"]),
        "key_content_hit": _ratio(counts["key_content"]),
        **tally.figures(),
        "fabricated_citations": fabricated,
        "recall@1_agent_on": round(recall_on_policy, 4),
        "recall@1_agent_off": _ratio(recall_off),
        "recall@1_all_turns": _ratio(scores.recall_on),
        "latency_ms": {k: {"p50": round(percentile(v, 50), 1), "p95": round(percentile(v, 95), 1), "n": len(v)} for k, v in sorted(latency.items())},
        "agent_max_attempts": attempts_on,
        "llm_backend": settings.SM_LLM_BACKEND,
        "embedder": IndexMeta.objects.first().signature if IndexMeta.objects.exists() else None,
        "misses": scores.misses + tally.misses,
    }


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
    from ..services import chat_ask
    from ..tasks import ask_task

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
        clean_up_after(users)
    mode = "eager (REDIS_URL unset)" if settings.CELERY_TASK_ALWAYS_EAGER else f"worker via {settings.CELERY_BROKER_URL}"
    cmd.stdout.write(f"equivalence {same}/{len(items)} (Celery {mode})")
    for d in diffs:
        cmd.stdout.write(f"  differs {d['id']} 「{d['query']}」 request {d['request']} · task {d['task']}")
    return {"n": len(items), "equivalent": same, "diffs": diffs, "exit_code": 0 if same == len(items) else 1}
