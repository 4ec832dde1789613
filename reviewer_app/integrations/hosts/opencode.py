"""OpenCode, through a small plugin (:mod:`.install` writes it) whose ``tool.execute.before`` runs the hook.

The plugin sends ``{hook_event_name: "tool.execute.before", session_id, call_id, tool, args, cwd}`` and reads
``{decision, reason, args?}``: allow runs the call (with ``args`` replacing its arguments after an edit), anything
else throws, and OpenCode hands the error's text (the reason) to the model. The plugin treats a failed or silent
hook as a deny: OpenCode has no prompt of its own to fall back to from this event.
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
from reviewer_app.integrations.claude_code.schemas import NON_EMPTY, SHELL_SCHEMA, STRING, object_schema
from reviewer_app.integrations.hosts.profile import (
    HostProfile,
    Reply,
    dumps,
    expect_event,
    object_field,
    required_text,
)

OPENCODE_SCHEMAS: dict[str, dict[str, Any]] = {
    "bash": SHELL_SCHEMA,
    "write": object_schema({"filePath": NON_EMPTY, "content": STRING}, ["filePath", "content"]),
    "edit": object_schema(
        {"filePath": NON_EMPTY, "oldString": STRING, "newString": STRING, "replaceAll": {"type": "boolean"}},
        ["filePath", "oldString", "newString"],
    ),
}


@dataclass(frozen=True)
class OpenCodeProfile(HostProfile):
    def parse(self, payload: bytes) -> HookEvent:
        raw = load_object(payload)
        event = expect_event(required_text(raw, "hook_event_name"), (HookEventName.TOOL_EXECUTE_BEFORE,), self.host)
        session = required_text(raw, "session_id")
        return HookEvent(
            host=self.host,
            event=event,
            session_id=session,
            run_id=session,
            tool_name=required_text(raw, "tool"),
            tool_input=object_field(raw, "args"),
            tool_use_id=text_field(raw, "call_id", required=False),
            cwd=text_field(raw, "cwd", required=False, limit=4096),
        )

    def render(self, answer: Answer, event: HookEventName) -> Reply:
        output: dict[str, Any] = {"decision": answer.verdict.value, "reason": answer.reason}
        if answer.verdict is Verdict.ALLOW and answer.updated_input is not None:
            output["args"] = answer.updated_input
        return Reply(dumps(output))


OPENCODE = OpenCodeProfile(
    Host.OPENCODE,
    HookEventName.TOOL_EXECUTE_BEFORE,
    edit_events=frozenset({HookEventName.TOOL_EXECUTE_BEFORE}),
    shell_tools=("bash",),
    read_only_tools=("read", "glob", "grep", "list", "todoread", "todowrite"),
    schemas=OPENCODE_SCHEMAS,
)
