"""Evaluation across corpora: `manage.py eval <target> --corpus NAME` and `manage.py eval all`.

`--corpus NAME` runs the target in a process of its own (SM_EVAL_CORPUS=NAME, SM_CORPUS_DIR =
the corpus's folder, so the lists beside one corpus never reach another) against a database
of its own (`<db>_eval_<name>`): migrated, its roles synced, the demo ops data seeded when its
questions need it, and the corpus ingested with nothing but `ingest` (what a new customer gets).
`eval all` does that for every corpus and prints one table: corpus × set × metric.

Never touches the database `make run` serves. Figures are computed, never typed in.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from django.conf import settings
from tqdm import tqdm

from knowledge.corpora import BARE_DIR, build_bare_copy, eval_corpora, eval_corpus

from .evaluation import AnswerTally, _run_item, eval_users
from .evaluation import clean_up_after as _clean_up_after

# The columns of `eval all`, in the order the issue lists them (and the JSON keys, per corpus and set).
ALL_METRICS = ("R@1", "R@5", "MRR", "answer_top1", "key_fact_hit", "false_refusals", "near_refusal", "far_refusal", "routing")
# Flags of `eval` passed through to the corpus's own process.
PASSED_FLAGS = ("agent_off", "dry_run", "save_default")


def corpus_environment(name: str) -> dict[str, str]:
    """The environment of the process that evaluates corpus `name`."""
    corpus = eval_corpus(name)
    if corpus.docs == BARE_DIR:
        build_bare_copy()
    return {**os.environ, "SM_EVAL_CORPUS": name, "SM_CORPUS_DIR": str(corpus.docs)}


def run_in_corpus_process(name: str, target: str, opts: dict, *, json_path: str | None = None, quiet: bool = False) -> int:
    """`manage.py eval target --corpus name` in a new process; its exit code."""
    argv = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "eval", target, "--corpus", name]
    argv += [f"--{flag.replace('_', '-')}" for flag in PASSED_FLAGS if opts.get(flag)]
    if json_path:
        argv += ["--json", json_path]
    out = subprocess.DEVNULL if quiet else None
    return subprocess.run(argv, env=corpus_environment(name), stdout=out, check=False).returncode


def prepare_corpus(name: str, *, stderr=None, apply_loco: bool = False) -> dict:
    """In the corpus's own process: switch to its database and bring its index up to date with
    `ingest` alone. Returns what was done, in figures."""
    from django.core.management import call_command

    from core.bench import use_bench_database
    from core.roles import sync_roles
    from knowledge.embedders import use_every_core_for_a_batch
    from knowledge.services import corpus_ingest
    from ops import seed

    use_every_core_for_a_batch()
    corpus = eval_corpus(name)
    if settings.SM_EVAL_CORPUS != name or Path(settings.SM_CORPUS_DIR).resolve() != corpus.docs.resolve():
        raise RuntimeError(f"corpus {name!r} is evaluated in its own process (SM_EVAL_CORPUS, SM_CORPUS_DIR): use --corpus")
    database = use_bench_database(name, kind="eval")
    loco = apply_left_out_fits(name) if apply_loco else []
    sync_roles()
    if corpus.seed_ops and not seed.has_ops_data():
        call_command("seed_ops", verbosity=0, stdout=stderr or sys.stderr)
    files = sorted(corpus.docs.rglob("*.md"))
    with tqdm(total=len(files), desc=f"ingest {name}", unit="doc", file=stderr or sys.stderr) as bar:
        report = corpus_ingest(path=corpus.docs, progress=lambda _n: bar.update(1))
    return {"database": database, "ingest": report.line(), "fits_without_this_corpus": loco}


# Targets whose figures are reported: they run with the fits made without the corpus. The
# targets that collect what the fits are made of run with the shipped choices.
REPORTED_TARGETS = ("figures", "retrieval", "agent")


def apply_left_out_fits(name: str) -> list[str]:
    """In this corpus's process: the fusion, rerank and answerability fits made without it
    (leave one corpus out), where the shipped files hold one. Returns which were applied."""
    from knowledge import answerability, rerank
    from knowledge.selectors import shipped_fusion_choice, use_fusion

    applied = []
    fusion = (shipped_fusion_choice().get("loco") or {}).get(name)
    if fusion:
        use_fusion(fusion)
        applied.append("fusion")
    model = (rerank.shipped_model().get("loco") or {}).get(name)
    if model:
        rerank.use_model(model)
        applied.append("rerank")
    scoring = (answerability.DEFAULT_MODEL.get("loco") or {}).get(name)
    if scoring:
        answerability.use_model(scoring)
        applied.append("answerability")
    return applied


def _routing(items: list[dict], users, today, attempts: int, tally: AnswerTally, progress) -> tuple[int, int, list[dict]]:
    right = total = 0
    misses = []
    for item in progress(items):
        for turn, result, _, _ in _run_item(item, users, today, attempts):
            if item["kind"] in ("policy", "refuse"):
                tally.add(item, turn, result)
            if "expect_intent" in turn:
                total += 1
                right += result.intent == turn["expect_intent"]
                if result.intent != turn["expect_intent"]:
                    misses.append({"id": item["id"], "query": turn["query"], "what": "routing",
                                   "expected": turn["expect_intent"], "got": result.intent})
    return right, total, misses


def set_figures(name: str, items: list[dict], users, today, *, stderr=None) -> dict:
    """One set's row of `eval all`: hybrid retrieval, the answers (key facts, first citation,
    refusals) and routing, with every miss."""
    from knowledge.evaluation import retrieval_figures, retrieval_items

    bar = lambda desc: (lambda xs: tqdm(xs, desc=f"{desc} {name}", file=stderr or sys.stderr))  # noqa: E731
    retrieval = retrieval_figures(retrieval_items(items), progress=bar("retrieval"))
    tally = AnswerTally()
    routed = [i for i in items if i.get("kind") in ("policy", "data", "both", "refuse", "conversation")]
    right, total, routing_misses = _routing(routed, users, today, settings.SM_AGENT_MAX_ATTEMPTS, tally, bar("answers"))
    answers = tally.figures()
    hybrid = retrieval["hybrid"]
    return {
        "R@1": hybrid["recall@1"], "R@5": hybrid["recall@5"], "MRR": hybrid["mrr"],
        "answer_top1": answers["answer_top1"], "key_fact_hit": answers["key_fact_hit"],
        "false_refusals": answers["false_refusals"], "answerable": answers["answerable"],
        "false_refusal_rate": round(answers["false_refusals"] / answers["answerable"], 4) if answers["answerable"] else None,
        "near_refusal": answers["near_refusal"], "far_refusal": answers["far_refusal"],
        "routing": round(right / total, 4) if total else None,
        "n": len(items), "retrieval_n": retrieval["n"],
        "misses": {"retrieval": retrieval["misses"], "answers": tally.misses, "routing": routing_misses},
    }


def eval_corpus_figures(cmd, opts) -> dict:
    """`eval figures --corpus NAME`: the corpus's row of `eval all` (tuning and held-out set)."""
    from knowledge.evaluation import load_sets
    from knowledge.models import IndexMeta
    from ops.tools import local_today

    name = settings.SM_EVAL_CORPUS
    prepared = opts.get("prepared") or {"database": "current", "ingest": ""}
    users = eval_users()
    today = local_today()
    started = time.perf_counter()
    report = {"corpus": name, **prepared}
    try:
        for set_name, items in load_sets().items():
            report[set_name] = set_figures(set_name, items, users, today, stderr=cmd.stderr)
    finally:
        _clean_up_after(users)
    meta = IndexMeta.objects.order_by("pk").first()
    report.update(embedder=meta.signature if meta else None, llm_backend=settings.SM_LLM_BACKEND,
                  seconds=round(time.perf_counter() - started, 1))
    w = cmd.stdout.write
    w(f"eval figures · corpus {name} · {prepared['ingest']}")
    for line in table_lines({name: report}):
        w(line)
    return report


