"""Processes Reviewer starts run its own code, never a module planted in the directory they start in.

Why: ``python -m`` and ``python -c`` put the working directory first on the module path, and an agent writes files
in its project: a ``reviewer_app`` package (or a ``json.py``) planted there would run as Reviewer. The installed
hooks keep the project off the path (``-P``; tests/integrations/test_claude_code_install.py); so must the MCP
proxy's launcher written into a host's configuration and the audit walk's worker processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reviewer_app.integrations.mcp_proxy.hostconfig import launcher
from reviewer_app.persistence.audit_walk import RangeWorker


@pytest.fixture()
def planted(tmp_path: Path) -> tuple[Path, Path]:
    project = tmp_path / "project"
    marker = tmp_path / "planted-ran"
    plant = f"open({str(marker)!r}, 'w').close()\n"
    (project / "reviewer_app" / "persistence").mkdir(parents=True)
    for name in ("reviewer_app/__init__.py", "reviewer_app/__main__.py", "reviewer_app/persistence/__init__.py"):
        (project / name).write_text(plant)
    (project / "reviewer_app" / "persistence" / "audit_walk.py").write_text(plant + "def serve(): pass\n")
    (project / "json.py").write_text(plant)
    return project, marker


def test_the_mcp_proxys_launcher_runs_reviewer_not_the_projects_code(
    planted: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    project, marker = planted
    monkeypatch.setenv("PATH", str(project / "no-such-dir"))  # no installed script: the interpreter's own launcher
    command = launcher()
    assert command[0] == sys.executable
    ran = subprocess.run([*command, "--version"], check=False, cwd=project, capture_output=True, text=True, timeout=120)
    assert not marker.exists(), "code planted in the project ran as the MCP proxy"
    assert ran.returncode == 0, ran.stderr


def test_an_audit_worker_runs_reviewer_not_the_projects_code(
    planted: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    project, marker = planted
    monkeypatch.chdir(project)
    worker = RangeWorker(("not a task",))
    assert worker.result() is None  # the real worker refuses the bogus task
    worker.process.wait(timeout=120)
    assert not marker.exists(), "code planted in the working directory ran as an audit worker"
    assert os.getcwd() == str(project)


def test_the_launcher_never_takes_a_script_from_a_relative_path_entry(
    planted: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``.`` on ``PATH``, ``which`` finds a ``reviewer-app`` the agent wrote into the project; the host's
    configuration must never name it."""
    project, _ = planted
    script = project / "reviewer-app"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    monkeypatch.chdir(project)
    monkeypatch.setenv("PATH", ".")
    assert str(script) not in launcher() and "reviewer-app" not in " ".join(launcher())
