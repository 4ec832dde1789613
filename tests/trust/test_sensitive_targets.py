"""Sensitive targets are never settled by a default or a wildcard rule, only by a rule naming that very path or a
person (issue 23): private keys, credential stores, shell start-up files, the agent hosts' own settings, hooks and
MCP configuration (an agent that rewrites them switches Reviewer off), Reviewer's own files, git hooks."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reviewer_app.domain.risk import assess
from reviewer_app.domain.rules import Rule, ToolCall, evaluate
from reviewer_app.hitl import SQLHITLBackend
from tests.integrations.hook_helpers import REPO_ROOT, hook_env, run_hook

NOW = 1_000_000.0
HOME = "/home/ann"
WORKSPACE = "/home/ann/project"


def rule(effect: str, pattern: str) -> Rule:
    return Rule(effect, pattern, created_at=NOW)  # type: ignore[arg-type]


def verdict(pattern: str, tool: str, path: str, *, effect: str = "allow", cwd: str = WORKSPACE) -> str | None:
    arguments = {"file_path": path} if tool in ("Read", "Write", "Edit") else {"path": path}
    found = evaluate([rule(effect, pattern)], ToolCall(tool, arguments, cwd=cwd), NOW)
    return found.effect if found is not None else None


@pytest.fixture(autouse=True)
def _home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", HOME)
    monkeypatch.setenv("REVIEWER_CONFIG", str(tmp_path / "no-config.toml"))


READS = [
    f"{HOME}/.ssh/id_rsa",
    f"{HOME}/.ssh/id_ed25519",
    f"{HOME}/keys/server.pem",
    f"{HOME}/keys/tls.key",
    f"{HOME}/.aws/credentials",
    f"{HOME}/.config/gcloud/application_default_credentials.json",
    f"{HOME}/.azure/accessTokens.json",
    f"{HOME}/.kube/config",
    f"{HOME}/.docker/config.json",
    f"{HOME}/.netrc",
    f"{HOME}/.npmrc",
    f"{HOME}/.pypirc",
    f"{HOME}/.gnupg/private-keys-v1.d/x.key",
    f"{HOME}/.local/share/keyrings/login.keyring",
    f"{HOME}/.mozilla/firefox/abc.default/logins.json",
    f"{HOME}/.config/google-chrome/Default/Cookies",
    f"{HOME}/.bashrc",
    f"{HOME}/.zshrc",
    f"{HOME}/.profile",
    f"{HOME}/.claude.json",
    f"{HOME}/.claude/settings.json",
    f"{HOME}/.local/share/reviewer-app/reviewer.db",
    f"{HOME}/.config/reviewer-app/config.toml",
]


@pytest.mark.parametrize("path", READS)
def test_a_sensitive_read_is_high_risk_and_never_allowed_by_a_wildcard(path: str) -> None:
    call = ToolCall("Read", {"file_path": path}, cwd=WORKSPACE)
    assert assess(call, scan_secrets=False).high, path
    assert verdict("Read", "Read", path) is None
    assert verdict(f"Read(/{HOME}/**)", "Read", path) is None
    assert verdict(f"Read(/{path})", "Read", path) == "allow"  # an exact rule naming that very path


HOST_FILES = [
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".claude/hooks/check.sh",
    ".mcp.json",
    ".codex/config.toml",
    ".gemini/settings.json",
    ".cursor/mcp.json",
    ".vscode/settings.json",
    ".git/hooks/pre-commit",
    ".git/config",
    ".env",
    ".env.local",
]


@pytest.mark.parametrize("relative", HOST_FILES)
def test_write_everything_never_rewrites_the_hosts_own_settings_hooks_or_credentials(relative: str) -> None:
    assert verdict("Write(**)", "Write", f"{WORKSPACE}/{relative}") is None
    assert verdict("Write(**)", "Write", relative) is None
    assert verdict("Edit", "Edit", relative) is None
    assert verdict("Read(**)", "Read", relative) is None
    assert verdict(f"Write(/{relative})", "Write", relative) == "allow"


def test_ordinary_workspace_files_are_still_allowed_by_a_glob() -> None:
    assert verdict("Write(**)", "Write", "src/app.py") == "allow"
    assert verdict("Read(**)", "Read", f"{WORKSPACE}/README.md") == "allow"
    assert verdict("Write(**)", "Write", ".claude-notes.md") == "allow"


def test_the_operator_extends_the_list_in_the_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.toml"
    assert verdict("Read(**)", "Read", "vault/prod.txt") == "allow"
    config.write_text('[sensitive]\npaths = ["vault/", "*.sqlite"]\n')
    monkeypatch.setenv("REVIEWER_CONFIG", str(config))
    assert verdict("Read(**)", "Read", "vault/prod.txt") is None
    assert verdict("Read(**)", "Read", "data/app.sqlite") is None
    assert verdict("Read(**)", "Read", "src/app.py") == "allow"


def _reviewer(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reviewer_app", *args],
        capture_output=True,
        text=True,
        env={**hook_env(tmp_path), "PYTHONPATH": str(REPO_ROOT)},
        timeout=120,
        check=False,
    )


def _pre_tool_use(tool: str, tool_input: dict, cwd: Path) -> dict:
    return {
        "session_id": "s-targets",
        "transcript_path": "",
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": f"toolu_{tool}_{len(json.dumps(tool_input))}",
    }


@pytest.mark.asyncio
async def test_no_hidden_default_the_pretooluse_install_seeds_visible_rules(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend
) -> None:
    """The defaults are rules in the rules table (listed, attributed, revocable); none settles a private key."""
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("print('hi')\n")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    installed = _reviewer(
        tmp_path, "hook", "install", "claude-code", "--event", "PreToolUse", "--project", str(project),
        "--db", str(db_path),
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    assert "--allow-tools" not in (project / ".claude" / "settings.json").read_text()
    listed = _reviewer(tmp_path, "rules", "list", "--db", str(db_path))
    assert listed.returncode == 0, listed.stderr
    seeded = [line for line in listed.stdout.splitlines() if "installed by hook install" in line]
    assert any(" Read(**) " in f" {line} " for line in seeded), listed.stdout

    _, answer, err = run_hook(
        tmp_path, db_path, _pre_tool_use("Read", {"file_path": str(project / "src" / "app.py")}, project)
    )
    assert answer is not None and answer["hookSpecificOutput"]["permissionDecision"] == "allow", err
    _, answer, err = run_hook(
        tmp_path, db_path, _pre_tool_use("Read", {"file_path": str(home / ".ssh" / "id_rsa")}, project),
        "--timeout", "1",
    )  # fmt: skip
    assert answer is not None and answer["hookSpecificOutput"]["permissionDecision"] == "ask", err
    [record] = [
        r for r in await backend.list_records(_all()) if r["data"]["arguments"].get("file_path", "").endswith("id_rsa")
    ]
    assert not str(record.get("decided_by") or "").startswith("rule:")
    removed = _reviewer(tmp_path, "hook", "uninstall", "claude-code", "--project", str(project), "--db", str(db_path))
    assert removed.returncode == 0, removed.stderr
    assert not [e for e in await backend.list_rules() if e.rule.note.startswith("installed by hook install")]


def _all():
    from reviewer_app.domain.records import RequestQuery

    return RequestQuery(statuses=())


def test_the_permission_request_hook_settles_nothing_by_default(tmp_path: Path, db_path: Path) -> None:
    """Under PermissionRequest the host already asked: a read-only tool is not allowed by a hidden default."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    payload = _pre_tool_use("Read", {"file_path": str(home / ".ssh" / "id_rsa")}, tmp_path)
    payload["hook_event_name"] = "PermissionRequest"
    import asyncio

    asyncio.run(SQLHITLBackend(db_path).aclose())
    code, answer, err = run_hook(tmp_path, db_path, payload, "--timeout", "1")
    assert code == 0 and answer is None, (answer, err)  # no decision: the host's own prompt


