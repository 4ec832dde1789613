"""The effects of one tool call, computed read-only in bounded time and stamped with when they were computed.

Shell commands go through ``command_touches``; file tools (Reviewer's, Claude Code's, MCP servers' write tools)
name their path, and a write carries the diff against the file on disk (workspace files only, read without
following symlinks). ``Effects.stale()`` says which of the paths looked at changed since.
"""

from __future__ import annotations

import difflib
import posixpath
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from reviewer_app.domain.toolcall import (
    NETWORK_TOOLS,
    WRITING_FILE_TOOLS,
    ToolCall,
    command_of,
    is_shell_tool,
    mcp_parts,
    path_of,
)
from reviewer_app.preview.command_touches import KINDS, EffectCollector
from reviewer_app.preview.facts import Budget, read_workspace_text, signature

DEFAULT_BUDGET_S = 0.25
DIFF_LIMIT_BYTES = 2_000_000
DIFF_SHOWN_CHARS = 100_000
_MCP_WRITE_WORDS = ("write", "create", "edit", "update", "save", "put", "append")
_MCP_PATH_KEYS = ("path", "file_path", "filePath", "filename")
_MCP_CONTENT_KEYS = ("content", "contents", "text", "data")


@dataclass
class Effects:
    """What a call will touch, by kind; ``notes`` say what was not computed; ``signatures`` the state of every
    path looked at, for :meth:`stale`."""

    writes: list[dict[str, Any]] = field(default_factory=list)
    deletes: list[dict[str, Any]] = field(default_factory=list)
    reads: list[dict[str, Any]] = field(default_factory=list)
    network: list[dict[str, Any]] = field(default_factory=list)
    executes: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    computed_at: float = 0.0
    elapsed_ms: float = 0.0
    signatures: dict[str, tuple[bool, int, int]] = field(default_factory=dict)

    def stale(self) -> list[str]:
        """The paths whose entry changed (appeared, vanished, size or modification time) since the computation."""
        return [path for path, before in self.signatures.items() if signature(path) != before]

    def empty(self) -> bool:
        return not any(getattr(self, kind) for kind in KINDS)

    def to_dict(self) -> dict[str, Any]:
        return {kind: getattr(self, kind) for kind in KINDS} | {"notes": self.notes}


def _new_content(call: ToolCall, old: str) -> str | None:
    """The file's content after the call (Write/write_file: the content; Edit/MultiEdit: the edits applied)."""
    args = call.arguments
    if call.tool_name in ("Edit", "MultiEdit"):
        edits = args.get("edits") if call.tool_name == "MultiEdit" else [args]
        text = old
        for edit in edits if isinstance(edits, list) else []:
            if not isinstance(edit, dict):
                return None
            before, after = edit.get("old_string"), edit.get("new_string")
            if not isinstance(before, str) or not isinstance(after, str) or before not in text:
                return None
            text = text.replace(before, after) if edit.get("replace_all") else text.replace(before, after, 1)
        return text
    for key in _MCP_CONTENT_KEYS:
        if isinstance(args.get(key), str):
            return str(args[key])
    return None


def _diff(item: dict[str, Any], call: ToolCall, cwd: str | None) -> None:
    """Attach the unified diff against the file on disk to a write item (workspace files only)."""
    resolved = item.get("resolved")
    if not isinstance(resolved, str) or cwd is None or not item.get("inside_workspace") or item.get("note"):
        item["diff_note"] = "no diff: only files inside the workspace are read"
        return
    old, why = read_workspace_text(cwd, resolved, DIFF_LIMIT_BYTES)
    if old is None:
        item["diff_note"] = why
        return
    new = _new_content(call, old)
    if new is None:
        item["diff_note"] = "no diff: the new content cannot be derived (an edit's old text is not in the file)"
        return
    name = posixpath.relpath(resolved, posixpath.normpath(cwd))
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{name}", f"b/{name}")
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    item["diff"] = text[:DIFF_SHOWN_CHARS]
    item["diff_note"] = why or ("unchanged" if not text else "")


def _mcp_write_path(call: ToolCall) -> str | None:
    parts = mcp_parts(call.tool_name)
    if parts is None or not any(word in parts[1].lower() for word in _MCP_WRITE_WORDS):
        return None
    for key in _MCP_PATH_KEYS:
        value = call.arguments.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def warm_up() -> None:
    """Import the parser and dulwich before a budget starts (first use only): an import is not a walk."""
    import bashlex  # noqa: F401
    import dulwich.repo  # noqa: F401


def compute_effects(call: ToolCall, *, budget_s: float = DEFAULT_BUDGET_S, now: float | None = None) -> Effects:
    """The effects of ``call`` in its workspace (``call.cwd``); never executes anything, never raises for what
    it finds on disk, and stops walking trees when ``budget_s`` is spent (counts then say "at least")."""
    warm_up()
    started = time.perf_counter()
    collector = EffectCollector(call.cwd, Budget.of(budget_s))
    if is_shell_tool(call.tool_name):
        command = command_of(call.tool_name, call.arguments)
        if command is None:
            collector.note("the shell command could not be read from the arguments")
        else:
            collector.command(command)
    else:
        path = path_of(call.tool_name, call.arguments)
        mcp_path = _mcp_write_path(call)
        if (path is not None and call.tool_name in WRITING_FILE_TOOLS) or mcp_path is not None:
            item = collector.path("writes", mcp_path or path or "", call.tool_name)
            _diff(item, call, call.cwd)
        elif path is not None:
            collector.path("reads", path, call.tool_name, recursive=call.tool_name in ("Grep", "Glob", "LS"))
        url = call.arguments.get("url")
        if call.tool_name in NETWORK_TOOLS and isinstance(url, str):
            collector.host(urlsplit(url).hostname or url, call.tool_name, url=url)
        elif call.tool_name.startswith("mcp__") and mcp_path is None:
            collector.note("an MCP tool: its effects are the server's, only its declared hints are known")
    effects = Effects(
        **{kind: collector.items[kind] for kind in KINDS},
        notes=collector.notes,
        computed_at=time.time() if now is None else now,
        elapsed_ms=(time.perf_counter() - started) * 1000,
        signatures={path: signature(path) for path in sorted(collector.paths)},
    )
    return effects
