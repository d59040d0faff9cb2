"""`manage.py eval <target>`: evaluation on eval/golden.jsonl, printed and optionally JSON.

Targets live in their apps: retrieval (knowledge), agent / equivalence / calibrate (agent).
"""
from core.commands import TargetCommand


class Command(TargetCommand):
    help = "Evaluate: retrieval, agent, equivalence, calibrate."
    targets = {
        "retrieval": "knowledge.evaluation.eval_retrieval",
        "agent": "agent.evaluation.eval_agent",
        "equivalence": "agent.evaluation.eval_equivalence",
        "calibrate": "agent.evaluation.eval_calibrate",
    }

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--agent-off", action="store_true", help="agent: run with SM_AGENT_MAX_ATTEMPTS=0")
