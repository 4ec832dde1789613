"""``hook install|uninstall`` for every host: merged into the host's own file, everything else kept, a backup,
idempotent, and undone by uninstall."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integrations.agent_run import agent_env, reviewer

# host → (its file under HOME, what an operator already had there, where Reviewer's entries go)
EXISTING: dict[str, tuple[str, dict[str, Any], list[str]]] = {
    "gemini": (
        ".gemini/settings.json",
        {
            "model": {"name": "gemini-3.5-pro"},
            "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "lint.sh"}]}]},
        },
        ["BeforeTool"],
    ),
    "qwen": (
        ".qwen/settings.json",
        {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify.sh"}]}]}, "ui": {"theme": "dark"}},
        ["PreToolUse"],
    ),
    "factory": (".factory/settings.json", {"model": "custom"}, ["PreToolUse"]),
    "copilot": (
        ".copilot/hooks/reviewer.json",
        {"version": 1, "hooks": {"sessionStart": [{"type": "command", "bash": "echo hi"}]}},
        ["preToolUse"],
    ),
    "cursor": (
        ".cursor/hooks.json",
        {"version": 1, "hooks": {"afterFileEdit": [{"command": "./format.sh"}]}},
        ["beforeShellExecution", "beforeMCPExecution"],
    ),
}


def _commands(hooks: dict[str, Any], event: str) -> list[str]:
    found = []
    for entry in hooks.get(event, []):
        for inner in entry.get("hooks", [entry]):
            found.append(inner.get("command") or inner.get("bash"))
    return found


@pytest.mark.parametrize("host", list(EXISTING))
def test_install_merges_keeps_everything_else_and_uninstall_undoes_it(
    tmp_path: Path, fresh_db: Callable[[str], Path], host: str
) -> None:
    relative, before, events = EXISTING[host]
    home = tmp_path / "home"
    path = home / relative
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(before, indent=2))
    env = agent_env(home)
    db = str(fresh_db("r.db"))

    first = reviewer(env, "hook", "install", host, "--db", db)
    assert first.returncode == 0, first.stderr
    assert f"installed: {path}" in first.stdout and "previous version kept as" in first.stdout
    assert f"hook {host} --db {db}" in first.stdout  # it prints the command it wrote
    merged = json.loads(path.read_text())
    for key, value in before.items():
        if key != "hooks":
            assert merged[key] == value
    for event, entries in before.get("hooks", {}).items():
        for entry in entries:
            assert entry in merged["hooks"][event]
    for event in events:
        [ours] = [command for command in _commands(merged["hooks"], event) if f"hook {host}" in command]
        assert f"--db {db}" in ours

    again = reviewer(env, "hook", "install", host, "--db", db)
    assert again.returncode == 0 and again.stdout.startswith("already installed")
    assert json.loads(path.read_text()) == merged
    backups = list(path.parent.glob(f"{path.name}.reviewer-backup-*"))
    assert len(backups) == 1 and json.loads(backups[0].read_text()) == before

    removed = reviewer(env, "hook", "uninstall", host)
    assert removed.returncode == 0 and removed.stdout.startswith("removed from")
    left = json.loads(path.read_text())
    assert {key: value for key, value in left.items() if key != "version"} == {
        key: value for key, value in before.items() if key != "version"
    }


@pytest.mark.parametrize("host", list(EXISTING))
def test_a_broken_settings_file_is_never_overwritten(tmp_path: Path, host: str) -> None:
    home = tmp_path / "home"
    path = home / EXISTING[host][0]
    path.parent.mkdir(parents=True)
    path.write_text("{ not json")
    result = reviewer(agent_env(home), "hook", "install", host, "--db", str(tmp_path / "r.db"))
    assert result.returncode == 2 and "not valid JSON" in result.stderr
    assert path.read_text() == "{ not json"


def test_opencode_gets_a_plugin_file_that_runs_the_hook(tmp_path: Path, fresh_db: Callable[[str], Path]) -> None:
    home = tmp_path / "home"
    env = agent_env(home)
    env.pop("XDG_CONFIG_HOME", None)
    db = str(fresh_db("r.db"))
    first = reviewer(env, "hook", "install", "opencode", "--db", db)
    assert first.returncode == 0, first.stderr
    plugin = home / ".config" / "opencode" / "plugin" / "reviewer.js"
    text = plugin.read_text()
    assert '"tool.execute.before"' in text and f"hook opencode --db {db}" in text
    assert reviewer(env, "hook", "install", "opencode", "--db", db).stdout.startswith("already installed")
    assert reviewer(env, "hook", "uninstall", "opencode").stdout.startswith("removed from")
    assert not plugin.exists()

    plugin.write_text("// someone else's plugin\n")
    refused = reviewer(env, "hook", "install", "opencode", "--db", db)
    assert refused.returncode == 2 and "not Reviewer's plugin" in refused.stderr
    assert reviewer(env, "hook", "uninstall", "opencode").stdout.startswith("not installed in")
    assert plugin.read_text() == "// someone else's plugin\n"


@pytest.mark.parametrize("host", ["gemini", "qwen", "factory"])
def test_a_claude_format_file_installs_as_it_uninstalls_an_empty_event(tmp_path: Path, host: str) -> None:
    """Installing into a Claude-format file reads ``"<event>": null`` as no entries, as uninstalling it does."""
    from reviewer_app.integrations.hosts.install import install_host, uninstall_host

    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"hooks": {"Notification": None}, "ui": {"theme": "dark"}}))
    install_host(host, path, "reviewer-app hook gemini", event=None, hook_timeout=30)
    installed = json.loads(path.read_text())
    assert "Notification" not in installed["hooks"] and installed["ui"] == {"theme": "dark"}
    commands = [
        entry["command"] for groups in installed["hooks"].values() for group in groups for entry in group["hooks"]
    ]
    assert "reviewer-app hook gemini" in commands
    uninstall_host(host, path)
    assert json.loads(path.read_text()) == {"ui": {"theme": "dark"}}
