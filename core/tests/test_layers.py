"""core ← ops ← knowledge ← workflow ← agent ← mcpserver: no app imports an app above it."""
import subprocess
import sys
from pathlib import Path

from django.conf import settings

from core import layers


def test_no_app_imports_an_app_above_it():
    proc = subprocess.run([sys.executable, "-c", "import core.layers as l; l.main()"], cwd=settings.BASE_DIR,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith("0 layering violations across 7 apps")


def test_the_check_sees_lazy_imports(tmp_path: Path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from workflow.chat import proposal_dict\n    import agent.actions\n")
    assert layers._imported_packages(module) == {"workflow", "agent"}


def test_the_layers_are_the_installed_apps_in_order():
    ours = [app for app in settings.INSTALLED_APPS if app in layers.LAYERS]
    assert ours == layers.LAYERS[:-1]
