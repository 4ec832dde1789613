"""Cursor's ``beforeShellExecution`` and ``beforeMCPExecution`` hooks (``~/.cursor/hooks.json``).

The shell event: ``{conversation_id, generation_id, hook_event_name, workspace_roots, command, cwd}``; the MCP
one has ``tool_name`` and ``tool_input`` (JSON text) and the server's ``url`` or ``command`` but not its name, so
its calls are named ``mcp__cursor__<tool>``. The answer: ``permission`` allow / deny / ask, ``user_message`` and
``agent_message`` (what the model reads). Cursor takes no edited command: its requests offer no "edit".
Shell calls are recorded as the tool ``Shell`` with ``{command, cwd}``.
"""

from __future__ import annotations

from dataclasses import dataclass

from reviewer_app.integrations.claude_code.events import HookEventName, Host
from reviewer_app.integrations.hosts.profile import HostProfile, named_event, tables_of

EVENTS = (HookEventName.BEFORE_SHELL_EXECUTION, HookEventName.BEFORE_MCP_EXECUTION)


@dataclass(frozen=True)
class CursorProfile(HostProfile):
    def event_name_in(self, payload: bytes) -> HookEventName:
        return named_event(payload, EVENTS, self.default_event)


CURSOR = CursorProfile(Host.CURSOR, **tables_of(Host.CURSOR))
