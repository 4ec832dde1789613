"""The hosts that speak Claude Code's hook format: Claude Code itself, Codex, Qwen Code and Factory's droid.

Qwen Code and Factory accept Claude's ``PreToolUse``/``PermissionRequest`` payloads and answers nearly byte for
byte; they differ in their tool names and in which answers carry edited input: Qwen reads ``updatedInput`` only
from a ``PermissionRequest`` decision (its ``PreToolUse`` answer has no such field); Factory's droid runs the
``updatedInput`` of a PreToolUse allow (seen with droid 0.225.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reviewer_app.integrations.claude_code.events import (
    CLAUDE_EVENTS,
    Answer,
    HookEvent,
    HookEventName,
    Host,
    event_name_in,
    parse_event,
)
from reviewer_app.integrations.claude_code.schemas import (
    CODEX_SCHEMAS,
    CODEX_SHELL_TOOLS,
    NON_EMPTY,
    READ_ONLY_TOOLS,
    SHELL_TOOLS,
    STRING,
    TOOL_SCHEMAS,
    object_schema,
)
from reviewer_app.integrations.hosts.profile import HostProfile, Reply

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


@dataclass(frozen=True)
class ClaudeFormat(HostProfile):
    """Claude's payload and answer (:func:`.events.parse_event`, :meth:`.events.Answer.render`)."""

    def event_name_in(self, payload: bytes) -> HookEventName:
        name = event_name_in(payload)
        if self.default_event is HookEventName.PERMISSION_REQUEST and name is not HookEventName.PERMISSION_REQUEST:
            return self.default_event  # Codex: only PermissionRequest, in that format
        return name if name in CLAUDE_EVENTS else self.default_event

    def parse(self, payload: bytes) -> HookEvent:
        return parse_event(payload, self.host)

    def render(self, answer: Answer, event: HookEventName) -> Reply:
        if event not in self.edit_events and answer.updated_input is not None:
            answer = Answer(answer.verdict, answer.reason)
        return Reply(answer.render(self.host, event))


CLAUDE_CODE = ClaudeFormat(
    Host.CLAUDE_CODE,
    HookEventName.PRE_TOOL_USE,
    edit_events=frozenset(CLAUDE_EVENTS),
    shell_tools=SHELL_TOOLS,
    read_only_tools=READ_ONLY_TOOLS,
    schemas=TOOL_SCHEMAS,
)
CODEX = ClaudeFormat(Host.CODEX, HookEventName.PERMISSION_REQUEST, shell_tools=CODEX_SHELL_TOOLS, schemas=CODEX_SCHEMAS)
QWEN = ClaudeFormat(
    Host.QWEN,
    HookEventName.PRE_TOOL_USE,
    edit_events=frozenset({HookEventName.PERMISSION_REQUEST}),
    shell_tools=("run_shell_command",),
    read_only_tools=(*GEMINI_STYLE_READ_ONLY, "todo_write"),
    schemas=GEMINI_STYLE_SCHEMAS,
)
FACTORY_SCHEMAS: dict[str, dict[str, Any]] = {
    "Execute": object_schema({"command": NON_EMPTY}, ["command"]),
    "Create": object_schema({"file_path": NON_EMPTY, "content": STRING}, ["file_path", "content"]),
    "Edit": object_schema(
        {"file_path": NON_EMPTY, "old_str": STRING, "new_str": STRING}, ["file_path", "old_str", "new_str"]
    ),
}
FACTORY = ClaudeFormat(
    Host.FACTORY,
    HookEventName.PRE_TOOL_USE,
    edit_events=frozenset(CLAUDE_EVENTS),
    shell_tools=("Execute",),
    read_only_tools=("Read", "LS", "Grep", "Glob", "TodoWrite"),
    schemas=FACTORY_SCHEMAS,
)
CLAUDE_FORMAT = {profile.host: profile for profile in (CLAUDE_CODE, CODEX, QWEN, FACTORY)}
