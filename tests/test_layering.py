"""domain, persistence, runtime and the HITL backend never import Qt; the UI never imports SQL."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_import_linter_contracts_hold() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint_imports)], cwd=REPO, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "broken" not in result.stdout.lower().replace("0 broken", "")


def test_headless_modules_do_not_load_qt_at_runtime() -> None:
    """Dynamic imports escape static analysis: load every headless module and look at sys.modules."""
    script = textwrap.dedent(
        """
        import importlib, pkgutil, sys
        import reviewer_app
        for info in pkgutil.walk_packages(reviewer_app.__path__, "reviewer_app."):
            name = info.name
            if name.startswith("reviewer_app.ui") or ".migrations" in name:
                continue
            importlib.import_module(name)
        import reviewer_app.cli
        qt = sorted(m for m in sys.modules if m.split(".")[0] in ("PySide6", "shiboken6", "qasync"))
        print(",".join(qt))
        """
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
