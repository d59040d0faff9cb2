"""`manage.py eval retrieval | agent | equivalence | calibrate`.

Every figure is computed for the tuning set (eval/golden.jsonl) and, side by side, for the
held-out set (eval/holdout.jsonl), which is only ever reported, never tuned on.

Expected figures for data questions are computed here from the database with the expected
tool and parameters, never typed into the golden file. Evaluation never persists
conversations, except `equivalence`, which goes through the real sync and Celery paths
and removes its own rows afterwards.
"""
from __future__ import annotations

import json
import re
import time
from datetime import date, timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from tqdm import tqdm

from core.bench import percentile
from knowledge.evaluation import load_golden, load_sets, retrieval_figures, retrieval_items, same_heading
from knowledge.models import IndexMeta
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

    from .models import Conversation, UnansweredQuestion

    UnansweredQuestion.objects.filter(user__in=users.values()).delete()
    Conversation.objects.filter(user__in=users.values()).delete()
    proposals_expire(older_than=timedelta(0), proposed_by=list(users.values()), reason="评测生成的提案，评测结束时撤回")


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


def _agent_figures(cmd, name, items, users, today, attempts_on) -> dict:
    counts = {k: [0, 0] for k in ("routing", "tool", "params", "refusal", "key_content", "figures")}
    fabricated, latency, misses = 0, {}, []
    recall = {"on": [0, 0], "off": [0, 0]}
    tally = AnswerTally()

    for item in tqdm(items, desc=f"eval agent {name}", file=cmd.stderr):
        for turn, result, state, ms in _run_item(item, users, today, attempts_on):
            latency.setdefault(turn.get("expect_intent", item["kind"]), []).append(ms)
            fabricated += _fabricated(result)
            if item["kind"] in ("policy", "refuse"):
                tally.add(item, turn, result)
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
            if turn.get("expect_answer_contains"):
                hit = all(s in result.answer for s in turn["expect_answer_contains"])
                counts["key_content"][0] += hit
                counts["key_content"][1] += 1
            if turn.get("expect_section"):
                recall["on"][0] += _top1(result, turn)
                recall["on"][1] += 1

    # A/B: the same policy questions with the agent layer off, in the same run.
    policy = [i for i in items if i["kind"] == "policy"]
    for item in tqdm(policy, desc=f"agent off (A/B) {name}", file=cmd.stderr):
        for turn, result, _, _ in _run_item(item, users, today, 0):
            recall["off"][0] += _top1(result, turn)
            recall["off"][1] += 1
    recall_on_policy = sum(
        _top1(r, t) for i in policy for t, r, _, _ in _run_item(i, users, today, attempts_on)
    ) / max(1, len(policy))

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
        "recall@1_agent_off": _ratio(recall["off"]),
        "recall@1_all_turns": _ratio(recall["on"]),
        "latency_ms": {k: {"p50": round(percentile(v, 50), 1), "p95": round(percentile(v, 95), 1), "n": len(v)} for k, v in sorted(latency.items())},
        "agent_max_attempts": attempts_on,
        "llm_backend": settings.SM_LLM_BACKEND,
        "embedder": IndexMeta.objects.first().signature if IndexMeta.objects.exists() else None,
        "misses": misses + tally.misses,
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
        clean_up_after(users)
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


def _answerability_rows(items: list[dict], users) -> tuple[list[dict], list[list[dict]], list[int], list[dict]]:
    """Per answerable / near / far question: the judge's signals for every round the agent
    loop would run (called under a never-enough model, answerability.scoring_with, so every
    rewrite round runs). Questions the router answers or declines itself are left out."""
    rows, rounds, labels, kept = [], [], [], []
    for item, judged in _judged_rounds(items, users):
        rows.append(judged[0]["signals"])
        rounds.append([r["signals"] for r in judged])
        labels.append(_label(item))
        kept.append(item)
    return rows, rounds, labels, kept


def _label(item: dict) -> int | None:
    """1 for an answerable rule question, 0 for one that must be refused, None otherwise."""
    if item["kind"] == "policy" and item.get("expect_section"):
        return 1
    return 0 if item["kind"] == "refuse" else None


def _judged_rounds(items, users):
    """(item, [{"signals", "top", "correct"} per judged round]) for every labelled item the
    judge saw (under whatever model is in force)."""
    for item in items:
        label = _label(item)
        if label is None:
            continue
        user = users["manager" if item.get("as_role") == "manager" else "staff"]
        _, state = answer_question(item["query"], user=user, today=local_today())
        judged = []
        for rnd in state.rounds:
            if rnd.verdict is None:
                continue
            top = rnd.hits[0] if rnd.hits else None
            judged.append({"signals": rnd.verdict.signals, "top": top.section_path if top else None,
                           "correct": bool(top and label and top.document == item["expect_doc"]
                                           and same_heading(top.heading, item["expect_section"]))})
        if judged:
            yield item, judged


def eval_signals(cmd, opts) -> dict:
    """The judge's signals of every round for each labelled question of both sets, under a model
    that never says "enough" (every rewrite round runs): what `eval fit` fits across corpora."""
    from knowledge import answerability
    from knowledge.calibration import applicable_negatives

    users = eval_users()
    out = []
    # The shipped bank's questions this corpus does not cover by its words, as a third set.
    bank = [{"id": f"bank{i}", "kind": "refuse", "scope": b.scope, "query": b.q} for i, b in enumerate(applicable_negatives())]
    try:
        with answerability.scoring_with(answerability.never_enough_model()):
            for set_name, items in [*load_sets().items(), ("bank", bank)]:
                for item, judged in _judged_rounds(tqdm(items, desc=f"signals {set_name}", file=cmd.stderr), users):
                    out.append({"id": item["id"], "set": set_name, "label": _label(item), "scope": item.get("scope"),
                                "query": item["query"], "rounds": judged})
    finally:
        clean_up_after(users)
    cmd.stdout.write(f"signals · corpus {settings.SM_EVAL_CORPUS} · {len(out)} questions")
    return {"corpus": settings.SM_EVAL_CORPUS, "rows": out}