def _cell(value, metric: str, row: dict) -> str:
    if value is None:
        return "-"
    if metric == "false_refusals":
        return f"{value}/{row.get('answerable', 0)}"
    return f"{value:.3f}"


def table_lines(reports: dict[str, dict]) -> list[str]:
    """corpus × set rows, one column per metric."""
    head = f"{'corpus':14s}{'set':9s}" + "".join(f"{m:>15s}" for m in ALL_METRICS)
    lines = [head]
    for corpus, report in reports.items():
        for set_name in ("tune", "holdout"):
            row = report.get(set_name)
            if not row:
                continue
            lines.append(f"{corpus:14s}{set_name:9s}" + "".join(f"{_cell(row.get(m), m, row):>15s}" for m in ALL_METRICS))
    return lines


def eval_all(cmd, opts) -> dict:
    """Every corpus, each in its own process and database; one table, optionally as JSON."""
    names = _names(opts)
    reports, failed = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            path = str(Path(tmp) / f"{name}.json")
            cmd.stderr.write(f"== {name}")
            code = run_in_corpus_process(name, "figures", opts, json_path=path, quiet=True)
            if code != 0 or not Path(path).exists():
                failed.append(name)
                continue
            reports[name] = json.loads(Path(path).read_text("utf-8"))
    w = cmd.stdout.write
    first = next(iter(reports.values()), {})
    w(f"eval all · embedder {first.get('embedder')} · LLM {first.get('llm_backend')} · {len(reports)} corpora"
      + (f" · FAILED: {', '.join(failed)}" if failed else ""))
    for line in table_lines(reports):
        w(line)
    return {"corpora": reports, "metrics": list(ALL_METRICS), "failed": failed, "exit_code": 1 if failed else 0}


