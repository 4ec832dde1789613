"""Every host's hook wire format read and written with the standard library alone: an event's checked fields, the
answer's text.

Why: the typed profiles (:mod:`.gemini`, :mod:`.copilot`, :mod:`.cursor`, :mod:`.opencode`, :mod:`.claude_format`)
and the hook's lean path (:mod:`reviewer_app.integrations.claude_code.lean`, which must not pay for dataclasses or
enums) read and write the same bytes through these functions, so the two cannot drift. Everything on stdin is
hostile: a field of the wrong type or size, an event the hook does not answer, is a :class:`HookInputError` (the
full path then answers its fallback and says why).

Public API: ``event_fields(host, raw) -> dict`` (``HookEvent``'s fields, the event's name as text),
``render(host, verdict, reason, updated_input, event) -> str | None``, ``required_text``, ``object_field``,
``expect_event``.
"""

from __future__ import annotations

from reviewer_app.domain.lean_json import decode_error, dumps, loads
from reviewer_app.integrations.claude_code.wire import (
    PRE_TOOL_USE,
    HookInputError,
    claude_answer,
    claude_event_fields,
    text_field,
)
from reviewer_app.integrations.hosts.host_tables import (
    BEFORE_MCP_EXECUTION,
    BEFORE_SHELL_EXECUTION,
    BEFORE_TOOL,
    COPILOT_PRE_TOOL_USE,
    CURSOR_SHELL_TOOL,
    HOST_TABLES,
    TOOL_EXECUTE_BEFORE,
)

TYPE_CHECKING = False  # no ``typing`` at run time: the hook's lean path imports this module
if TYPE_CHECKING:
    from typing import Any

CLAUDE_FORMAT_HOSTS = frozenset({"claude-code", "codex", "qwen", "factory"})
CURSOR_EVENTS = (BEFORE_SHELL_EXECUTION, BEFORE_MCP_EXECUTION)


def required_text(raw: dict[str, Any], key: str) -> str:
    value = text_field(raw, key, required=True)
    assert value is not None
    return value


def object_field(raw: dict[str, Any], key: str, *, json_text: bool = False) -> dict[str, Any]:
    """A JSON object argument; ``json_text``: the host may send it as a JSON string (Copilot, Cursor's MCP)."""
    value = raw.get(key)
    if json_text and isinstance(value, str):
        try:
            value = loads(value) if value.strip() else {}
        except decode_error() as exc:  # json is imported only for the error
            raise HookInputError(f"{key} is not a JSON object: {exc}") from exc
    if not isinstance(value, dict):
        raise HookInputError(f"{key} must be a JSON object")
    return value


def expect_event(name: str, allowed: tuple[str, ...], host: str) -> str:
    if name not in allowed:
        raise HookInputError(f"the {host} hook answers {' and '.join(allowed)}, not {name!r}")
    return name


def _fields(
    event: str,
    session_id: str,
    run_id: str,
    tool_name: str,
    tool_input: dict[str, Any],
    *,
    tool_use_id: str | None = None,
    cwd: str | None = None,
    transcript_path: str | None = None,
    model: str | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "event": event,
        "session_id": session_id,
        "run_id": run_id,
        "tool_name": tool_name,
        "tool_input": tool_input,
        "tool_use_id": tool_use_id,
        "cwd": cwd,
        "transcript_path": transcript_path,
        "permission_mode": None,
        "model": model,
        "extra": extra if extra is not None else {},
    }


def gemini_fields(raw: dict[str, Any]) -> dict[str, Any]:
    """Gemini CLI's ``BeforeTool``: an MCP call (``mcp_context``) is named ``mcp__<server>__<tool>``."""
    event = expect_event(required_text(raw, "hook_event_name"), (BEFORE_TOOL,), "gemini")
    session_id = required_text(raw, "session_id")
    tool_name = required_text(raw, "tool_name")
    extra: dict[str, Any] = {}
    mcp = raw.get("mcp_context")
    if isinstance(mcp, dict):
        server, tool = mcp.get("server_name"), mcp.get("tool_name")
        if isinstance(server, str) and isinstance(tool, str) and server and tool:
            extra["host_tool_name"] = tool_name
            extra["mcp_context"] = {key: mcp[key] for key in ("server_name", "tool_name", "url") if key in mcp}
            tool_name = f"mcp__{server}__{tool}"
    return _fields(
        event,
        session_id,
        session_id,
        tool_name,
        object_field(raw, "tool_input"),
        cwd=text_field(raw, "cwd", required=False, limit=4096),
        transcript_path=text_field(raw, "transcript_path", required=False, limit=4096),
        extra=extra,
    )


