"""The record types every layer passes around: an inbox row, a listing query, a run, an audit entry.

Plain data, so the UI, the runtime and the CLI name them without importing the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reviewer_app.domain.hitl import HITLStatus


@dataclass(frozen=True, slots=True)
class RequestSummary:
    """What an inbox row shows; loaded for every request, so it stays small."""

    hitl_id: str
    hitl_type: str
    session_id: str
    invocation_id: str
    tool_name: str | None
    summary: str
    agent: str | None
    status: str
    created_at: int
    expires_at: int | None
    updated_at_ms: int
    decision: str | None
    decided_by: str | None
    external: bool = False  # raised by an agent in another process


@dataclass(frozen=True, slots=True)
class RequestQuery:
    """Filtered, paged listing for the UI and the CLI. Empty fields do not filter."""

    statuses: tuple[str, ...] = (HITLStatus.PENDING.value,)
    session_id: str | None = None
    invocation_id: str | None = None
    hitl_type: str | None = None
    tool_name: str | None = None
    agent: str | None = None
    text: str | None = None
    updated_since_ms: int | None = None
    limit: int | None = None
    offset: int = 0
    newest_first: bool = False


@dataclass(frozen=True, slots=True)
class AuditEntry:
    id: int
    hitl_id: str
    decision: str
    reviewer: str
    at_ms: int
    shown_args: Any
    shown_args_sha256: str | None
    edited_args: Any
    message: str | None
    prev_hash: str
    row_hash: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "hitl_id": self.hitl_id,
            "decision": self.decision,
            "reviewer": self.reviewer,
            "time": self.at_ms / 1000,
            "at_ms": self.at_ms,
            "shown_args_sha256": self.shown_args_sha256,
            "edited_args": self.edited_args,
            "message": self.message,
            "row_hash": self.row_hash,
        }


@dataclass(frozen=True, slots=True)
class AuditReport:
    """Result of walking the audit chain; ``first_bad_id`` is where it breaks."""

    ok: bool
    rows_checked: int
    first_bad_id: int | None = None
    problem: str | None = None


@dataclass(slots=True)
class RunRecord:
    """An invocation as the runs board and the runtime see it."""

    id: str
    session_id: str
    agent: str | None
    prompt: str | None
    state: str
    parent_id: str | None
    external: bool
    owner: str | None
    error: str | None
    created_at: int
    started_at: int | None
    finished_at: int | None
    updated_at_ms: int
    active_ms: int
    workspace: str | None = None
    pending: int = field(default=0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "invocation_id": self.id,
            "session_id": self.session_id,
            "agent": self.agent,
            "prompt": self.prompt,
            "state": self.state,
            "parent_id": self.parent_id,
            "external": self.external,
            "error": self.error,
            "created_at": self.created_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "active_ms": self.active_ms,
            "pending": self.pending,
        }
