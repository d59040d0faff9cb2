"""`manage.py eval <target>`: evaluation on the tuning set (eval/golden.jsonl) and the held-out set
(eval/holdout.jsonl), printed side by side and optionally written as JSON.

Lives in the agent app (the top of the stack): retrieval figures come from knowledge, answers from the agent.
"""
from core.commands import TargetCommand
from knowledge.evaluation import persistent_query_vectors


class Command(TargetCommand):
    help = "Evaluate: retrieval, agent, equivalence, calibrate, tune-fusion."
    targets = {
        "retrieval": "agent.evaluation.eval_retrieval",
        "agent": "agent.evaluation.eval_agent",
        "equivalence": "agent.evaluation.eval_equivalence",
        "calibrate": "agent.evaluation.eval_calibrate",
        "tune-fusion": "knowledge.evaluation.eval_tune_fusion",
    }

    def handle(self, *args, **opts):
        # Repeated runs reuse the query vectors of earlier ones (the equivalence run goes
        # through a Celery worker, which must not depend on this process's cache).
        if opts["target"] == "equivalence":
            return super().handle(*args, **opts)
        with persistent_query_vectors():
            return super().handle(*args, **opts)

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--agent-off", action="store_true", help="agent: run with SM_AGENT_MAX_ATTEMPTS=0")
        parser.add_argument("--save-default", action="store_true",
                            help="calibrate: also write the model as the default a fresh clone uses (knowledge/answerability_e5.json)")
        parser.add_argument("--dry-run", action="store_true", help="tune-fusion / calibrate: print the choice, store nothing")
