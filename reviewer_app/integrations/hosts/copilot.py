"""GitHub Copilot CLI's ``preToolUse`` hook (``~/.copilot/hooks/*.json``, ``$COPILOT_HOME``).

The event: ``{timestamp, cwd, toolName, toolArgs}`` (``toolArgs`` a JSON object, or its JSON text), with
``sessionId`` where the CLI sends one. The answer: ``permissionDecision`` allow / deny / ask with
``permissionDecisionReason``, and ``modifiedArgs`` (the arguments the tool runs with) on an allow, so edits work.
Copilot does not pass the reason of an "ask" the user then declines on to the model (github/copilot-cli#2647):
Reviewer answers allow or deny itself and uses ask only when it cannot decide.

Without a session id in the event, the session is the working directory (one run per project).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reviewer_app.integrations.claude_code.events import (
    Answer,
    HookEvent,
    HookEventName,
    HookInputError,
    Host,
    Verdict,
    load_object,
    text_field,
)
from reviewer_app.integrations.claude_code.schemas import NON_EMPTY, SHELL_SCHEMA, STRING, object_schema
from reviewer_app.integrations.hosts.profile import HostProfile, Reply, dumps, object_field, required_text

COPILOT_SCHEMAS: dict[str, dict[str, Any]] = {
    "bash": SHELL_SCHEMA,
    "create": object_schema({"path": NON_EMPTY, "file_text": STRING}, ["path", "file_text"]),
    "edit": object_schema({"path": NON_EMPTY, "old_str": STRING, "new_str": STRING}, ["path"]),
}


@dataclass(frozen=True)
class CopilotProfile(HostProfile):
    def parse(self, payload: bytes) -> HookEvent:
        raw = load_object(payload)
        name = text_field(raw, "hook_event_name", required=False) or HookEventName.COPILOT_PRE_TOOL_USE.value
        if name not in (HookEventName.COPILOT_PRE_TOOL_USE.value, HookEventName.PRE_TOOL_USE.value):
            raise HookInputError(f"the copilot hook answers preToolUse, not {name!r}")
        cwd = text_field(raw, "cwd", required=False, limit=4096)
        session = text_field(raw, "sessionId", required=False) or text_field(raw, "session_id", required=False)
        if session is None:
            session = f"copilot:{cwd or '?'}"
        return HookEvent(
            host=self.host,
            event=HookEventName.COPILOT_PRE_TOOL_USE,
            session_id=session,
            run_id=session,
            tool_name=required_text(raw, "toolName"),
            tool_input=object_field(raw, "toolArgs", json_text=True),
            tool_use_id=text_field(raw, "toolCallId", required=False),
            cwd=cwd,
        )

    def render(self, answer: Answer, event: HookEventName) -> Reply:
        output: dict[str, Any] = {"permissionDecision": answer.verdict.value}
        if answer.reason:
            output["permissionDecisionReason"] = answer.reason
        if answer.verdict is Verdict.ALLOW and answer.updated_input is not None:
            output["modifiedArgs"] = answer.updated_input
        return Reply(dumps(output))


COPILOT = CopilotProfile(
    Host.COPILOT,
    HookEventName.COPILOT_PRE_TOOL_USE,
    edit_events=frozenset({HookEventName.COPILOT_PRE_TOOL_USE}),
    shell_tools=("bash",),
    read_only_tools=("view", "grep", "glob"),
    schemas=COPILOT_SCHEMAS,
)
