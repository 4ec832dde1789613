"""hook install / uninstall merge into existing settings files, keep everything else, and back up first."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.integrations.hook_helpers import hook_env

EXISTING = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./.env)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/audit-bash"}]}],
        "PermissionRequest": [{"matcher": "Write", "hooks": [{"type": "command", "command": "notify-send ask"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
    },
}


def cli(tmp_path: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run_in(tmp_path, [sys.executable, "-m", "reviewer_app", "hook", *args], cwd=cwd)


def run_in(
    tmp_path: Path, command: list[str], *, cwd: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, input=stdin, capture_output=True, text=True, check=False, env=hook_env(tmp_path), cwd=cwd, timeout=60
    )


def ours(settings: dict, event: str) -> list[dict]:
    return [h for g in settings["hooks"].get(event, []) for h in g["hooks"] if " hook claude-code " in h["command"]]


def test_install_merges_is_idempotent_and_uninstall_restores(tmp_path: Path, db_at_schema_head: Path) -> None:
    project = tmp_path / "project"
    settings_path = project / ".claude" / "settings.json"
    settings_path.parent.mkdir(parents=True)
    settings_path.write_text(json.dumps(EXISTING, indent=2))
    db = db_at_schema_head

    first = cli(tmp_path, "install", "claude-code", "--project", str(project), "--db", str(db))
    assert first.returncode == 0, first.stderr
    settings = json.loads(settings_path.read_text())
    assert settings["model"] == "opus" and settings["permissions"] == EXISTING["permissions"]
    assert settings["hooks"]["PreToolUse"] == EXISTING["hooks"]["PreToolUse"]
    assert settings["hooks"]["Stop"][0] == EXISTING["hooks"]["Stop"][0]
    assert settings["hooks"]["PermissionRequest"][0] == EXISTING["hooks"]["PermissionRequest"][0]
    [hook] = ours(settings, "PermissionRequest")
    assert hook["timeout"] == 600 and f"--db {db}" in hook["command"] and "--timeout 570" in hook["command"]
    # By default the session events come too: each prompt, each tool's result, the turn's end, the session's end.
    for event in ("UserPromptSubmit", "PostToolUse", "Stop", "SessionEnd"):
        [lifecycle] = ours(settings, event)
        assert lifecycle["command"].endswith(f"--event {event}") and f"--db {db}" in lifecycle["command"]
    assert [g.get("matcher") for g in settings["hooks"]["PostToolUse"]] == ["*"]
    # A prompt's record runs in the background: Claude Code does not wait for it before sending the prompt. The
    # rest is waited for (a tool result's order, a session end Claude Code would not wait for in the background).
    assert [hook.get("async") for hook in ours(settings, "UserPromptSubmit")] == [True]
    for event in ("PermissionRequest", "PostToolUse", "Stop", "SessionEnd"):
        assert all("async" not in hook for hook in ours(settings, event)), event
    backups = list(settings_path.parent.glob("settings.json.reviewer-backup-*"))
    assert len(backups) == 1 and json.loads(backups[0].read_text()) == EXISTING

    again = cli(tmp_path, "install", "claude-code", "--project", str(project), "--db", str(db))
    assert "already installed" in again.stdout
    assert json.loads(settings_path.read_text()) == settings
    assert len(list(settings_path.parent.glob("settings.json.reviewer-backup-*"))) == 1

    moved = cli(
        tmp_path,
        "install",
        "claude-code",
        "--project",
        str(project),
        "--db",
        str(db),
        "--event",
        "PreToolUse",
        "--matcher",
        "Bash|Write",
        "--hook-timeout",
        "120",
    )
    assert moved.returncode == 0
    settings = json.loads(settings_path.read_text())
    assert ours(settings, "PermissionRequest") == []
    [hook] = ours(settings, "PreToolUse")
    assert hook["timeout"] == 120 and "--timeout 90" in hook["command"]
    assert settings["hooks"]["PreToolUse"][0] == EXISTING["hooks"]["PreToolUse"][0]

    removed = cli(tmp_path, "uninstall", "claude-code", "--project", str(project))
    assert removed.returncode == 0
    assert json.loads(settings_path.read_text()) == EXISTING

    gate_only = cli(tmp_path, "install", "claude-code", "--project", str(project), "--db", str(db), "--no-sessions")
    assert gate_only.returncode == 0, gate_only.stderr
    settings = json.loads(settings_path.read_text())
    assert ours(settings, "PermissionRequest") and not ours(settings, "PostToolUse") and not ours(settings, "Stop")
    assert settings["hooks"]["Stop"] == EXISTING["hooks"]["Stop"] and "SessionEnd" not in settings["hooks"]


def test_scopes_and_a_broken_file_is_left_alone(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    local = cli(tmp_path, "install", "claude-code", "--scope", "local", "--project", str(project), "--db", "x.db")
    assert local.returncode == 0
    assert ours(json.loads((project / ".claude" / "settings.local.json").read_text()), "PermissionRequest")
    user = cli(tmp_path, "install", "claude-code", "--scope", "user", "--db", "x.db")
    assert user.returncode == 0
    assert ours(json.loads((tmp_path / "home" / ".claude" / "settings.json").read_text()), "PermissionRequest")

    broken = project / ".claude" / "settings.json"
    broken.write_text("{ not json")
    result = cli(tmp_path, "install", "claude-code", "--project", str(project), "--db", "x.db")
    assert result.returncode == 2 and "not valid JSON" in result.stderr
    assert broken.read_text() == "{ not json"


def test_codex_install_into_hooks_json(tmp_path: Path) -> None:
    hooks_path = tmp_path / "home" / ".codex" / "hooks.json"
    hooks_path.parent.mkdir(parents=True)
    existing = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done", "timeout": 30}]}]}}
    hooks_path.write_text(json.dumps(existing))
    result = cli(tmp_path, "install", "codex", "--db", str(tmp_path / "r.db"))
    assert result.returncode == 0, result.stderr
    hooks = json.loads(hooks_path.read_text())
    assert hooks["hooks"]["Stop"] == existing["hooks"]["Stop"]
    [group] = hooks["hooks"]["PermissionRequest"]
    assert "matcher" not in group and " hook codex " in group["hooks"][0]["command"]
    assert cli(tmp_path, "uninstall", "codex").returncode == 0
    assert json.loads(hooks_path.read_text()) == existing


def test_the_installed_hook_imports_nothing_from_the_project_it_runs_in(
    tmp_path: Path, db_at_schema_head: Path
) -> None:
    """The host runs the hook in the project, where the agent writes files: ``python -m`` would put that
    directory first on the module path, so a ``json.py`` (or a ``reviewer_app`` package) the agent wrote there
    would run as the hook and answer every later call. The installed command (and the watchdog's) keeps the
    project off the path (``-P``), so the planted code never runs and the hook answers as before."""
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    marker = tmp_path / "planted-ran"
    plant = f"open({str(marker)!r}, 'w').close()\n"
    (project / "json.py").write_text(plant + "raise SystemExit(0)\n")
    (project / "_sqlite3.py").write_text(plant)
    (project / "reviewer_app").mkdir()
    (project / "reviewer_app" / "__init__.py").write_text(plant)
    (project / "reviewer_app" / "__main__.py").write_text(plant + 'print(\'{"decision": "allow"}\')\n')
    db = db_at_schema_head
    installed = cli(tmp_path, "install", "claude-code", "--project", str(project), "--db", str(db))
    assert installed.returncode == 0, installed.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    [hook] = ours(settings, "PermissionRequest")
    payload = {
        "session_id": "planted",
        "transcript_path": str(project / "none.jsonl"),
        "cwd": str(project),
        "hook_event_name": "PermissionRequest",
        "tool_name": "Bash",
        "tool_input": {"command": "rm -rf /"},
    }
    command = ["/bin/sh", "-c", hook["command"] + " --timeout 1 --on-timeout deny"]
    answered = run_in(tmp_path, command, cwd=project, stdin=json.dumps(payload))
    assert not marker.exists(), "code the agent planted in the project ran as the hook"
    decision = json.loads(answered.stdout)["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny", answered
