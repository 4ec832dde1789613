"""Cursor's ``beforeShellExecution`` and ``beforeMCPExecution`` hooks (``~/.cursor/hooks.json``).

The shell event: ``{conversation_id, generation_id, hook_event_name, workspace_roots, command, cwd}``; the MCP
one has ``tool_name`` and ``tool_input`` (JSON text) and the server's ``url`` or ``command`` but not its name, so
its calls are named ``mcp__cursor__<tool>``. The answer: ``permission`` allow / deny / ask, ``user_message`` and
``agent_message`` (what the model reads). Cursor takes no edited command: its requests offer no "edit".
Shell calls are recorded as the tool ``Shell`` with ``{command, cwd}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reviewer_app.integrations.claude_code.events import Answer, HookEvent, HookEventName, Host, load_object, text_field
from reviewer_app.integrations.hosts.profile import (
    HostProfile,
    Reply,
    dumps,
    expect_event,
    named_event,
    object_field,
    required_text,
)

EVENTS = (HookEventName.BEFORE_SHELL_EXECUTION, HookEventName.BEFORE_MCP_EXECUTION)
SHELL_TOOL = "Shell"


@dataclass(frozen=True)
class CursorProfile(HostProfile):
    def event_name_in(self, payload: bytes) -> HookEventName:
        return named_event(payload, EVENTS, self.default_event)

    def parse(self, payload: bytes) -> HookEvent:
        raw = load_object(payload)
        event = expect_event(required_text(raw, "hook_event_name"), EVENTS, self.host)
        session = required_text(raw, "conversation_id")
        cwd = text_field(raw, "cwd", required=False, limit=4096)
        roots = raw.get("workspace_roots")
        if cwd is None and isinstance(roots, list) and roots and isinstance(roots[0], str):
            cwd = roots[0]
        extra: dict[str, Any] = {}
        if event is HookEventName.BEFORE_SHELL_EXECUTION:
            tool_name = SHELL_TOOL
            tool_input: dict[str, Any] = {"command": required_text_any(raw, "command")}
            if cwd:
                tool_input["cwd"] = cwd
        else:
            tool_name = f"mcp__cursor__{required_text(raw, 'tool_name')}"
            tool_input = object_field(raw, "tool_input", json_text=True)
            server = {key: raw[key] for key in ("url", "command") if isinstance(raw.get(key), str)}
            if server:
                extra["mcp_server"] = server
        return HookEvent(
            host=self.host,
            event=event,
            session_id=session,
            run_id=text_field(raw, "generation_id", required=False) or session,
            tool_name=tool_name,
            tool_input=tool_input,
            cwd=cwd,
            model=text_field(raw, "model", required=False),
            extra=extra,
        )

    def render(self, answer: Answer, event: HookEventName) -> Reply:
        output: dict[str, Any] = {"permission": answer.verdict.value}
        if answer.reason:
            output["user_message"] = answer.reason
            output["agent_message"] = answer.reason
        return Reply(dumps(output))


def required_text_any(raw: dict[str, Any], key: str) -> str:
    """A command may be long: no identifier length limit, but it must be a non-empty string."""
    value = text_field(raw, key, required=True, limit=None)
    assert value is not None
    return value


CURSOR = CursorProfile(Host.CURSOR, HookEventName.BEFORE_SHELL_EXECUTION, shell_tools=(SHELL_TOOL,))
