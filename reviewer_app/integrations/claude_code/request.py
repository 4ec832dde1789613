"""The request a hook event becomes: its id, arguments, schema and hints, built with the standard library.

The fast path writes rule-settled requests with ``sqlite3`` and the full path through the backend; both take
their fields from here, so the two records are the same. :func:`request_data` mirrors
:meth:`reviewer_app.integrations.core.ExternalCall.request_data` (a test keeps them equal).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reviewer_app.domain.hook_lease import hook_process_metadata, process_start_ticks
from reviewer_app.integrations.claude_code.events import HookEvent
from reviewer_app.integrations.claude_code.lean import stable_id

if TYPE_CHECKING:
    from reviewer_app.integrations.core import ExternalCall

__all__ = ["RequestFields", "hook_process_metadata", "process_start_ticks", "request_fields", "stable_id"]

TOOL_APPROVAL = "tool_approval"
CLAUDE_DECISIONS = ("approve", "approve_for_session", "edit", "reject", "steer")
CODEX_DECISIONS = ("approve", "approve_for_session", "reject", "steer")
"""Codex takes allow or deny with a message: no edited input."""


def hitl_id_for(event: HookEvent) -> str:
    """Claude's tool-use id names the call: asking twice for one call finds one request.

    A PermissionRequest carries no such id, and the same command may be asked for twice in one prompt; each
    ask is its own request then, never the decision of an earlier one.
    """
    if event.tool_use_id:
        return stable_id(event.host.value, event.event.value, event.session_id, event.tool_use_id)
    return f"ext_{os.urandom(16).hex()}"


@dataclass(frozen=True, slots=True)
class RequestFields:
    """Everything the request row holds, for either writer."""

    hitl_id: str
    agent: str
    session_id: str
    invocation_id: str
    tool_name: str
    tool_call_id: str | None
    arguments: dict[str, Any]
    description: str | None
    schema: dict[str, Any] | None
    allowed_decisions: tuple[str, ...]
    cwd: str | None
    title: str | None
    extra_data: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    expires_at: int | None = None
    hitl_type: str = TOOL_APPROVAL

    def external_call(self) -> ExternalCall:
        """The same request for the adapter core (the waiting path); imported here only, off the fast path."""
        from reviewer_app.domain.decisions import DecisionKind
        from reviewer_app.integrations.core import ExternalCall

        return ExternalCall(
            hitl_id=self.hitl_id,
            agent=self.agent,
            session_id=self.session_id,
            invocation_id=self.invocation_id,
            tool_name=self.tool_name,
            arguments=self.arguments,
            tool_call_id=self.tool_call_id,
            description=self.description,
            schema=self.schema,
            allowed_decisions=tuple(DecisionKind(kind) for kind in self.allowed_decisions),
            title=self.title,
            cwd=self.cwd,
            expires_at=self.expires_at,
            extra_data=self.extra_data,
            metadata=self.metadata,
        )

    def request_data(self) -> dict[str, Any]:
        """The request's ``data``: built exactly as ``ExternalCall.request_data`` builds it."""
        data: dict[str, Any] = dict(self.extra_data)
        data["arguments"] = self.arguments
        if self.description:
            data["description"] = self.description
        if self.schema is not None:
            data["schema"] = self.schema
        data["allowed_decisions"] = list(self.allowed_decisions)
        if self.cwd:
            data["cwd"] = self.cwd
        return data

    def request_metadata(self) -> dict[str, Any]:
        """As ``ExternalCall.request_metadata``: the host's own keys, then the agent and the external mark."""
        return {**self.metadata, "agent": self.agent, "external": True}

    def check_limits(self) -> None:
        """The library's door (:func:`reviewer_app.domain.limits.check_request`, as ``SQLHITLBackend.create``
        applies it): raises ``RequestRejected`` for what could not be stored and shown, before any writer runs."""
        from reviewer_app.domain.limits import check_request

        check_request(
            {
                "hitl_id": self.hitl_id,
                "hitl_type": self.hitl_type,
                "session_id": self.session_id,
                "invocation_id": self.invocation_id,
                "data": self.request_data(),
                "metadata": self.request_metadata(),
                "tool_name": self.tool_name,
                "tool_call_id": self.tool_call_id,
            }
        )


def request_fields(
    event: HookEvent,
    *,
    hitl_id: str | None = None,
    title: str | None = None,
    extra: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
    expires_at: int | None = None,
) -> RequestFields:
    """The request for ``event``; ``extra`` adds data keys (a diff), ``metadata`` the hook's process."""
    from reviewer_app.integrations.hosts.registry import profile_for

    profile = profile_for(event.host)
    description = event.tool_input.get("description")
    extra_data: dict[str, Any] = {"hook_event": event.event.value, "shell_tools": list(profile.shell_tools)}
    if event.permission_mode:
        extra_data["permission_mode"] = event.permission_mode
    if event.transcript_path:
        extra_data["transcript_path"] = event.transcript_path
    if event.model:
        extra_data["model"] = event.model
    extra_data.update(event.extra)
    extra_data.update(extra or {})
    return RequestFields(
        hitl_id=hitl_id or hitl_id_for(event),
        agent=event.host.value,
        session_id=event.session_id,
        invocation_id=event.run_id,
        tool_name=event.tool_name,
        tool_call_id=event.tool_use_id,
        arguments=event.tool_input,
        description=description if isinstance(description, str) else None,
        schema=profile.schema_for(event.tool_name),
        allowed_decisions=profile.decisions(event.event),
        cwd=event.cwd,
        title=title,
        extra_data=extra_data,
        metadata=dict(metadata or {}),
        expires_at=expires_at,
    )