# --- fitted across corpora, reported leave-one-corpus-out -------------------------------------

# Two names for one set of documents: leaving one out leaves both out.
TWINS = {"bundled": "bundled-bare", "bundled-bare": "bundled"}


def left_out(name: str, names: list[str]) -> list[str]:
    """The corpora a fit reported on `name` may see: every other one, and never its twin."""
    return [n for n in names if n != name and n != TWINS.get(name)]


def _children(cmd, target: str, names: list[str], opts: dict) -> dict[str, dict]:
    """`eval target --corpus NAME --json …` for every corpus; their reports by corpus."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            path = Path(tmp) / f"{name}.json"
            cmd.stderr.write(f"== {target} {name}")
            code = run_in_corpus_process(name, target, {}, json_path=str(path), quiet=True)
            if code != 0 or not path.exists():
                raise RuntimeError(f"eval {target} --corpus {name} failed (exit {code})")
            out[name] = json.loads(path.read_text("utf-8"))
    return out


def eval_tune_fusion_across(cmd, opts) -> dict:
    """`eval tune-fusion --across`: one fusion for every corpus, chosen on their tuning sets
    (mean R@1 + MRR over corpora, so no corpus outweighs another by its size); each corpus's
    held-out figure is reported with the choice made without it (leave one corpus out)."""
    from knowledge.evaluation import _fused_figures, _grid, candidates_from_json
    from knowledge.selectors import FUSION_CHOICE_PATH, default_fusion

    names = _names(opts)
    data = {name: {s: candidates_from_json(rows) for s, rows in report["sets"].items()}
            for name, report in _children(cmd, "candidates", names, opts).items()}
    grid = list(_grid())
    scores = {}  # (corpus, setting index) -> R@1 + MRR on the tuning set
    for i, params in enumerate(tqdm(grid, desc="fusion grid", file=cmd.stderr)):
        for name in names:
            f = _fused_figures(data[name]["tune"], params)
            scores[(name, i)] = f["recall@1"] + f["mrr"]

    def best(among: list[str]) -> dict:
        return grid[max(range(len(grid)), key=lambda i: (sum(scores[(n, i)] for n in among), -i))]

    chosen, loco = best(names), {name: best(left_out(name, names)) for name in names}
    before = default_fusion()
    report = {"grid_size": len(grid), "corpora": names, "chosen": chosen, "loco": loco, "before": before, "figures": {}}
    w = cmd.stdout.write
    w(f"tune-fusion --across · {len(grid)} settings · corpora {', '.join(names)}")
    w(f"  chosen on every tuning set: {chosen}")
    for name in names:
        row = {}
        for label, params in (("before", before), ("loco", loco[name]), ("chosen", chosen)):
            row[label] = {s: _fused_figures(data[name][s], params) for s in data[name]}
        report["figures"][name] = row
        h = row["loco"].get("holdout") or {}
        b = row["before"].get("holdout") or {}
        w(f"  {name:13s} held-out R@1 {b.get('recall@1', 0):.3f} → {h.get('recall@1', 0):.3f} (fit without it) · "
          f"R@5 {b.get('recall@5', 0):.3f} → {h.get('recall@5', 0):.3f} · MRR {b.get('mrr', 0):.3f} → {h.get('mrr', 0):.3f}")
    if not opts.get("dry_run"):
        FUSION_CHOICE_PATH.write_text(json.dumps({"chosen": chosen, "loco": loco, "corpora": names}, ensure_ascii=False, indent=1) + "\n",
                                      encoding="utf-8")
        w(f"  written to {FUSION_CHOICE_PATH.name} (the default of every index that stores no choice of its own)")
    return report


def _names(opts: dict) -> list[str]:
    return [n.strip() for n in (opts.get("corpora") or "").split(",") if n.strip()] or list(eval_corpora())


def eval_fit(cmd, opts) -> dict:
    """`eval fit`: the answerability model over every corpus's tuning questions (each corpus
    weighing the same), its threshold by `answerability.threshold_across`, and for each corpus
    the same fit made without it, which is what that corpus's held-out figures are reported with.
    Written to knowledge/answerability_e5.json (the model every index of the e5 embedder uses
    unless it stores one of its own)."""
    from knowledge import answerability

    names = _names(opts)
    reports = _children(cmd, "signals", names, opts)
    rows = {name: [r for r in report["rows"] if r["rounds"]] for name, report in reports.items()}
    full = answerability.fit_across({n: rows[n] for n in names})
    loco = {name: answerability.fit_across({n: rows[n] for n in left_out(name, names)}) for name in names}
    meta_fields = {"signature": "e5:multilingual-e5-small-q4:384", "backend": "e5"}
    report = {"corpora": names, "model": {**full, **meta_fields}, "figures": {}}
    w = cmd.stdout.write
    w(f"fit · corpora {', '.join(names)} · threshold {full['threshold']:.4f} ({full['threshold_rule']})")
    for f, c in zip(full["features"], full["coef"]):
        w(f"  {f:18s} coef {c:+.3f}")
    for name in names:
        figures = {s: answerability.refusal_figures(loco[name], [r for r in rows[name] if r["set"] == s]) for s in ("tune", "holdout", "bank")}
        report["figures"][name] = figures
        h = figures["holdout"]
        w(f"  {name:13s} held-out, fit without it: false refusals {h['false_refusals']}/{h['answerable']} · "
          f"near refused {h['near_refused']}/{h['near']} · far refused {h['far_refused']}/{h['far']} · threshold {loco[name]['threshold']:.4f}")
    if not opts.get("dry_run"):
        model = {**full, **meta_fields, "loco": {name: {**m, **meta_fields} for name, m in loco.items()}}
        answerability.DEFAULT_MODEL_PATH.write_text(json.dumps(model, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        w(f"  written to {answerability.DEFAULT_MODEL_PATH.name}")
    return report


def eval_fit_rerank(cmd, opts) -> dict:
    """`eval fit-rerank`: the learned rerank over every corpus's tuning questions; each corpus's
    held-out first-place figure from the fit made without it. Written to knowledge/rerank_e5.json."""
    from knowledge import rerank

    names = _names(opts)
    data = {name: report["sets"] for name, report in _children(cmd, "rerank-candidates", names, opts).items()}
    chosen = rerank.fit({n: data[n]["tune"] for n in names})
    loco = {name: rerank.fit({n: data[n]["tune"] for n in left_out(name, names)}) for name in names}
    report = {"corpora": names, "chosen": chosen, "figures": {}}
    w = cmd.stdout.write
    w(f"fit-rerank · corpora {', '.join(names)} · {len(chosen['features'])} features")
    for name in names:
        hold = data[name].get("holdout", [])
        fig = {"fused": rerank.top1(None, hold), "reranked": rerank.top1(loco[name], hold)}
        report["figures"][name] = fig
        w(f"  {name:13s} held-out R@1 {fig['fused']:.3f} fused → {fig['reranked']:.3f} reranked (fit without it)")
    if not opts.get("dry_run"):
        rerank.RERANK_MODEL_PATH.write_text(json.dumps({"chosen": chosen, "loco": loco, "corpora": names}, ensure_ascii=False, indent=1) + "\n",
                                            encoding="utf-8")
        rerank.shipped_model.cache_clear()
        w(f"  written to {rerank.RERANK_MODEL_PATH.name}")
    return report
