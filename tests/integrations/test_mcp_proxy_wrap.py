"""``mcp-proxy wrap|unwrap`` against hosts' configuration files in a temporary HOME."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from reviewer_app.hitl import SQLHITLBackend
from tests.conftest import REPO_ROOT
from tests.integrations.conftest import NOTES_SERVER, connect, pending_request

NOTES = {"command": sys.executable, "args": [str(NOTES_SERVER)], "env": {"NOTES_FILE": "/nonexistent/notes.txt"}}
REMOTE = {"type": "http", "url": "http://127.0.0.1:9/mcp"}


@pytest.fixture
def home(tmp_path: Path, subprocess_env: dict[str, str]) -> tuple[Path, dict[str, str]]:
    folder = tmp_path / "home"
    folder.mkdir()
    env = {**subprocess_env, "HOME": str(folder), "XDG_CONFIG_HOME": str(folder / ".config")}
    env.pop("CODEX_HOME", None)
    return folder, env


def cli(env: dict[str, str], *args: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reviewer_app", "mcp-proxy", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.reviewer-backup-*"))


def test_claude_code_user_scope_wraps_stdio_servers_and_unwrap_restores(
    home: tuple[Path, dict[str, str]], db_path: Path
) -> None:
    folder, env = home
    config = folder / ".claude.json"
    original = {"numStartups": 7, "mcpServers": {"notes": NOTES, "remote": REMOTE}, "projects": {}}
    config.write_text(json.dumps(original, indent=2))

    done = cli(env, "wrap", "claude-code", "--db", str(db_path))
    assert done.returncode == 0, done.stderr
    assert "wrapped notes" in done.stdout
    assert "skipped remote: not a stdio server" in done.stdout
    wrapped = json.loads(config.read_text())
    entry = wrapped["mcpServers"]["notes"]
    assert entry["args"][-4:] == ["--db", str(db_path), "--", sys.executable, str(NOTES_SERVER)][-4:]
    assert entry["args"][entry["args"].index("mcp-proxy") : entry["args"].index("mcp-proxy") + 3] == [
        "mcp-proxy",
        "--name",
        "notes",
    ]
    assert entry["env"] == NOTES["env"]
    assert wrapped["mcpServers"]["remote"] == REMOTE
    assert wrapped["numStartups"] == 7
    (backup,) = backups(config)
    assert json.loads(backup.read_text()) == original

    again = cli(env, "wrap", "claude-code")
    assert "skipped notes: already behind the proxy" in again.stdout
    assert json.loads(config.read_text()) == wrapped

    undone = cli(env, "unwrap", "claude-code")
    assert undone.returncode == 0, undone.stderr
    assert json.loads(config.read_text()) == original
    assert len(backups(config)) == 2


@pytest.mark.asyncio
async def test_a_wrapped_entry_runs_the_server_behind_the_proxy(
    home: tuple[Path, dict[str, str]], db_path: Path, backend: SQLHITLBackend, tmp_path: Path
) -> None:
    folder, env = home
    config = folder / ".claude.json"
    notes = {**NOTES, "env": {"NOTES_FILE": str(tmp_path / "notes.txt")}}
    config.write_text(json.dumps({"mcpServers": {"notes": notes}}))
    assert cli(env, "wrap", "claude-code", "--db", str(db_path)).returncode == 0
    entry = json.loads(config.read_text())["mcpServers"]["notes"]
    async with connect([entry["command"], *entry["args"]], {**env, **entry["env"]}) as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert "add_note" in names
        call = asyncio.ensure_future(session.call_tool("add_note", {"text": "via wrap"}))
        (record,) = await pending_request(backend)
        assert record["tool_name"] == "mcp__notes__add_note"
        call.cancel()


def test_claude_code_local_and_project_scopes(home: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    folder, env = home
    project = tmp_path / "project"
    project.mkdir()
    config = folder / ".claude.json"
    projects = {str(project.resolve()): {"mcpServers": {"a": NOTES}}}
    config.write_text(json.dumps({"mcpServers": {}, "projects": projects}))
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"b": NOTES, "c": NOTES}}))

    assert cli(env, "wrap", "claude-code", "--scope", "local", cwd=project).returncode == 0
    local = json.loads(config.read_text())["projects"][str(project.resolve())]["mcpServers"]["a"]
    assert "mcp-proxy" in local["args"]

    done = cli(env, "wrap", "claude-code", "--scope", "project", "c", cwd=project)
    assert done.returncode == 0, done.stderr
    shared = json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert "mcp-proxy" in shared["c"]["args"]
    assert shared["b"] == NOTES

    missing = cli(env, "wrap", "claude-code", "--scope", "project", "nope", cwd=project)
    assert missing.returncode == 2
    assert "no server named nope" in missing.stderr


def test_claude_desktop(home: tuple[Path, dict[str, str]]) -> None:
    folder, env = home
    config = folder / ".config" / "Claude" / "claude_desktop_config.json"
    config.parent.mkdir(parents=True)
    original = {"mcpServers": {"notes": NOTES}, "globalShortcut": "Ctrl+Space"}
    config.write_text(json.dumps(original))
    assert cli(env, "wrap", "claude-desktop", "--db", "reviews.db", cwd=folder).returncode == 0
    args = json.loads(config.read_text())["mcpServers"]["notes"]["args"]
    assert args[args.index("--db") + 1] == str(folder.resolve() / "reviews.db")
    assert cli(env, "unwrap", "claude-desktop").returncode == 0
    assert json.loads(config.read_text()) == original


CODEX = f"""# my codex settings
model = "o4-mini"

[mcp_servers.notes]
command = "{sys.executable}"
args = ["{NOTES_SERVER}"]  # the notes server
env = {{ NOTES_FILE = "/tmp/notes.txt" }}

[mcp_servers.docs]
url = "http://127.0.0.1:9/mcp"
"""


def test_codex_keeps_comments_and_unwrap_restores(home: tuple[Path, dict[str, str]], db_path: Path) -> None:
    folder, env = home
    config = folder / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX)
    done = cli(env, "wrap", "codex", "--db", str(db_path))
    assert done.returncode == 0, done.stderr
    assert "skipped docs" in done.stdout
    text = config.read_text()
    assert "# my codex settings" in text
    wrapped = tomllib.loads(text)["mcp_servers"]["notes"]
    assert wrapped["args"][-3:] == ["--", sys.executable, str(NOTES_SERVER)]
    assert wrapped["env"] == {"NOTES_FILE": "/tmp/notes.txt"}
    assert cli(env, "unwrap", "codex").returncode == 0
    assert tomllib.loads(config.read_text()) == tomllib.loads(CODEX)
    assert "# my codex settings" in config.read_text()


def test_bad_configuration_is_refused_and_left_alone(home: tuple[Path, dict[str, str]]) -> None:
    folder, env = home
    config = folder / ".claude.json"
    assert cli(env, "wrap", "claude-code").returncode == 2  # no file
    config.write_text("{not json")
    done = cli(env, "wrap", "claude-code")
    assert done.returncode == 2
    assert "not valid JSON" in done.stderr
    assert config.read_text() == "{not json"
    assert backups(config) == []
