"""What Claude Code's tools take (from its ``sdk-tools.d.ts``), so a reviewer's edit is checked before it runs.

The schemas require the fields Claude requires and type the ones it documents; they allow other keys, since a
newer Claude Code may add some, and Claude checks its own input again before the tool runs.
"""

from __future__ import annotations

TYPE_CHECKING = False  # no ``typing`` at run time: the hook's lean path reads these tables
if TYPE_CHECKING:
    from typing import Any

SHELL_TOOLS = ("Bash",)
"""Claude's shell tool: approve-for-session waives the same command (its parsed scope), not the whole tool."""

READ_ONLY_TOOLS = ("Read", "Glob", "Grep", "LS", "NotebookRead", "TodoWrite", "TodoRead", "BashOutput")
"""Tools that read, or only touch Claude's own state: ``hook install --event PreToolUse`` seeds visible allow rules
for them (``install.seeded_rules``), never a hidden default."""

CODEX_SHELL_TOOLS = ("Bash",)


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


_STRING = {"type": "string"}
_NUMBER = {"type": "number"}
_BOOL = {"type": "boolean"}
_EDIT = _object({"old_string": _STRING, "new_string": _STRING, "replace_all": _BOOL}, ["old_string", "new_string"])

TOOL_SCHEMAS: dict[str, dict[str, Any]] = {
    "Bash": _object(
        {
            "command": {"type": "string", "minLength": 1},
            "description": _STRING,
            "timeout": {"type": "number", "minimum": 0},
            "run_in_background": _BOOL,
            "dangerouslyDisableSandbox": _BOOL,
        },
        ["command"],
    ),
    "Write": _object({"file_path": {"type": "string", "minLength": 1}, "content": _STRING}, ["file_path", "content"]),
    "Edit": _object(
        {"file_path": {"type": "string", "minLength": 1}, **_EDIT["properties"]},
        ["file_path", "old_string", "new_string"],
    ),
    "MultiEdit": _object(
        {"file_path": {"type": "string", "minLength": 1}, "edits": {"type": "array", "minItems": 1, "items": _EDIT}},
        ["file_path", "edits"],
    ),
    "NotebookEdit": _object(
        {
            "notebook_path": {"type": "string", "minLength": 1},
            "cell_id": _STRING,
            "new_source": _STRING,
            "cell_type": {"enum": ["code", "markdown"]},
            "edit_mode": {"enum": ["replace", "insert", "delete"]},
        },
        ["notebook_path", "new_source"],
    ),
    "WebFetch": _object(
        {"url": {"type": "string", "format": "uri", "minLength": 1}, "prompt": _STRING, "offset": _NUMBER},
        ["url", "prompt"],
    ),
}

CODEX_SCHEMAS: dict[str, dict[str, Any]] = {
    "Bash": _object({"command": {"type": "string", "minLength": 1}, "description": _STRING}, ["command"]),
}


def schema_for(tool_name: str, *, codex: bool = False) -> dict[str, Any] | None:
    """The input schema of a known tool; None for MCP and other tools (their edits are not checked)."""
    return (CODEX_SCHEMAS if codex else TOOL_SCHEMAS).get(tool_name)


object_schema = _object
"""A JSON schema of an object with these properties (for the other hosts' tool schemas)."""
STRING = _STRING
NON_EMPTY = {"type": "string", "minLength": 1}
SHELL_SCHEMA = _object({"command": NON_EMPTY, "description": _STRING}, ["command"])
"""A shell tool taking ``command`` (and a ``description``): Copilot's and OpenCode's ``bash``."""
