"""The hosts that speak Claude Code's hook format: Claude Code itself, Codex, Qwen Code and Factory's droid.

Qwen Code and Factory accept Claude's ``PreToolUse``/``PermissionRequest`` payloads and answers nearly byte for
byte; they differ in their tool names and in which answers carry edited input: Qwen reads ``updatedInput`` only
from a ``PermissionRequest`` decision (its ``PreToolUse`` answer has no such field); Factory's droid runs the
``updatedInput`` of a PreToolUse allow (seen with droid 0.225.2).
"""

from __future__ import annotations

from dataclasses import dataclass

from reviewer_app.integrations.claude_code.events import CLAUDE_EVENTS, HookEventName, Host, event_name_in
from reviewer_app.integrations.hosts.profile import HostProfile, tables_of


@dataclass(frozen=True)
class ClaudeFormat(HostProfile):
    """Claude's payload and answer (:func:`.wire.claude_event_fields`, :func:`.wire.claude_answer`)."""

    def event_name_in(self, payload: bytes) -> HookEventName:
        name = event_name_in(payload)
        if self.default_event is HookEventName.PERMISSION_REQUEST and name is not HookEventName.PERMISSION_REQUEST:
            return self.default_event  # Codex: only PermissionRequest, in that format
        return name if name in CLAUDE_EVENTS else self.default_event


CLAUDE_CODE, CODEX, QWEN, FACTORY = (
    ClaudeFormat(host, **tables_of(host)) for host in (Host.CLAUDE_CODE, Host.CODEX, Host.QWEN, Host.FACTORY)
)
CLAUDE_FORMAT = {profile.host: profile for profile in (CLAUDE_CODE, CODEX, QWEN, FACTORY)}
