"""The lean ``--allow-tools`` check: it says "certainly settles" only where the full check
(``rules.wildcard_may_settle``: the risk module, the shell parser, the sensitive-path matcher) says so too."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.domain import lean_risk, sensitive
from reviewer_app.domain.rules import wildcard_may_settle
from reviewer_app.domain.shell_effects import command_effects
from reviewer_app.domain.toolcall import ToolCall

PROGRAMS = [*sorted(lean_risk.LOW_RISK_PROGRAMS), "rm", "sudo", "env", "git", "find", "python", "bash", "less"]
WORDS = [
    "bench",
    "notes",
    "id_rsa",
    "ID_RSA_old",
    "id_ed25519",
    "credentials",
    "Credentials",
    "authorized_keys",
    "reviewer-app",
    "reviewerdb",
    "secret-notes",
    "-la",
    "--all",
    "-n",
    "5",
    "done",
    "-rf",
    ".env",
    "~/x",
    "a/b",
    "$HOME",
]


def _full(tool: str, arguments: dict[str, Any], cwd: str | None) -> bool:
    return wildcard_may_settle(ToolCall(tool, arguments, cwd=cwd))


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace whose plain names include links to a private key; the operator's config adds patterns."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("key")
    project = tmp_path / "project"
    project.mkdir()
    for name in ("notes", "bench", "key"):
        os.symlink(home / ".ssh" / "id_rsa", project / name)
    config = tmp_path / "config.toml"
    config.write_text('[sensitive]\npaths = ["secret-*", "!nothing", "/abs/dir/"]\n')
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv(sensitive.CONFIG_ENV, str(config))
    monkeypatch.setenv("REVIEWER_DB", "/reviewerdb")  # at the root: its name alone is a sensitive pattern
    return project


def test_a_certain_settlement_is_the_full_checks(workspace: Path) -> None:
    told = 0
    for program, count in itertools.product(PROGRAMS, (0, 1, 2)):
        for words in itertools.product(WORDS, repeat=count):
            command = " ".join((program, *words))
            arguments = {"command": command}
            for cwd in (str(workspace), None, "/"):
                if lean_risk.wildcard_surely_settles("Bash", arguments, cwd):
                    told += 1
                    assert _full("Bash", arguments, cwd), (command, cwd)
                    assert command_effects(command).reasons == (), command
    assert told > 150  # plain commands are told without the parser
    for command in ("echo finished", "ls -la", "cat README", "head -n 5 README"):
        assert lean_risk.wildcard_surely_settles("Bash", {"command": command}, str(workspace)), command


def test_a_name_that_is_a_symlink_is_left_to_the_full_check(workspace: Path) -> None:
    """``notes`` links to a private key: the full check finds it high, so the lean one must not be certain."""
    for command in ("cat notes", "head -n 5 notes", "tail key", "echo bench"):
        assert not lean_risk.wildcard_surely_settles("Bash", {"command": command}, str(workspace)), command
        assert not _full("Bash", {"command": command}, str(workspace)), command
    assert not lean_risk.wildcard_surely_settles("Bash", {"command": "cat README"}, None)  # no workspace: unsure


@pytest.mark.parametrize(
    "command",
    ["cat id_rsa", "cat ID_RSA_old", "cat credentials", "echo secret-notes", "echo reviewerdb", "echo reviewer-app"],
)
def test_a_word_a_sensitive_pattern_may_match_is_left_to_the_full_check(workspace: Path, command: str) -> None:
    assert not lean_risk.wildcard_surely_settles("Bash", {"command": command}, str(workspace))


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("Bash", {"command": "echo bench", "run_in_background": True}),
        ("Bash", {"command": "echo bench", "dangerouslyDisableSandbox": True}),
        ("Bash", {"command": 5}),
        ("Bash", {"cmd": "echo bench"}),
        ("exec_command", {"cmd": "echo bench", "command": "echo bench"}),
        ("Read", {"file_path": "notes"}),
        ("read_file", {"file_path": "/etc/passwd"}),
        ("mcp__fs__read", {"path": "notes"}),
        ("mcp__fs__list", {}),
        ("Shell", {"command": "echo bench > out"}),
        ("run_shell_command", {"command": "echo 'bench'"}),
        ("Execute", {"command": "echo bench; rm -rf /"}),
        ("bash", {"command": "echo  bench\nrm -rf /"}),
    ],
)
def test_what_needs_the_full_check_is_left_to_it(workspace: Path, tool: str, arguments: dict[str, Any]) -> None:
    assert not lean_risk.wildcard_surely_settles(tool, arguments, "/tmp")


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("Glob", {"pattern": "**/*.py"}),
        ("Grep", {"pattern": "TODO"}),
        ("todo_write", {"todos": []}),
        ("glob", {"pattern": "*.md"}),
        ("web_fetch", {"url": "https://example.com"}),
        ("Shell", {"command": "ls -la", "cwd": "/tmp"}),
        ("run_shell_command", {"command": "echo finished", "description": "d"}),
        ("Execute", {"command": "pwd"}),
        ("exec_command", {"cmd": "wc -l"}),
    ],
)
def test_plainly_harmless_calls_are_told_here_as_the_full_check_tells_them(
    workspace: Path, tool: str, arguments: dict[str, Any]
) -> None:
    # Not /tmp: the test's home lies under it, and a Grep there reads the home's keys.
    clean = workspace.parent / "clean"
    clean.mkdir()
    assert lean_risk.wildcard_surely_settles(tool, arguments, str(clean))
    assert _full(tool, arguments, str(clean)) and _full(tool, arguments, None)


@pytest.mark.parametrize(
    "env",
    [
        {"XDG_CONFIG_HOME": "/srv/config", "HOME": "/home/a"},
        {"XDG_CONFIG_HOME": "", "HOME": "/home/a"},
        {"HOME": "/home/a/"},
        {"REVIEWER_CONFIG": "/etc/reviewer.toml", "HOME": "/home/a"},
    ],
)
def test_the_config_file_is_the_sensitive_modules(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for name in ("XDG_CONFIG_HOME", sensitive.CONFIG_ENV):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    found = lean_risk.config_file()
    assert found is not None and Path(found) == sensitive.config_file()


def test_a_config_file_it_cannot_place_leaves_words_to_the_full_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(sensitive.CONFIG_ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/dir")
    assert lean_risk.config_file() is None
    assert not lean_risk.wildcard_surely_settles("Bash", {"command": "echo bench"}, "/tmp")
    assert lean_risk.wildcard_surely_settles("Bash", {"command": "ls -la"}, "/tmp")  # options name no file