# -- siblings: the same targets reached through a shell prefix rule or an MCP server's tool ----------------------


@pytest.mark.parametrize(
    "command", ["cat ~/.ssh/id_rsa", f"cat {HOME}/.aws/credentials", "cat .env", "head -c 100 < ~/.netrc"]
)
def test_a_prefix_rule_never_reads_a_sensitive_target(command: str) -> None:
    call = ToolCall("Bash", {"command": command}, cwd=WORKSPACE)
    assert evaluate([rule("allow", "Bash(cat:*)"), rule("allow", "Bash(head:*)")], call, NOW) is None
    assert evaluate([rule("allow", f"Bash({command})")], call, NOW) is not None  # the exact command, named


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("mcp__filesystem__read_text_file", {"path": f"{HOME}/.ssh/id_ed25519"}),
        ("mcp__filesystem__write_file", {"path": f"{WORKSPACE}/.claude/settings.json", "content": "{}"}),
        ("mcp__filesystem__read_multiple_files", {"paths": ["README.md", f"{HOME}/.aws/credentials"]}),
        ("mcp__filesystem__move_file", {"source": "a.txt", "destination": f"{HOME}/.bashrc"}),
    ],
)
def test_a_whole_mcp_server_rule_never_touches_a_sensitive_target(tool: str, arguments: dict) -> None:
    call = ToolCall(tool, arguments, cwd=WORKSPACE)
    assert evaluate([rule("allow", "mcp__filesystem__*")], call, NOW) is None
    assert evaluate([rule("allow", "mcp__filesystem__read_text_file")], call, NOW) is None


