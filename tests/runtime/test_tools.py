"""Tools on real folders: workspace confinement, schema validation, shell runs with timeouts and output caps."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.runtime.tools import (
    ToolArgumentsError,
    ToolContext,
    ToolRegistry,
    ToolSpec,
    WorkspaceEscape,
    builtin_tools,
    resolve_in_workspace,
)

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell and symlinks")


def names_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def same_dir(printed: str, folder: Path) -> bool:
    return Path(printed).resolve() == folder.resolve()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    return ToolContext(workspace=workspace, session_id="s1", invocation_id="i1", shell_timeout_s=10.0)


@pytest.fixture
def tools() -> ToolRegistry:
    return builtin_tools()


@pytest.mark.asyncio
async def test_write_then_read_round_trip(tools: ToolRegistry, ctx: ToolContext, workspace: Path) -> None:
    content = "line one\nünïcödé ✓\n"
    wrote = await tools.execute("write_file", {"path": "sub/dir/notes.txt", "content": content}, ctx)
    assert wrote.ok, wrote.output
    assert (workspace / "sub" / "dir" / "notes.txt").read_text(encoding="utf-8") == content
    read = await tools.execute("read_file", {"path": "sub/dir/notes.txt"}, ctx)
    assert read.ok
    assert read.output == content
    assert read.duration_ms >= 0
    # Overwrite replaces the whole file and leaves no temporary file behind.
    assert (await tools.execute("write_file", {"path": "sub/dir/notes.txt", "content": "v2"}, ctx)).ok
    assert (await tools.execute("read_file", {"path": "sub/dir/notes.txt"}, ctx)).output == "v2"
    assert sorted(p.name for p in (workspace / "sub" / "dir").iterdir()) == ["notes.txt"]


@pytest.mark.asyncio
async def test_read_missing_file_and_directory(tools: ToolRegistry, ctx: ToolContext, workspace: Path) -> None:
    missing = await tools.execute("read_file", {"path": "nope.txt"}, ctx)
    assert not missing.ok
    assert missing.output == "error: no such file: nope.txt"
    (workspace / "d").mkdir()
    assert "is a directory" in (await tools.execute("read_file", {"path": "d"}, ctx)).output


@pytest.mark.asyncio
async def test_read_file_is_capped(tools: ToolRegistry, workspace: Path) -> None:
    (workspace / "big.txt").write_text("x" * 5000, encoding="utf-8")
    small = ToolContext(workspace=workspace, session_id="s", invocation_id="i", output_cap_bytes=1000)
    result = await tools.execute("read_file", {"path": "big.txt"}, small)
    assert result.ok
    assert result.output.startswith("x" * 1000)
    assert "[file truncated: showing 1000 of 5000 bytes]" in result.output


@pytest.mark.asyncio
async def test_list_dir(tools: ToolRegistry, ctx: ToolContext, workspace: Path) -> None:
    assert (await tools.execute("list_dir", {}, ctx)).output == "(empty directory)"
    (workspace / "b.txt").write_text("b", encoding="utf-8")
    (workspace / "a").mkdir()
    (workspace / "a" / "inner.py").write_text("", encoding="utf-8")
    root = await tools.execute("list_dir", {}, ctx)
    assert root.ok
    assert root.output.splitlines() == ["a/", "b.txt"]
    assert (await tools.execute("list_dir", {"path": "."}, ctx)).output == root.output
    assert (await tools.execute("list_dir", {"path": "a"}, ctx)).output == "inner.py"
    not_dir = await tools.execute("list_dir", {"path": "b.txt"}, ctx)
    assert not not_dir.ok
    assert "not a directory" in not_dir.output


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("../x", "'..' is not allowed"),
        ("a/../../x", "'..' is not allowed"),
        ("/etc/passwd", "absolute paths are not allowed"),
        ("C:\\Windows\\win.ini", "absolute paths are not allowed"),
    ],
)
@pytest.mark.asyncio
async def test_refuses_paths_outside(
    tools: ToolRegistry, ctx: ToolContext, workspace: Path, tmp_path: Path, path: str, fragment: str
) -> None:
    with pytest.raises(WorkspaceEscape, match=fragment):
        resolve_in_workspace(workspace, path)
    before = names_in(tmp_path)
    result = await tools.execute("write_file", {"path": path, "content": "pwned"}, ctx)
    assert not result.ok
    assert fragment in result.output
    assert result.output.startswith("error: ")
    assert names_in(tmp_path) == before
    assert names_in(workspace) == []
    read = await tools.execute("read_file", {"path": path}, ctx)
    assert not read.ok
    assert fragment in read.output


@posix_only
@pytest.mark.asyncio
async def test_refuses_symlinks_that_lead_outside(
    tools: ToolRegistry, ctx: ToolContext, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP-SECRET-CONTENT", encoding="utf-8")
    (workspace / "linkdir").symlink_to(outside, target_is_directory=True)
    (workspace / "secret").symlink_to(outside / "secret.txt")
    (workspace / "dangling").symlink_to(outside / "new.txt")

    for rel in ("linkdir/x.txt", "secret", "dangling", "linkdir/deeper/y.txt"):
        with pytest.raises(WorkspaceEscape, match="leads outside the workspace"):
            resolve_in_workspace(workspace, rel)
        result = await tools.execute("write_file", {"path": rel, "content": "pwned"}, ctx)
        assert not result.ok
        assert "leads outside the workspace" in result.output
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "TOP-SECRET-CONTENT"
    read = await tools.execute("read_file", {"path": "secret"}, ctx)
    assert not read.ok
    assert "TOP-SECRET-CONTENT" not in read.output
    listing = await tools.execute("list_dir", {"path": "linkdir"}, ctx)
    assert not listing.ok

    # A symlink that stays inside the workspace is fine.
    (workspace / "real").mkdir()
    (workspace / "alias").symlink_to(workspace / "real", target_is_directory=True)
    assert (await tools.execute("write_file", {"path": "alias/ok.txt", "content": "fine"}, ctx)).ok
    assert (workspace / "real" / "ok.txt").read_text(encoding="utf-8") == "fine"


def test_validation_errors_name_the_field(tools: ToolRegistry) -> None:
    with pytest.raises(ToolArgumentsError, match="write_file: missing required field 'content'"):
        tools.validate("write_file", {"path": "a.txt"})
    with pytest.raises(ToolArgumentsError, match="field 'path' must be string, got integer"):
        tools.validate("write_file", {"path": 7, "content": "x"})
    with pytest.raises(ToolArgumentsError, match="field 'timeout_s' must be number, got string"):
        tools.validate("run_shell", {"command": "ls", "timeout_s": "5"})
    with pytest.raises(ToolArgumentsError, match=r"unexpected field.*'colour'"):
        tools.validate("read_file", {"path": "a", "colour": "red"})
    with pytest.raises(ToolArgumentsError, match=r"field 'options\.1' must be string"):
        tools.validate("ask_user", {"question": "Which?", "options": ["a", 2]})
    with pytest.raises(ToolArgumentsError, match="arguments must be a JSON object, got array"):
        tools.validate("list_dir", ["a"])
    args = {"path": "a.txt", "content": ""}
    assert tools.validate("write_file", args) is args


@pytest.mark.asyncio
async def test_execute_reports_bad_arguments_without_raising(tools: ToolRegistry, ctx: ToolContext) -> None:
    result = await tools.execute("write_file", {"content": "x"}, ctx)
    assert not result.ok
    assert result.output == "error: write_file: missing required field 'path'"
    unknown = await tools.execute("delete_everything", {}, ctx)
    assert not unknown.ok
    assert "unknown tool 'delete_everything'" in unknown.output


def test_registry_basics(tools: ToolRegistry) -> None:
    assert tools.names() == ["read_file", "list_dir", "write_file", "run_shell", "ask_user"]
    assert [s["function"]["name"] for s in tools.schemas()] == tools.names()
    schema = tools.get("write_file").openai_schema()
    assert schema["type"] == "function"
    assert schema["function"]["parameters"]["required"] == ["path", "content"]
    assert tools.get("write_file").side_effects and tools.get("run_shell").side_effects
    assert not tools.get("read_file").side_effects and tools.get("read_file").idempotent
    assert tools.get("ask_user").parameters["properties"]["options"] == {"type": "array", "items": {"type": "string"}}
    sub = tools.subset(["run_shell", "read_file"])
    assert sub.names() == ["run_shell", "read_file"]
    with pytest.raises(KeyError, match=r"unknown tool 'nope'.*known tools: read_file"):
        tools.get("nope")
    with pytest.raises(KeyError, match="nope"):
        tools.subset(["read_file", "nope"])
    with pytest.raises(ValueError, match="already registered"):
        tools.register(tools.get("read_file"))
    with pytest.raises(ValueError, match="invalid parameters schema"):
        ToolRegistry(
            [ToolSpec("bad", "", {"type": "object", "properties": {"a": {"type": "strnig"}}}, lambda a, c: "")]
        )
    assert builtin_tools() is not tools, "each call builds a fresh registry (no shared global state)"


@pytest.mark.asyncio
async def test_ask_user_is_not_executed_by_the_registry(tools: ToolRegistry, ctx: ToolContext) -> None:
    result = await tools.execute("ask_user", {"question": "Proceed?", "options": ["yes", "no"]}, ctx)
    assert not result.ok
    assert "handles it" in result.output


@pytest.mark.asyncio
async def test_failing_sync_and_working_async_handlers(ctx: ToolContext) -> None:
    def explode(args: dict[str, Any], ctx: ToolContext) -> str:
        raise RuntimeError(f"disk full while saving {args['name']}")

    async def fetch(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        await asyncio.sleep(0.01)
        return {"name": args["name"], "session": ctx.session_id, "items": [1, 2]}

    async def explode_async(args: dict[str, Any], ctx: ToolContext) -> str:
        raise ValueError()

    params = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    registry = ToolRegistry(
        [
            ToolSpec("explode", "raises", params, explode),
            ToolSpec("fetch", "async", params, fetch),
            ToolSpec("explode_async", "raises", params, explode_async),
        ]
    )
    failed = await registry.execute("explode", {"name": "x.db"}, ctx)
    assert failed.ok is False
    assert failed.output == "error: disk full while saving x.db"
    fetched = await registry.execute("fetch", {"name": "n"}, ctx)
    assert fetched.ok
    assert fetched.output == '{"name": "n", "session": "s1", "items": [1, 2]}'
    assert fetched.duration_ms >= 10
    no_message = await registry.execute("explode_async", {"name": "n"}, ctx)
    assert no_message == type(no_message)(ok=False, output="error: ValueError", duration_ms=no_message.duration_ms)


@pytest.mark.asyncio
async def test_write_file_with_10_mb_content(tools: ToolRegistry, ctx: ToolContext, workspace: Path) -> None:
    content = ("0123456789abcdef" * 64 + "\n") * 10_000  # ~10.25 MB
    assert len(content) > 10_000_000
    result = await tools.execute("write_file", {"path": "big/blob.txt", "content": content}, ctx)
    assert result.ok, result.output
    assert result.output == f"wrote {len(content)} bytes to big/blob.txt"
    assert (workspace / "big" / "blob.txt").stat().st_size == len(content)


@posix_only
@pytest.mark.asyncio
async def test_run_shell_in_workspace_with_exit_code(tools: ToolRegistry, ctx: ToolContext, workspace: Path) -> None:
    (workspace / "hello.txt").write_text("hi there", encoding="utf-8")
    result = await tools.execute("run_shell", {"command": "pwd; cat hello.txt; echo; echo oops >&2; exit 3"}, ctx)
    assert result.ok, "a non-zero exit is a result for the model, not a tool failure"
    lines = result.output.splitlines()
    assert lines[0] == "exit code: 3"
    assert same_dir(lines[1], workspace)
    assert lines[2:] == ["hi there", "oops"]
    created = await tools.execute("run_shell", {"command": "echo made > made.txt"}, ctx)
    assert created.output.startswith("exit code: 0")
    assert (workspace / "made.txt").read_text(encoding="utf-8") == "made\n"


def wait_gone(pid: int, timeout: float) -> bool:
    """Whether the process is gone (or a zombie waiting for its reaper) within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not _gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    status = Path(f"/proc/{pid}/status")
    try:
        return "\nState:\tZ" in status.read_text(encoding="utf-8")
    except OSError:
        return True


