"""Gemini CLI's ``BeforeTool`` hook (``~/.gemini/settings.json``).

The event: ``{session_id, transcript_path, cwd, hook_event_name: "BeforeTool", timestamp, tool_name, tool_input,
mcp_context?}``. The answer is JSON on stdout: ``decision`` allow / deny / ask with a ``reason`` (a deny reaches the
model as ``Tool execution blocked: <reason>``; ask forces Gemini's own confirmation), and
``hookSpecificOutput.tool_input`` replaces the call's arguments (Gemini validates them again), so edits work.

An allow does not bypass Gemini's own policy check that follows: with its default approval mode a non-interactive
run still refuses the call, so Reviewer is the gate only with ``--approval-mode yolo``; installed, it is never more
permissive than Gemini without it. MCP calls (``mcp_context`` present) are named ``mcp__<server>__<tool>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reviewer_app.integrations.claude_code.events import (
    Answer,
    HookEvent,
    HookEventName,
    Host,
    Verdict,
    load_object,
    text_field,
)
from reviewer_app.integrations.hosts.claude_format import GEMINI_STYLE_READ_ONLY, GEMINI_STYLE_SCHEMAS
from reviewer_app.integrations.hosts.profile import (
    HostProfile,
    Reply,
    dumps,
    expect_event,
    object_field,
    required_text,
)


@dataclass(frozen=True)
class GeminiProfile(HostProfile):
    def parse(self, payload: bytes) -> HookEvent:
        raw = load_object(payload)
        event = expect_event(required_text(raw, "hook_event_name"), (HookEventName.BEFORE_TOOL,), self.host)
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
        return HookEvent(
            host=self.host,
            event=event,
            session_id=session_id,
            run_id=session_id,
            tool_name=tool_name,
            tool_input=object_field(raw, "tool_input"),
            cwd=text_field(raw, "cwd", required=False, limit=4096),
            transcript_path=text_field(raw, "transcript_path", required=False, limit=4096),
            extra=extra,
        )

    def render(self, answer: Answer, event: HookEventName) -> Reply:
        output: dict[str, Any] = {"decision": answer.verdict.value}
        if answer.reason:
            output["reason"] = answer.reason
        if answer.verdict is Verdict.ASK and answer.reason:
            output["systemMessage"] = answer.reason
        if answer.verdict is Verdict.ALLOW and answer.updated_input is not None:
            output["hookSpecificOutput"] = {"hookEventName": event.value, "tool_input": answer.updated_input}
        return Reply(dumps(output))


GEMINI = GeminiProfile(
    Host.GEMINI,
    HookEventName.BEFORE_TOOL,
    edit_events=frozenset({HookEventName.BEFORE_TOOL}),
    shell_tools=("run_shell_command",),
    read_only_tools=GEMINI_STYLE_READ_ONLY,
    schemas=GEMINI_STYLE_SCHEMAS,
)
