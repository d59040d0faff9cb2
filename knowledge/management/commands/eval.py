"""`manage.py eval <target>`: evaluation on eval/golden.jsonl, printed and optionally JSON.

Targets live in their apps: retrieval (knowledge), agent / equivalence / calibrate (agent).
"""
import json
import sys

from django.core.management.base import BaseCommand
from django.utils.module_loading import import_string

TARGETS = {
    "retrieval": "knowledge.evaluation.eval_retrieval",
    "agent": "agent.evaluation.eval_agent",
    "equivalence": "agent.evaluation.eval_equivalence",
    "calibrate": "agent.evaluation.eval_calibrate",
}


class Command(BaseCommand):
    help = "Evaluate: retrieval, agent, equivalence, calibrate."

    def add_arguments(self, parser):
        parser.add_argument("target", choices=sorted(TARGETS))
        parser.add_argument("--json", dest="json_path")
        parser.add_argument("--agent-off", action="store_true", help="agent: run with SM_AGENT_MAX_ATTEMPTS=0")

    def handle(self, *args, **opts):
        report = import_string(TARGETS[opts["target"]])(self, opts)
        if opts["json_path"]:
            with open(opts["json_path"], "w") as fh:
                json.dump(report, fh, ensure_ascii=False, indent=2)
            self.stdout.write(f"wrote {opts['json_path']}")
        if report.get("exit_code"):
            sys.exit(report["exit_code"])
