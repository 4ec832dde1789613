"""One hook event in, one answer out: the wire formats of Claude Code's and Codex's permission hooks, typed.

Standard library only: this runs on the fast path of every tool call. The bytes are read and written by
:mod:`.wire` (shared with the hook's lean path); this module gives them their types.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from reviewer_app.integrations.claude_code import wire
from reviewer_app.integrations.claude_code.wire import (
    HOSTS_WITHOUT_EDIT,
    MAX_ID_CHARS,
    MAX_STDIN_BYTES,
    HookInputError,
    claude_answer,
    claude_event_fields,
    load_object,
    read_stdin_bytes,
    text_field,
)
from reviewer_app.integrations.hosts import host_tables as names

__all__ = [
    "CLAUDE_EVENTS",
    "HOSTS_WITHOUT_EDIT",
    "MAX_ID_CHARS",
    "MAX_STDIN_BYTES",
    "Answer",
    "HookEvent",
    "HookEventName",
    "HookInputError",
    "Host",
    "Verdict",
    "event_name_in",
    "load_object",
    "parse_event",
    "read_stdin_bytes",
    "text_field",
]


class Host(StrEnum):
    """Which CLI called the hook: the agent name recorded on its requests."""

    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    GEMINI = "gemini"
    COPILOT = "copilot"
    QWEN = "qwen"
    FACTORY = "factory"
    OPENCODE = "opencode"
    CURSOR = "cursor"


class HookEventName(StrEnum):
    """The gating events the hook answers (their names are :mod:`reviewer_app.integrations.hosts.host_tables`')."""

    PRE_TOOL_USE = wire.PRE_TOOL_USE
    PERMISSION_REQUEST = wire.PERMISSION_REQUEST
    BEFORE_TOOL = names.BEFORE_TOOL
    """Gemini CLI."""
    COPILOT_PRE_TOOL_USE = names.COPILOT_PRE_TOOL_USE
    """GitHub Copilot CLI (camelCase)."""
    BEFORE_SHELL_EXECUTION = names.BEFORE_SHELL_EXECUTION
    BEFORE_MCP_EXECUTION = names.BEFORE_MCP_EXECUTION
    """Cursor's two gating events."""
    TOOL_EXECUTE_BEFORE = names.TOOL_EXECUTE_BEFORE
    """OpenCode's plugin event, relayed by Reviewer's plugin."""


CLAUDE_EVENTS = (HookEventName.PRE_TOOL_USE, HookEventName.PERMISSION_REQUEST)


class Verdict(StrEnum):
    """What the hook tells its host."""

    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"
    """Leave it to the host's own permission prompt (PermissionRequest: no decision at all)."""


@dataclass(frozen=True, slots=True)
class HookEvent:
    """A permission hook event, checked: the fields Reviewer records and answers by."""

    host: Host
    event: HookEventName
    session_id: str
    run_id: str
    """Claude's ``prompt_id`` or Codex's ``turn_id``; the session when neither is given."""
    tool_name: str
    tool_input: dict[str, Any]
    tool_use_id: str | None = None
    cwd: str | None = None
    transcript_path: str | None = None
    permission_mode: str | None = None
    model: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Other fields worth keeping with the request (Claude's permission suggestions)."""


def parse_event(payload: bytes, host: Host) -> HookEvent:
    """Check and read one event; :class:`HookInputError` says what is wrong."""
    fields = claude_event_fields(load_object(payload), host.value)
    return HookEvent(host=host, event=HookEventName(fields.pop("event")), **fields)


@dataclass(frozen=True, slots=True)
class Answer:
    """The hook's reply: printed as JSON on stdout (nothing at all for a PermissionRequest ``ask``)."""

    verdict: Verdict
    reason: str = ""
    updated_input: dict[str, Any] | None = None

    def render(self, host: Host, event: HookEventName) -> str | None:
        """The stdout text for ``event``; None when the hook should print nothing."""
        return claude_answer(self.verdict.value, self.reason, self.updated_input, host.value, event.value)


def event_name_in(payload: bytes) -> HookEventName:
    """The event's name from a payload that may be otherwise broken: picks the fallback answer's format."""
    try:
        raw = json.loads(payload.decode("utf-8", "replace"))
        return HookEventName(raw.get("hook_event_name"))
    except Exception:
        return HookEventName.PERMISSION_REQUEST if b"PermissionRequest" in payload else HookEventName.PRE_TOOL_USE
