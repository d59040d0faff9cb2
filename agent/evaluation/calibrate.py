"""`eval signals | calibrate`: the answerability signals of every judged round, and the refusal model
fitted on the tuning set (the held-out set only reported)."""
from __future__ import annotations

import json

from django.conf import settings
from tqdm import tqdm

from knowledge.evaluation import load_sets, same_heading
from knowledge.models import IndexMeta
from ops.tools import local_today

from ..pipeline import answer_question
from .answers import clean_up_after, eval_users


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