@posix_only
@pytest.mark.asyncio
async def test_run_shell_timeout_kills_the_process_group(
    tools: ToolRegistry, ctx: ToolContext, workspace: Path
) -> None:
    result = await tools.execute(
        "run_shell",
        {"command": "echo started; sleep 30 & echo $! > child.pid; wait", "timeout_s": 0.5},
        ctx,
    )
    assert not result.ok
    assert result.output.startswith("error: command timed out after 0.5s and was killed")
    assert "started" in result.output
    child = int((workspace / "child.pid").read_text(encoding="utf-8"))
    assert wait_gone(child, 3.0), "the background sleep was killed with its shell"


@posix_only
@pytest.mark.asyncio
async def test_run_shell_uses_context_timeout(tools: ToolRegistry, workspace: Path) -> None:
    short = ToolContext(workspace=workspace, session_id="s", invocation_id="i", shell_timeout_s=0.3)
    result = await tools.execute("run_shell", {"command": "sleep 20"}, short)
    assert not result.ok
    assert "timed out after 0.3s" in result.output
    assert result.duration_ms >= 300  # it ran until the timeout, then was stopped


@posix_only
@pytest.mark.asyncio
async def test_run_shell_output_is_capped(tools: ToolRegistry, workspace: Path) -> None:
    small = ToolContext(workspace=workspace, session_id="s", invocation_id="i", output_cap_bytes=1000)
    result = await tools.execute("run_shell", {"command": "head -c 300000 /dev/zero | tr '\\0' 'y'; exit 0"}, small)
    assert result.ok
    assert result.output == "exit code: 0\n" + "y" * 1000 + "\n[output truncated: 299000 more bytes]"


@pytest.mark.asyncio
async def test_other_handlers_output_is_capped(workspace: Path) -> None:
    registry = ToolRegistry([ToolSpec("noisy", "", {"type": "object"}, lambda a, c: "z" * 100_000)])
    small = ToolContext(workspace=workspace, session_id="s", invocation_id="i", output_cap_bytes=1000)
    result = await registry.execute("noisy", {}, small)
    assert result.ok
    assert result.output.startswith("z" * 1000)
    assert len(result.output.encode()) < 1000 + 600
    assert result.output.endswith("more bytes]")


@posix_only
@pytest.mark.asyncio
async def test_cancelling_run_shell_kills_the_command(tools: ToolRegistry, ctx: ToolContext, workspace: Path) -> None:
    task = asyncio.ensure_future(tools.execute("run_shell", {"command": "echo $$ > shell.pid; sleep 30"}, ctx))
    pid_file = workspace / "shell.pid"
    for _ in range(100):
        if pid_file.exists() and pid_file.read_text(encoding="utf-8").strip():
            break
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert wait_gone(int(pid_file.read_text(encoding="utf-8")), 3.0), "a cancelled run leaves no command behind"
