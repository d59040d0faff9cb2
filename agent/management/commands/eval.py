"""`manage.py eval <target>`: evaluation on a corpus's tuning set and held-out set, printed side
by side and optionally written as JSON. Without `--corpus`: the bundled corpus in the current
database (what `make run` serves); with `--corpus NAME`: that corpus in a database and a
process of its own (agent/corpus_eval.py). `eval all` is every corpus in one table.

Lives in the agent app (the top of the stack): retrieval figures come from knowledge, answers from the agent.
"""
import sys

from django.conf import settings

from core.commands import TargetCommand
from knowledge.evaluation import persistent_query_vectors


class Command(TargetCommand):
    help = "Evaluate: retrieval, agent, figures, all, equivalence, calibrate, tune-fusion."
    targets = {
        "retrieval": "agent.evaluation.eval_retrieval",
        "agent": "agent.evaluation.eval_agent",
        "figures": "agent.corpus_eval.eval_corpus_figures",
        "signals": "agent.evaluation.eval_signals",
        "candidates": "knowledge.evaluation.eval_candidates",
        "fit": "agent.corpus_eval.eval_fit",
        "rerank-candidates": "knowledge.rerank.eval_rerank_candidates",
        "fit-rerank": "agent.corpus_eval.eval_fit_rerank",
        "all": "agent.corpus_eval.eval_all",
        "equivalence": "agent.evaluation.eval_equivalence",
        "calibrate": "agent.evaluation.eval_calibrate",
        "tune-fusion": "knowledge.evaluation.eval_tune_fusion",
    }

    def handle(self, *args, **opts):
        from agent.corpus_eval import prepare_corpus, run_in_corpus_process

        target, corpus = opts["target"], opts.get("corpus")
        if target == "tune-fusion" and opts.get("across"):
            self.targets = {**self.targets, "tune-fusion": "agent.corpus_eval.eval_tune_fusion_across"}
        if target in ("all", "fit", "fit-rerank") or opts.get("across"):  # each corpus in a process of its own
            return super().handle(*args, **opts)
        if corpus and settings.SM_EVAL_CORPUS != corpus:
            from knowledge.corpora import eval_corpus

            try:
                eval_corpus(corpus)
            except KeyError as exc:
                self.stderr.write(str(exc.args[0]))
                sys.exit(2)
            sys.exit(run_in_corpus_process(corpus, target, opts, json_path=opts["json_path"]))
        if corpus:
            from agent.corpus_eval import REPORTED_TARGETS

            opts["prepared"] = prepare_corpus(corpus, stderr=self.stderr, apply_loco=target in REPORTED_TARGETS)
        # Repeated runs reuse the query vectors of earlier ones (the equivalence run goes
        # through a Celery worker, which must not depend on this process's cache).
        if target == "equivalence":
            return super().handle(*args, **opts)
        with persistent_query_vectors():
            return super().handle(*args, **opts)

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--corpus", help="evaluate this corpus (bundled, bundled-bare, or a folder of eval/corpora/) "
                                             "in a database of its own; default: the bundled corpus in the current database")
        parser.add_argument("--corpora", help="all, --across: a comma-separated subset of the corpora (default: every one)")
        parser.add_argument("--across", action="store_true",
                            help="tune-fusion: one choice over every corpus (each in its own process and database), "
                                 "reported leave-one-corpus-out, written to knowledge/fusion_e5.json")
        parser.add_argument("--agent-off", action="store_true", help="agent: run with SM_AGENT_MAX_ATTEMPTS=0")
        parser.add_argument("--save-default", action="store_true",
                            help="calibrate: also write the model as the default a fresh clone uses (knowledge/answerability_e5.json)")
        parser.add_argument("--dry-run", action="store_true", help="tune-fusion / calibrate: print the choice, store nothing")
