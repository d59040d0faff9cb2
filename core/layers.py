"""The app layering, checked: core ← ops ← knowledge ← workflow ← agent ← mcpserver ← channels
(channels, like mcpserver, is an interface layer: it calls the services below it).

A lower app never imports a higher one (nor the project package `storemind`, which wires
them all together). The check reads every module's imports with `ast`, including imports
inside functions, so a lazy import cannot hide a dependency. Tests are exempt: an app's
tests may drive the apps above it. Run: python -c "import core.layers as l; l.main()"
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

LAYERS = ["core", "ops", "knowledge", "workflow", "agent", "mcpserver", "channels", "storemind"]
ROOT = Path(__file__).resolve().parent.parent


def _modules(app: str):
    for path in sorted((ROOT / app).rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if "tests" in parts:
            continue
        yield path


def _imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def violations() -> list[str]:
    rank = {name: i for i, name in enumerate(LAYERS)}
    problems = []
    for app in LAYERS[:-1]:  # the project package may import everything
        for path in _modules(app):
            for package in sorted(_imported_packages(path)):
                if package in rank and rank[package] > rank[app]:
                    problems.append(f"{path.relative_to(ROOT)} imports {package} (above {app})")
    return problems


def main() -> None:
    problems = violations()
    for line in problems:
        print(line)
    print(f"{len(problems)} layering violations across {len(LAYERS) - 1} apps")
    sys.exit(1 if problems else 0)
