"""A command's files are judged where the shell opens them: relative to the directory it runs in, which the payload's
``cwd`` names and a ``cd`` in the command changes.

Why: ``cd ~/.ssh && cat config`` reads the SSH configuration and ``cd .git && tee config`` rewrites a git
configuration that can run commands, though neither word is sensitive as text. Judged as text, a wildcard allow
(``--allow-tools Bash``, ``Bash(cat:*)``) settled them; an agent could switch Reviewer off the same way
(``cd ~/.claude && tee settings.json``). What the engine cannot place (``cd "$D"``, ``cd -``) is asked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewer_app.domain.lean_risk import wildcard_surely_settles
from reviewer_app.domain.risk import assess
from reviewer_app.domain.rules import Rule, ToolCall, evaluate

NOW = 1_000_000.0


@pytest.fixture()
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    home = tmp_path / "home"
    for directory in (".ssh", ".aws", ".kube", ".claude", "ws/src", "ws/.git/hooks", "elsewhere"):
        (home / directory).mkdir(parents=True)
    (home / ".ssh" / "config").write_text("Host *\n")
    (home / ".kube" / "config").write_text("token: x\n")
    (home / "ws" / ".git" / "config").write_text("[core]\n")
    (home / "ws" / "src" / "main.py").write_text("print()\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CDPATH", raising=False)
    monkeypatch.setenv("REVIEWER_CONFIG", str(tmp_path / "no-config.toml"))
    return home


def settled_by_wildcard(command: str, cwd: Path) -> bool:
    call = ToolCall("Bash", {"command": command}, cwd=str(cwd))
    return evaluate([Rule("allow", "Bash", created_at=NOW)], call, NOW) is not None


CHANGED_INTO_SENSITIVE = [
    "cd ~/.ssh && cat config",
    "cd ~/.kube; cat config",
    "cd ../.ssh && cat config",
    "cd .git && echo x | tee config",
    "cd .git/hooks && tee pre-commit",
    "cd .git && cat < config",
    "cd .git && echo '[core]' > config",
    "cd ~/.claude && tee settings.json",
    "(cd ~/.ssh && cat config)",
    "pushd ~/.ssh && cat config",
    "cd src && cd ~/.ssh && cat config",
    "builtin cd ~/.ssh && cat config",
    "env -C ~/.ssh cat config",
    "env --chdir=.git tee config",
    "sh -c 'cd ~/.ssh && cat config'",
]


@pytest.mark.parametrize("command", CHANGED_INTO_SENSITIVE)
def test_a_file_named_after_a_cd_is_judged_in_that_directory(home: Path, command: str) -> None:
    workspace = home / "ws"
    assert assess(ToolCall("Bash", {"command": command}, cwd=str(workspace)), scan_secrets=False).high, command
    assert not settled_by_wildcard(command, workspace), command


@pytest.mark.parametrize(
    ("where", "command"),
    [(".ssh", "cat config"), (".kube", "head -n 2 config"), ("ws/.git", "tee config"), ("ws/.git", "cat < config"),
     (".ssh", "cp config /tmp/x"), (".claude", "echo {} > settings.json")],
)  # fmt: skip
def test_a_bare_word_is_a_file_in_the_payloads_working_directory(home: Path, where: str, command: str) -> None:
    cwd = home / where
    assert assess(ToolCall("Bash", {"command": command}, cwd=str(cwd)), scan_secrets=False).high, command
    assert not settled_by_wildcard(command, cwd), command
    assert not wildcard_surely_settles("Bash", {"command": command}, str(cwd)), command


@pytest.mark.parametrize("command", ['cd "$D" && cat config', "cd - && cat config", "pushd +1 && cat config"])
def test_a_directory_the_engine_cannot_place_is_asked(home: Path, command: str) -> None:
    workspace = home / "ws"
    assert assess(ToolCall("Bash", {"command": command}, cwd=str(workspace)), scan_secrets=False).high, command
    assert not settled_by_wildcard(command, workspace), command


def test_cdpath_is_followed_as_the_shell_would(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CDPATH", str(home))
    assert not settled_by_wildcard("cd .ssh && cat config", home / "ws")


def test_a_write_after_leaving_the_workspace_is_outside_it(home: Path) -> None:
    risk = assess(ToolCall("Bash", {"command": "cd ~/elsewhere && tee out.txt"}, cwd=str(home / "ws")))
    assert risk.level == "medium" and any("outside the workspace" in reason for reason in risk.reasons), risk


@pytest.mark.parametrize(
    "command",
    ["cd src && cat main.py", "cd src && ls", "ls -la", "echo hello", "cat src/main.py", "cd src; cd ..; ls",
     "cd ~/elsewhere && ls"],
)  # fmt: skip
def test_ordinary_directory_changes_stay_low(home: Path, command: str) -> None:
    workspace = home / "ws"
    assert assess(ToolCall("Bash", {"command": command}, cwd=str(workspace)), scan_secrets=False).level == "low"
    assert settled_by_wildcard(command, workspace), command


@pytest.mark.parametrize("tool", ["Grep", "Glob", "LS"])
def test_a_search_tool_with_no_path_searches_the_working_directory(home: Path, tool: str) -> None:
    """Grep, Glob and LS search the working directory when given no path: run in ~/.ssh, they read it."""
    call = ToolCall(tool, {"pattern": "."}, cwd=str(home / ".ssh"))
    assert assess(call, scan_secrets=False).high
    assert evaluate([Rule("allow", tool, created_at=NOW)], call, NOW) is None
    assert not wildcard_surely_settles(tool, {"pattern": "."}, str(home / ".ssh"))
    ordinary = ToolCall(tool, {"pattern": "."}, cwd=str(home / "ws"))
    assert not assess(ordinary, scan_secrets=False).high
    assert wildcard_surely_settles(tool, {"pattern": "."}, str(home / "ws"))