def test_case_does_not_hide_a_target_on_a_case_insensitive_file_system() -> None:
    assert verdict("Write(**)", "Write", ".Claude/Settings.json") is None
    assert verdict("Read(**)", "Read", ".ENV") is None


def test_a_symlink_into_a_credential_store_is_caught(tmp_path: Path) -> None:
    home = tmp_path / "h"
    (home / ".kube" / "sub").mkdir(parents=True)
    workspace = tmp_path / "ws"
    (workspace / "foo").mkdir(parents=True)
    (workspace / "foo" / "l").symlink_to(home / ".kube" / "sub")
    (workspace / "docs").symlink_to(home / ".kube")
    for path in ("docs/config", "foo/l/../config"):
        call = ToolCall("Read", {"file_path": path}, cwd=str(workspace))
        assert assess(call, scan_secrets=False).high, path
        assert evaluate([rule("allow", "Read(**)")], call, NOW) is None


def test_a_bare_word_naming_a_symlink_to_a_key_or_start_up_file_is_caught(tmp_path: Path) -> None:
    """``cat notes`` reads a private key when ``notes`` links to one: the word is a path here, though it has no
    slash, so a wildcard allow (``--allow-tools Bash``, ``Bash(cat:*)``) must not settle it; nor ``tee log`` when
    ``log`` links to a shell start-up file."""
    home = tmp_path / "h"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("key")
    (home / ".bashrc").write_text("")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes").symlink_to(home / ".ssh" / "id_rsa")
    (workspace / "log").symlink_to(home / ".bashrc")
    (workspace / "plain.txt").write_text("hello")
    for command in ("cat notes", "head -n 3 notes", "tee log", "cp plain.txt log", "cat < notes", "echo hi > log"):
        call = ToolCall("Bash", {"command": command}, cwd=str(workspace))
        assert assess(call, scan_secrets=False).high, command
        assert evaluate([rule("allow", "Bash")], call, NOW) is None, command
    for command in ("cat plain.txt", "cat < plain.txt", "echo hi > new.txt"):
        harmless = ToolCall("Bash", {"command": command}, cwd=str(workspace))
        assert not assess(harmless, scan_secrets=False).high, command


PARTS = [".ssh", "id_rsa", "id_rsa.pub", "a.pem", "x.key", ".env", ".env.prod", "src", ".claude", "settings.json",
         ".git", "hooks", "config", ".config", "gcloud", "docs", "README.md", ".mcp.json", ".vscode", "Library",
         "Keychains", ".bashrc", "credentials", "home", "ann", ".local", "share", "keyrings", ".kube"]  # fmt: skip


@functools.cache
def _gitignore_spec() -> Any:
    """pathspec's gitignore matching of the table (the reference), built once: building it for each example was
    most of the property's CPU."""
    import pathspec

    from reviewer_app.domain.sensitive import SENSITIVE_TARGETS

    return pathspec.GitIgnoreSpec.from_lines([pattern.casefold() for pattern, _ in SENSITIVE_TARGETS])


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from(PARTS), min_size=1, max_size=6))
def test_the_fast_matcher_agrees_with_pathspec(parts: list[str]) -> None:
    """The folded regular expression decides exactly as pathspec's gitignore matching of the same table."""
    from reviewer_app.domain.sensitive import _matcher

    path = "/".join(parts).casefold()
    assert _matcher(())(path) == bool(_gitignore_spec().match_file(path)), path


