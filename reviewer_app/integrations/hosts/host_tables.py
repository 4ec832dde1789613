"""Every host's fixed tables: its gating events, which of them take edited arguments, its shell and read-only
tools and its tools' input schemas.

Why: the typed profiles (:mod:`.profile` and the host modules) and the hook's lean path (:mod:`.lean_wire`, which
must not pay for dataclasses or enums) describe a host's request from the same rows, so the two cannot drift.
Standard library only, no ``typing`` at run time.
"""

from __future__ import annotations

from reviewer_app.integrations.claude_code.schemas import (
    CODEX_SCHEMAS,
    CODEX_SHELL_TOOLS,
    NON_EMPTY,
    READ_ONLY_TOOLS,
    SHELL_SCHEMA,
    SHELL_TOOLS,
    STRING,
    TOOL_SCHEMAS,
    object_schema,
)
from reviewer_app.integrations.claude_code.wire import PERMISSION_REQUEST, PRE_TOOL_USE

TYPE_CHECKING = False  # no ``typing`` at run time: the hook's lean path reads these tables
if TYPE_CHECKING:
    from typing import Any

BEFORE_TOOL = "BeforeTool"
COPILOT_PRE_TOOL_USE = "preToolUse"
BEFORE_SHELL_EXECUTION = "beforeShellExecution"
BEFORE_MCP_EXECUTION = "beforeMCPExecution"
TOOL_EXECUTE_BEFORE = "tool.execute.before"
CURSOR_SHELL_TOOL = "Shell"
"""Cursor's shell event is recorded as a call of this tool, with ``{command, cwd}``."""

GEMINI_STYLE_SCHEMAS: dict[str, dict[str, Any]] = {
    "run_shell_command": object_schema({"command": NON_EMPTY, "description": STRING, "directory": STRING}, ["command"]),
    "write_file": object_schema({"file_path": NON_EMPTY, "content": STRING}, ["file_path", "content"]),
    "replace": object_schema(
        {
            "file_path": NON_EMPTY,
            "old_string": STRING,
            "new_string": STRING,
            "expected_replacements": {"type": "number"},
        },
        ["file_path", "old_string", "new_string"],
    ),
    "edit": object_schema(
        {"file_path": NON_EMPTY, "old_string": STRING, "new_string": STRING, "replace_all": {"type": "boolean"}},
        ["file_path", "old_string", "new_string"],
    ),
    "web_fetch": object_schema({"prompt": STRING, "url": STRING}, []),
}
"""Gemini CLI's and Qwen Code's tools (Qwen is a Gemini CLI fork): shell, file writes and edits, fetch."""

GEMINI_STYLE_READ_ONLY = (
    "read_file",
    "read_many_files",
    "list_directory",
    "glob",
    "grep_search",
    "search_file_content",
)
FACTORY_SCHEMAS: dict[str, dict[str, Any]] = {
    "Execute": object_schema({"command": NON_EMPTY}, ["command"]),
    "Create": object_schema({"file_path": NON_EMPTY, "content": STRING}, ["file_path", "content"]),
    "Edit": object_schema(
        {"file_path": NON_EMPTY, "old_str": STRING, "new_str": STRING}, ["file_path", "old_str", "new_str"]
    ),
}
COPILOT_SCHEMAS: dict[str, dict[str, Any]] = {
    "bash": SHELL_SCHEMA,
    "create": object_schema({"path": NON_EMPTY, "file_text": STRING}, ["path", "file_text"]),
    "edit": object_schema({"path": NON_EMPTY, "old_str": STRING, "new_str": STRING}, ["path"]),
}
OPENCODE_SCHEMAS: dict[str, dict[str, Any]] = {
    "bash": SHELL_SCHEMA,
    "write": object_schema({"filePath": NON_EMPTY, "content": STRING}, ["filePath", "content"]),
    "edit": object_schema(
        {"filePath": NON_EMPTY, "oldString": STRING, "newString": STRING, "replaceAll": {"type": "boolean"}},
        ["filePath", "oldString", "newString"],
    ),
}

CLAUDE_EVENTS = (PRE_TOOL_USE, PERMISSION_REQUEST)


def _host(
    default_event: str,
    edit_events: tuple[str, ...] = (),
    shell_tools: tuple[str, ...] = (),
    read_only_tools: tuple[str, ...] = (),
    schemas: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "default_event": default_event,
        "edit_events": frozenset(edit_events),
        "shell_tools": shell_tools,
        "read_only_tools": read_only_tools,
        "schemas": schemas or {},
    }


HOST_TABLES: dict[str, dict[str, Any]] = {
    "claude-code": _host(PRE_TOOL_USE, CLAUDE_EVENTS, SHELL_TOOLS, READ_ONLY_TOOLS, TOOL_SCHEMAS),
    "codex": _host(PERMISSION_REQUEST, (), CODEX_SHELL_TOOLS, (), CODEX_SCHEMAS),
    # Qwen reads updatedInput only from a PermissionRequest decision (its PreToolUse answer has no such field)
    "qwen": _host(
        PRE_TOOL_USE,
        (PERMISSION_REQUEST,),
        ("run_shell_command",),
        (*GEMINI_STYLE_READ_ONLY, "todo_write"),
        GEMINI_STYLE_SCHEMAS,
    ),
    "factory": _host(
        PRE_TOOL_USE, CLAUDE_EVENTS, ("Execute",), ("Read", "LS", "Grep", "Glob", "TodoWrite"), FACTORY_SCHEMAS
    ),
    "gemini": _host(BEFORE_TOOL, (BEFORE_TOOL,), ("run_shell_command",), GEMINI_STYLE_READ_ONLY, GEMINI_STYLE_SCHEMAS),
    "copilot": _host(
        COPILOT_PRE_TOOL_USE, (COPILOT_PRE_TOOL_USE,), ("bash",), ("view", "grep", "glob"), COPILOT_SCHEMAS
    ),
    "cursor": _host(BEFORE_SHELL_EXECUTION, (), (CURSOR_SHELL_TOOL,)),
    "opencode": _host(
        TOOL_EXECUTE_BEFORE,
        (TOOL_EXECUTE_BEFORE,),
        ("bash",),
        ("read", "glob", "grep", "list", "todoread", "todowrite"),
        OPENCODE_SCHEMAS,
    ),
}
"""Per host (``Host`` values): ``default_event`` (the answer's shape when the payload cannot be read),
``edit_events`` (events whose answer carries edited arguments the host really runs), ``shell_tools``,
``read_only_tools`` (seeded as visible allow rules by ``hook install``) and ``schemas`` (a tool's input schema)."""
