"""One hook event in, one answer out: the wire formats of Claude Code's and Codex's permission hooks.

Standard library only: this runs on the fast path of every tool call. Everything on stdin is hostile (the model
chose the tool input), so it is checked for shape and size before anything else looks at it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

MAX_STDIN_BYTES = 32 * 1024 * 1024
"""A Write of a large file arrives whole on stdin; anything bigger is refused (and falls back)."""
MAX_ID_CHARS = 256


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
    PRE_TOOL_USE = "PreToolUse"
    PERMISSION_REQUEST = "PermissionRequest"
    BEFORE_TOOL = "BeforeTool"
    """Gemini CLI."""
    COPILOT_PRE_TOOL_USE = "preToolUse"
    """GitHub Copilot CLI (camelCase)."""
    BEFORE_SHELL_EXECUTION = "beforeShellExecution"
    BEFORE_MCP_EXECUTION = "beforeMCPExecution"
    """Cursor's two gating events."""
    TOOL_EXECUTE_BEFORE = "tool.execute.before"
    """OpenCode's plugin event, relayed by Reviewer's plugin."""


CLAUDE_EVENTS = (HookEventName.PRE_TOOL_USE, HookEventName.PERMISSION_REQUEST)
HOSTS_WITHOUT_EDIT = frozenset({Host.CODEX})
"""Hosts whose PermissionRequest answer carries no ``updatedInput``."""


class Verdict(StrEnum):
    """What the hook tells its host."""

    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"
    """Leave it to the host's own permission prompt (PermissionRequest: no decision at all)."""


class HookInputError(ValueError):
    """The event on stdin is not one this hook can act on."""


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


def read_stdin_bytes(stream: Any, limit: int = MAX_STDIN_BYTES) -> bytes:
    """All of stdin up to ``limit`` bytes; more is an error (the event would be cut)."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise HookInputError(f"the hook event is larger than {limit // (1024 * 1024)} MB")
    return bytes(data)


def _text(raw: dict[str, Any], key: str, *, required: bool, limit: int | None = MAX_ID_CHARS) -> str | None:
    value = raw.get(key)
    if value is None or value == "":
        if required:
            raise HookInputError(f"the hook event has no {key}")
        return None
    if not isinstance(value, str):
        raise HookInputError(f"{key} must be a string, not {type(value).__name__}")
    if limit is not None and len(value) > limit:
        raise HookInputError(f"{key} is longer than {limit} characters")
    if "\x00" in value:
        raise HookInputError(f"{key} contains a NUL character")
    return value


def load_object(payload: bytes) -> dict[str, Any]:
    """The payload as a JSON object, or :class:`HookInputError`."""
    try:
        raw = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HookInputError(f"the hook event is not JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise HookInputError("the hook event must be a JSON object")
    return raw


text_field = _text
"""A checked string field of an event (for the other hosts' profiles)."""


def parse_event(payload: bytes, host: Host) -> HookEvent:
    """Check and read one event; :class:`HookInputError` says what is wrong."""
    raw = load_object(payload)
    name = _text(raw, "hook_event_name", required=True) or ""
    if name not in CLAUDE_EVENTS:
        raise HookInputError(f"this hook answers PreToolUse and PermissionRequest, not {name!r}")
    event = HookEventName(name)
    if host is Host.CODEX and event is not HookEventName.PERMISSION_REQUEST:
        raise HookInputError(f"the Codex hook answers PermissionRequest, not {name!r}")
    session_id = _text(raw, "session_id", required=True)
    tool_name = _text(raw, "tool_name", required=True)
    tool_input = raw.get("tool_input")
    if not isinstance(tool_input, dict):
        raise HookInputError("tool_input must be a JSON object")
    run_key = "turn_id" if host is Host.CODEX else "prompt_id"
    run_id = _text(raw, run_key, required=False)
    extra: dict[str, Any] = {}
    suggestions = raw.get("permission_suggestions")
    if isinstance(suggestions, list):
        extra["permission_suggestions"] = suggestions
    assert session_id is not None and tool_name is not None
    return HookEvent(
        host=host,
        event=event,
        session_id=session_id,
        run_id=run_id or session_id,
        tool_name=tool_name,
        tool_input=tool_input,
        tool_use_id=_text(raw, "tool_use_id", required=False),
        cwd=_text(raw, "cwd", required=False, limit=4096),
        transcript_path=_text(raw, "transcript_path", required=False, limit=4096),
        permission_mode=_text(raw, "permission_mode", required=False),
        model=_text(raw, "model", required=False),
        extra=extra,
    )


@dataclass(frozen=True, slots=True)
class Answer:
    """The hook's reply: printed as JSON on stdout (nothing at all for a PermissionRequest ``ask``)."""

    verdict: Verdict
    reason: str = ""
    updated_input: dict[str, Any] | None = None

    def render(self, host: Host, event: HookEventName) -> str | None:
        """The stdout text for ``event``; None when the hook should print nothing."""
        if event is HookEventName.PRE_TOOL_USE:
            output: dict[str, Any] = {"hookEventName": event.value, "permissionDecision": self.verdict.value}
            if self.reason:
                output["permissionDecisionReason"] = self.reason
            if self.verdict is Verdict.ALLOW and self.updated_input is not None:
                output["updatedInput"] = self.updated_input
            return json.dumps({"hookSpecificOutput": output}, ensure_ascii=False)
        if self.verdict is Verdict.ASK:
            return None  # no decision: the host shows its own permission prompt
        decision: dict[str, Any] = {"behavior": self.verdict.value}
        if self.verdict is Verdict.ALLOW:
            if self.updated_input is not None and host not in HOSTS_WITHOUT_EDIT:
                decision["updatedInput"] = self.updated_input
        else:
            decision["message"] = self.reason or "denied in Reviewer"
        return json.dumps(
            {"hookSpecificOutput": {"hookEventName": event.value, "decision": decision}}, ensure_ascii=False
        )


def event_name_in(payload: bytes) -> HookEventName:
    """The event's name from a payload that may be otherwise broken: picks the fallback answer's format."""
    try:
        raw = json.loads(payload.decode("utf-8", "replace"))
        return HookEventName(raw.get("hook_event_name"))
    except Exception:
        return HookEventName.PERMISSION_REQUEST if b"PermissionRequest" in payload else HookEventName.PRE_TOOL_USE