def eval_calibrate(cmd, opts) -> dict:
    """Fit the answerability model (logistic regression over the judge's signals) on the
    tuning set's answerable / near / far questions and store it in the index metadata; the
    held-out set is scored with it and reported, never fitted on. Also measures the cosine
    scale the chat page grades relevance on (高/中/低)."""
    from knowledge import answerability

    sets = load_sets()
    users = eval_users()
    meta = IndexMeta.objects.order_by("pk").first()
    try:
        with answerability.scoring_with(answerability.never_enough_model()):  # this process only: every round runs
            rows, rounds, labels, items = _answerability_rows(tqdm(sets["tune"], desc="signals tune", file=cmd.stderr), users)
            hold = _answerability_rows(tqdm(sets["holdout"], desc="signals holdout", file=cmd.stderr), users) if "holdout" in sets else None
    finally:
        clean_up_after(users)
    model = answerability.fit(rows, labels)
    # The agent answers when *any* round is judged enough: the threshold is chosen on that.
    threshold, tune_stats = answerability.choose_threshold(model, rounds, labels)
    model.update(threshold=threshold, signature=meta.signature, backend=meta.backend, fitted_on=len(rows))
    report = {"model": model, "tune": tune_stats}
    if hold:
        _, hrounds, hlabels, hitems = hold
        probs = [max(answerability.probability(model, r) for r in rs) for rs in hrounds]
        report["holdout"] = {
            "false_refusals": sum(1 for p, y in zip(probs, hlabels) if y == 1 and p < threshold), "answerable": sum(hlabels),
            "near_refused": sum(1 for p, i in zip(probs, hitems) if i["kind"] == "refuse" and i.get("scope") == "near" and p < threshold),
            "near": sum(1 for i in hitems if i["kind"] == "refuse" and i.get("scope") == "near"),
            "far_refused": sum(1 for p, i in zip(probs, hitems) if i["kind"] == "refuse" and i.get("scope") == "far" and p < threshold),
            "far": sum(1 for i in hitems if i["kind"] == "refuse" and i.get("scope") == "far"),
        }
    # The cosine scale of the chat page's relevance grades: top-1 chunk similarity of
    # answerable questions against far and near ones.
    answerable = [r["chunk_sim"] for r, y in zip(rows, labels) if y == 1]
    far = [r["chunk_sim"] for r, i in zip(rows, items) if i["kind"] == "refuse" and i.get("scope") == "far"]
    near = [r["chunk_sim"] for r, i in zip(rows, items) if i["kind"] == "refuse" and i.get("scope") == "near"]
    refusal_t, _, _ = _best_split(answerable, far)
    judge_t, _, _ = _best_split(answerable, near)
    report.update(refusal_threshold=refusal_t, judge_threshold=judge_t)
    if not opts.get("dry_run"):
        meta.answerability = model
        meta.refusal_threshold, meta.judge_threshold = round(refusal_t, 4), round(judge_t, 4)
        meta.save(update_fields=["answerability", "refusal_threshold", "judge_threshold"])
        if opts.get("save_default"):
            answerability.DEFAULT_MODEL_PATH.write_text(json.dumps(model, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    w = cmd.stdout.write
    w(f"calibrate · embedder {meta.signature} · fitted on {len(rows)} tuning questions ({sum(labels)} answerable)")
    for f, c in zip(model["features"], model["coef"]):
        w(f"  {f:18s} coef {c:+.3f}")
    w(f"  threshold {threshold:.4f} · tuning set: false refusals {tune_stats['false_refusals']}/{tune_stats['answerable']}, "
      f"refused {tune_stats['refused_unanswerable']}/{tune_stats['unanswerable']} near+far")
    if "holdout" in report:
        h = report["holdout"]
        w(f"  held-out (reported only): false refusals {h['false_refusals']}/{h['answerable']}, near refused {h['near_refused']}/{h['near']}, "
          f"far refused {h['far_refused']}/{h['far']}")
    w("  dry run: nothing stored" if opts.get("dry_run") else "  stored in the index metadata (admin: 索引元数据)"
      + (f"; default written to {answerability.DEFAULT_MODEL_PATH.name}" if opts.get("save_default") else ""))
    return report


# --- the phrasing table: everyday data questions and rule questions with data-ish words -------

PHRASINGS = Path(settings.BASE_DIR) / "eval" / "phrasings.jsonl"
# The table's expected date ranges are written for this day (a Wednesday), so they are exact.
PHRASINGS_TODAY = date(2026, 11, 18)


def load_phrasings(path=None) -> list[dict]:
    return load_golden(path or PHRASINGS)


def plan_params(params: dict) -> dict:
    """A plan's parameters in the table's shape: period as [start, end], no empty optionals."""
    out = {k: v for k, v in params.items() if v is not None or k == "store"}
    for key in ("period", "baseline"):
        if isinstance(out.get(key), dict):
            out[key] = [out[key]["start"], out[key]["end"]]
    return out


def check_phrasing(item: dict, today: date = PHRASINGS_TODAY) -> dict | None:
    """None when the router and the data planner get the item exactly right, else what they got."""
    from .data_guard import plan_data
    from .router import DATA, route_by_rules

    decision = route_by_rules(item["q"], today)
    got = {"intent": decision.intent, "reason": decision.reason}
    if decision.intent == DATA:
        plan = plan_data(item["q"], today=today)
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
