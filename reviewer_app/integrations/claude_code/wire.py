"""Claude's hook wire format read and written with the standard library alone: the checked fields of an event,
the answer's JSON.

Why: :mod:`.events` (the typed ``HookEvent`` and ``Answer`` every path uses) and :mod:`.lean` (the hook's lean
path, which must not pay for dataclasses or enums) read and write the same bytes through these functions, so the
two cannot drift. Everything on stdin is hostile (the model chose the tool input): shape and size are checked
before anything else looks at it.
"""

from __future__ import annotations

from reviewer_app.domain.lean_json import decode_error, dumps, loads

TYPE_CHECKING = False  # no ``typing`` at run time: the lean path imports this module
if TYPE_CHECKING:
    from typing import Any

MAX_STDIN_BYTES = 32 * 1024 * 1024
"""A Write of a large file arrives whole on stdin; anything bigger is refused (and falls back)."""
MAX_ID_CHARS = 256
PRE_TOOL_USE = "PreToolUse"
PERMISSION_REQUEST = "PermissionRequest"
CLAUDE_EVENT_NAMES = (PRE_TOOL_USE, PERMISSION_REQUEST)
HOSTS_WITHOUT_EDIT = frozenset({"codex"})
"""Hosts whose PermissionRequest answer carries no ``updatedInput``."""
ALL_DECISIONS = ("approve", "approve_for_session", "edit", "reject", "steer")
WITHOUT_EDIT = ("approve", "approve_for_session", "reject", "steer")


class HookInputError(ValueError):
    """The event on stdin is not one this hook can act on."""


def read_stdin_bytes(stream: Any, limit: int = MAX_STDIN_BYTES) -> bytes:
    """All of stdin up to ``limit`` bytes; more is an error (the event would be cut)."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise HookInputError(f"the hook event is larger than {limit // (1024 * 1024)} MB")
    return bytes(data)


def text_field(raw: dict[str, Any], key: str, *, required: bool, limit: int | None = MAX_ID_CHARS) -> str | None:
    """A checked string field of an event."""
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
        raw = loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, decode_error()) as exc:  # json is imported only for the error
        raise HookInputError(f"the hook event is not JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise HookInputError("the hook event must be a JSON object")
    return raw


def claude_event_fields(raw: dict[str, Any], host: str) -> dict[str, Any]:
    """A Claude-format event's checked fields (``HookEvent``'s, the event's name as text), or HookInputError."""
    name = text_field(raw, "hook_event_name", required=True) or ""
    if name not in CLAUDE_EVENT_NAMES:
        raise HookInputError(f"this hook answers PreToolUse and PermissionRequest, not {name!r}")
    if host == "codex" and name != PERMISSION_REQUEST:
        raise HookInputError(f"the Codex hook answers PermissionRequest, not {name!r}")
    session_id = text_field(raw, "session_id", required=True)
    tool_name = text_field(raw, "tool_name", required=True)
    tool_input = raw.get("tool_input")
    if not isinstance(tool_input, dict):
        raise HookInputError("tool_input must be a JSON object")
    run_id = text_field(raw, "turn_id" if host == "codex" else "prompt_id", required=False)
    extra: dict[str, Any] = {}
    suggestions = raw.get("permission_suggestions")
    if isinstance(suggestions, list):
        extra["permission_suggestions"] = suggestions
    assert session_id is not None and tool_name is not None
    return {
        "event": name,
        "session_id": session_id,
        "run_id": run_id or session_id,
        "tool_name": tool_name,
        "tool_input": tool_input,
        "tool_use_id": text_field(raw, "tool_use_id", required=False),
        "cwd": text_field(raw, "cwd", required=False, limit=4096),
        "transcript_path": text_field(raw, "transcript_path", required=False, limit=4096),
        "permission_mode": text_field(raw, "permission_mode", required=False),
        "model": text_field(raw, "model", required=False),
        "extra": extra,
    }


def claude_answer(verdict: str, reason: str, updated_input: dict[str, Any] | None, host: str, event: str) -> str | None:
    """The stdout text of a Claude-format answer to ``event``; None when the hook should print nothing."""
    if event == PRE_TOOL_USE:
        output: dict[str, Any] = {"hookEventName": event, "permissionDecision": verdict}
        if reason:
            output["permissionDecisionReason"] = reason
        if verdict == "allow" and updated_input is not None:
            output["updatedInput"] = updated_input
        return dumps({"hookSpecificOutput": output}, ensure_ascii=False)
    if verdict == "ask":
        return None  # no decision: the host shows its own permission prompt
    decision: dict[str, Any] = {"behavior": verdict}
    if verdict == "allow":
        if updated_input is not None and host not in HOSTS_WITHOUT_EDIT:
            decision["updatedInput"] = updated_input
    else:
        decision["message"] = reason or "denied in Reviewer"
    return dumps({"hookSpecificOutput": {"hookEventName": event, "decision": decision}}, ensure_ascii=False)