@pytest.mark.parametrize("xdg", [None, "/srv/xdg"])
def test_reviewers_own_directories_are_those_the_app_uses(monkeypatch: pytest.MonkeyPatch, xdg: str | None) -> None:
    from reviewer_app.config import config_dir, data_dir
    from reviewer_app.domain.sensitive import user_directory

    for variable in ("XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        if xdg is None:
            monkeypatch.delenv(variable, raising=False)
        else:
            monkeypatch.setenv(variable, f"{xdg}/{variable.lower()}")
    assert user_directory("config") == config_dir() and user_directory("data") == data_dir()
    assert verdict("Write(//**)", "Write", str(data_dir() / "reviewer.db")) is None
    assert verdict("Write(//**)", "Write", str(config_dir() / "agents.toml")) is None


def test_a_verdict_follows_the_file_system_as_it_is_now(tmp_path: Path) -> None:
    """A long-running process (the window, the runtime's gate) asks again for the same command: ``cat notes`` was
    harmless while notes was a file, and reads a key once notes links to one (a ``git pull`` or an approved
    script can make the link). No verdict that depends on the file system is reused."""
    home = tmp_path / "h"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("key")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes").write_text("plain")
    call = ToolCall("Bash", {"command": "cat notes"}, cwd=str(workspace))
    assert not assess(call, scan_secrets=False).high
    assert evaluate([rule("allow", "Bash(cat:*)")], call, NOW) is not None
    (workspace / "notes").unlink()
    (workspace / "notes").symlink_to(home / ".ssh" / "id_rsa")
    assert assess(call, scan_secrets=False).high
    assert evaluate([rule("allow", "Bash(cat:*)")], call, NOW) is None


DIRECTORY_WHOLE = [
    "grep -r . ~/.ssh",
    "tar czf /tmp/k.tgz ~/.ssh",
    "zip -r /tmp/x ~/.aws",
    "cp -r ~/.ssh /tmp/x",
    "cp -r evil/. ~/.claude",
    "cp -rT evil ~/.claude",
    "cp -t ~/.ssh key.pub",
    "mv evil ~/.claude",
    "tar -C ~/.ssh -xf x.tar",
    "unzip x.zip -d ~/.claude",
    "rg . ~/.aws",
    "cp -r evil/. .git/hooks",
]


@pytest.mark.parametrize("command", DIRECTORY_WHOLE)
def test_a_sensitive_directory_named_whole_is_caught(command: str) -> None:
    """``grep -r . ~/.ssh`` prints every key and ``cp -r evil/. ~/.claude`` rewrites the host's settings: a
    sensitive directory named without a file in it (no trailing slash) is as sensitive as its files, so a common
    wildcard allow (``Bash(grep:*)``, ``Bash(cp:*)``) must not settle it."""
    call = ToolCall("Bash", {"command": command}, cwd=WORKSPACE)
    assert assess(call, scan_secrets=False).high, command
    assert evaluate([rule("allow", "Bash")], call, NOW) is None, command


@pytest.mark.parametrize(("tool", "path"), [("Grep", "~/.ssh"), ("Glob", "/home/ann/.aws"), ("LS", "~/.gnupg")])
def test_a_file_tool_given_a_sensitive_directory_is_caught(tool: str, path: str) -> None:
    call = ToolCall(tool, {"pattern": ".", "path": path}, cwd=WORKSPACE)
    assert assess(call, scan_secrets=False).high, (tool, path)
    assert evaluate([rule("allow", f"{tool}(**)")], call, NOW) is None


@pytest.mark.parametrize("command", ["ls src", "grep -r TODO src", "cp -r src /tmp/backup", "tar czf out.tgz src"])
def test_ordinary_directories_stay_as_they_were(command: str) -> None:
    assert not assess(ToolCall("Bash", {"command": command}, cwd=WORKSPACE), scan_secrets=False).high, command


def test_a_file_tool_whose_keys_disagree_is_asked() -> None:
    """``edit`` reads its file from ``file_path``, ``path`` or ``filePath``: given two different files, which one
    the host opens cannot be told, so no wildcard may settle it (``~/.bashrc`` may be the one)."""
    call = ToolCall("edit", {"file_path": "src/a.py", "path": "~/.bashrc"}, cwd=WORKSPACE)
    assert assess(call, scan_secrets=False).high
    assert evaluate([rule("allow", "edit")], call, NOW) is None
