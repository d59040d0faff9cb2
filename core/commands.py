"""Base for `eval` and `bench`: a target name picks a function living in its app; the
figures it returns are printed by the target and optionally written as JSON."""
import json
import sys

from django.core.management.base import BaseCommand
from django.utils.module_loading import import_string


class TargetCommand(BaseCommand):
    targets: dict[str, str] = {}  # target name → dotted path of fn(command, options) -> dict

    def add_arguments(self, parser):
        parser.add_argument("target", choices=sorted(self.targets))
        parser.add_argument("--json", dest="json_path", help="write the figures to this file")

    def handle(self, *args, **opts):
        report = import_string(self.targets[opts["target"]])(self, opts)
        if opts["json_path"]:
            with open(opts["json_path"], "w") as fh:
                json.dump(report, fh, ensure_ascii=False, indent=2)
            self.stdout.write(f"wrote {opts['json_path']}")
        if report.get("exit_code"):
            sys.exit(report["exit_code"])
