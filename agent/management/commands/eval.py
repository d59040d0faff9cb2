"""`manage.py eval <target>`: evaluation on the tuning set (eval/golden.jsonl) and the held-out set
(eval/holdout.jsonl), printed side by side and optionally written as JSON.

Lives in the agent app (the top of the stack): retrieval figures come from knowledge, answers from the agent.
"""
from core.commands import TargetCommand


class Command(TargetCommand):
    help = "Evaluate: retrieval, agent, equivalence, calibrate."
    targets = {
        "retrieval": "agent.evaluation.eval_retrieval",
        "agent": "agent.evaluation.eval_agent",
        "equivalence": "agent.evaluation.eval_equivalence",
        "calibrate": "agent.evaluation.eval_calibrate",
    }

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--agent-off", action="store_true", help="agent: run with SM_AGENT_MAX_ATTEMPTS=0")
