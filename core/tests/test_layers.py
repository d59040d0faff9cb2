"""core ← ops ← knowledge ← workflow ← agent ← mcpserver ← channels: no app imports an app above it,
checked by import-linter's layers contract in pyproject.toml (lazy imports inside functions too)."""
import os
import subprocess
import sys
from pathlib import Path

import tomllib
from django.conf import settings

LINT = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"]


def _lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(LINT, cwd=root, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(root)})


def _contract() -> dict:
    config = tomllib.loads((Path(settings.BASE_DIR) / "pyproject.toml").read_text("utf-8"))["tool"]["importlinter"]
    return config["contracts"][0]


def test_no_app_imports_an_app_above_it():
    proc = _lint(Path(settings.BASE_DIR))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Contracts: 1 kept, 0 broken." in proc.stdout


def test_a_lazy_import_of_an_app_above_is_a_broken_contract(tmp_path: Path):
    # The contract, over two apps of its own: a function that imports the app above breaks it.
    for app in ("low", "high"):
        (tmp_path / app).mkdir()
        (tmp_path / app / "__init__.py").write_text("")
    (tmp_path / "low" / "m.py").write_text("def f():\n    from high import n  # noqa\n")
    (tmp_path / "high" / "n.py").write_text("")
    (tmp_path / "pyproject.toml").write_text('[tool.importlinter]\nroot_packages = ["low", "high"]\n\n'
                                             '[[tool.importlinter.contracts]]\nname = "layers"\ntype = "layers"\n'
                                             'layers = ["high", "low"]\n')
    proc = _lint(tmp_path)
    assert proc.returncode != 0 and "low is not allowed to import high" in proc.stdout, proc.stdout


def test_the_layers_are_the_installed_apps_in_order():
    layers = _contract()["layers"][::-1]  # bottom first
    ours = [app for app in settings.INSTALLED_APPS if app in layers]
    assert ours == layers[:-1] and layers[-1] == "storemind"