def copilot_fields(raw: dict[str, Any]) -> dict[str, Any]:
    """Copilot CLI's ``preToolUse``; without a session id in the event, the session is the working directory."""
    name = text_field(raw, "hook_event_name", required=False) or COPILOT_PRE_TOOL_USE
    if name not in (COPILOT_PRE_TOOL_USE, PRE_TOOL_USE):
        raise HookInputError(f"the copilot hook answers preToolUse, not {name!r}")
    cwd = text_field(raw, "cwd", required=False, limit=4096)
    session = text_field(raw, "sessionId", required=False) or text_field(raw, "session_id", required=False)
    if session is None:
        session = f"copilot:{cwd or '?'}"
    return _fields(
        COPILOT_PRE_TOOL_USE,
        session,
        session,
        required_text(raw, "toolName"),
        object_field(raw, "toolArgs", json_text=True),
        tool_use_id=text_field(raw, "toolCallId", required=False),
        cwd=cwd,
    )


def cursor_fields(raw: dict[str, Any]) -> dict[str, Any]:
    """Cursor's shell event as the tool ``Shell`` with ``{command, cwd}``; its MCP event as ``mcp__cursor__<tool>``."""
    event = expect_event(required_text(raw, "hook_event_name"), CURSOR_EVENTS, "cursor")
    session = required_text(raw, "conversation_id")
    cwd = text_field(raw, "cwd", required=False, limit=4096)
    roots = raw.get("workspace_roots")
    if cwd is None and isinstance(roots, list) and roots and isinstance(roots[0], str):
        cwd = roots[0]
    extra: dict[str, Any] = {}
    if event == BEFORE_SHELL_EXECUTION:
        tool_name = CURSOR_SHELL_TOOL
        command = text_field(raw, "command", required=True, limit=None)  # a command may be long
        assert command is not None
        tool_input: dict[str, Any] = {"command": command}
        if cwd:
            tool_input["cwd"] = cwd
    else:
        tool_name = f"mcp__cursor__{required_text(raw, 'tool_name')}"
        tool_input = object_field(raw, "tool_input", json_text=True)
        server = {key: raw[key] for key in ("url", "command") if isinstance(raw.get(key), str)}
        if server:
            extra["mcp_server"] = server
    return _fields(
        event,
        session,
        text_field(raw, "generation_id", required=False) or session,
        tool_name,
        tool_input,
        cwd=cwd,
        model=text_field(raw, "model", required=False),
        extra=extra,
    )


def opencode_fields(raw: dict[str, Any]) -> dict[str, Any]:
    """What Reviewer's OpenCode plugin relays of ``tool.execute.before``."""
    event = expect_event(required_text(raw, "hook_event_name"), (TOOL_EXECUTE_BEFORE,), "opencode")
    session = required_text(raw, "session_id")
    return _fields(
        event,
        session,
        session,
        required_text(raw, "tool"),
        object_field(raw, "args"),
        tool_use_id=text_field(raw, "call_id", required=False),
        cwd=text_field(raw, "cwd", required=False, limit=4096),
    )


_READERS = {"gemini": gemini_fields, "copilot": copilot_fields, "cursor": cursor_fields, "opencode": opencode_fields}


def event_fields(host: str, raw: dict[str, Any]) -> dict[str, Any]:
    """``host``'s event (a JSON object) as ``HookEvent``'s checked fields, or :class:`HookInputError`."""
    if host in CLAUDE_FORMAT_HOSTS:
        return claude_event_fields(raw, host)
    return _READERS[host](raw)


def _dumps(value: dict[str, Any]) -> str:
    return dumps(value, ensure_ascii=False)


def render(host: str, verdict: str, reason: str, updated_input: dict[str, Any] | None, event: str) -> str | None:
    """The stdout text of ``host``'s answer to ``event`` (exit code 0); None when the hook prints nothing.

    Edited arguments go out only where the host runs them; ``verdict`` is allow, deny or ask."""
    if host in CLAUDE_FORMAT_HOSTS:
        if event not in HOST_TABLES[host]["edit_events"]:
            updated_input = None
        return claude_answer(verdict, reason, updated_input, host, event)
    edited = updated_input if verdict == "allow" else None
    output: dict[str, Any]
    if host == "gemini":
        output = {"decision": verdict}
        if reason:
            output["reason"] = reason
        if verdict == "ask" and reason:
            output["systemMessage"] = reason
        if edited is not None:
            output["hookSpecificOutput"] = {"hookEventName": event, "tool_input": edited}
    elif host == "copilot":
        output = {"permissionDecision": verdict}
        if reason:
            output["permissionDecisionReason"] = reason
        if edited is not None:
            output["modifiedArgs"] = edited
    elif host == "cursor":  # takes no edited command
        output = {"permission": verdict}
        if reason:
            output["user_message"] = reason
            output["agent_message"] = reason
    else:  # opencode
        output = {"decision": verdict, "reason": reason}
        if edited is not None:
            output["args"] = edited
    return _dumps(output)
