"""A hook installed before the interpreter's ``-P`` flag keeps its old command until it is installed again.

Why: the host runs the hook in the project, where the agent writes files; ``python -m reviewer_app`` without ``-P``
puts that directory first on the module path, so a ``reviewer_app`` package the agent planted there runs as the
hook and answers every later call. ``hook status`` names every such file (exit 1) with the command that fixes it,
and ``hook install`` again rewrites the entry (saying so), keeping everything else in the file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from reviewer_app.integrations.claude_code.events import Host
from reviewer_app.integrations.claude_code.install import claude_settings_path, codex_hooks_path, hook_command
from reviewer_app.integrations.codex import install_codex
from reviewer_app.integrations.hosts.install import install_host, install_with_sessions, settings_path
from tests.integrations.agent_run import agent_env, reviewer

OLD_BASE = [sys.executable, "-m", "reviewer_app"]  # what hook install wrote before -P
ANOTHER_HOOK = {"type": "command", "command": "/usr/local/bin/audit-bash"}


def _old_install(host: str, home: Path, project: Path, db: str) -> Path:
    """Install ``host``'s hook as the earlier version did (the same installer, the command without ``-P``), next to
    a hook of the operator's own."""
    if host == "codex":
        path = codex_hooks_path(home)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [ANOTHER_HOOK]}]}}))
        install_codex(OLD_BASE, db, hook_timeout=600, home=home)
        return path
    if host == "claude-code":
        path = claude_settings_path("project", project)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"model": "opus", "hooks": {"Stop": [{"hooks": [ANOTHER_HOOK]}]}}))
        command = hook_command(OLD_BASE, Host.CLAUDE_CODE, db, 600)
        install_with_sessions(path, "PermissionRequest", command, "*", 600)
        return path
    path = settings_path(host, "user", project, home)
    command = hook_command(OLD_BASE, Host(host), db, 600)
    install_host(host, path, command, event=None, hook_timeout=600)
    return path


def _installed_before_safe_path(tmp_path: Path, host: str) -> tuple[dict[str, str], Path, str, Path]:
    """(the host's environment, the project, the database, the file) after an install as the earlier version did."""
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    db = str(tmp_path / "r.db")
    return agent_env(home, CODEX_HOME=str(home / ".codex")), project, db, _old_install(host, home, project, db)


HOSTS = ["claude-code", "codex", "gemini", "qwen", "factory", "copilot", "cursor", "opencode"]


@pytest.mark.parametrize("host", HOSTS)
def test_a_hook_installed_before_safe_path_is_named_and_upgraded_in_place(tmp_path: Path, host: str) -> None:
    env, project, _, path = _installed_before_safe_path(tmp_path, host)
    before = path.read_text()
    assert " -P " not in before

    status = reviewer(env, "hook", "status", "--project", str(project))
    assert status.returncode == 1, status.stdout + status.stderr
    assert f"stale: {path} ({host}," in status.stdout
    assert f"reviewer-app hook upgrade --project {project}" in status.stdout
    assert path.read_text() == before  # status only looks

    upgraded = reviewer(env, "hook", "upgrade", "--project", str(project))
    assert upgraded.returncode == 0, upgraded.stderr
    assert f"upgraded: {path}" in upgraded.stdout
    after = path.read_text()
    # Every command of ours now runs with -P, every other word as it was (the options the operator chose).
    assert after.replace(f"{sys.executable} -m reviewer_app", f"{sys.executable} -P -m reviewer_app") == after
    assert after == before.replace(f"{sys.executable} -m reviewer_app", f"{sys.executable} -P -m reviewer_app")
    assert list(path.parent.glob(f"{path.name}.reviewer-backup-*")) or host == "opencode"

    again = reviewer(env, "hook", "status", "--project", str(project))
    assert again.returncode == 0, again.stdout
    assert f"ok: {path}" in again.stdout and "stale" not in again.stdout


@pytest.mark.parametrize("host", ["claude-code", "codex", "copilot", "opencode"])
def test_installing_again_replaces_a_hook_installed_before_safe_path(tmp_path: Path, host: str) -> None:
    env, project, db, path = _installed_before_safe_path(tmp_path, host)
    installed = reviewer(env, "hook", "install", host, "--project", str(project), "--db", db)
    assert installed.returncode == 0, installed.stderr
    assert "replaced a hook installed without -P" in installed.stdout
    after = path.read_text()
    assert f"{sys.executable} -P -m reviewer_app hook {host}" in after
    assert after.count("-m reviewer_app hook") == after.count("-P -m reviewer_app hook")
    if host in ("claude-code", "codex"):
        assert json.loads(after)["hooks"]["Stop"][0]["hooks"][0] == ANOTHER_HOOK  # the operator's own hook stays
    quiet = reviewer(env, "hook", "install", host, "--project", str(project), "--db", db)
    assert "replaced" not in quiet.stdout


def test_status_with_nothing_installed_says_so(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    status = reviewer(agent_env(tmp_path / "home"), "hook", "status", "--project", str(project))
    assert status.returncode == 0 and "no Reviewer hook is installed" in status.stdout
