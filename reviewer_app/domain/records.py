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
    tool_name: str | None = None
    """The tool of the request the row decided (read with the row, not signed by it); None for a rule event."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "hitl_id": self.hitl_id,
            "tool_name": self.tool_name,
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
    anchors_checked: int = 0
    """Chain heads recorded outside the database that the chain was checked against."""
    warning: str | None = None


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
    heartbeat_ms: int | None = None  # the owning process's last heartbeat (unix ms)
    process_group: int | None = None  # the process group of the tool its owner is running
    expired: int = 0  # its requests that expired without a decision
    aborted: int = 0  # its requests that were cancelled (their calls aborted) while the run went on

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


@dataclass(frozen=True, slots=True)
class NewRequest:
    """A request about to be created: the one value every creator builds (the backend, the gate, the hooks)."""

    hitl_id: str
    hitl_type: str
    session_id: str
    invocation_id: str
    data: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    block_id: str | None = None
    resume_mode: str = "response"
    tool_state: dict[str, Any] | None = None
    checkpoint_id: str | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    node_id: str | None = None
    expires_at: int | None = None
    agent: str | None = None
    external: bool = False

    def __post_init__(self) -> None:
        if not self.hitl_id or not self.session_id or not self.invocation_id:
            raise ValueError("hitl_id, session_id and invocation_id must be non-empty")
        if self.resume_mode not in ("response", "continuation"):
            raise ValueError(f"resume_mode must be 'response' or 'continuation', not {self.resume_mode!r}")
        if not isinstance(self.data, dict) or not isinstance(self.metadata, dict):
            raise TypeError("data and metadata must be JSON objects (dicts)")

    @property
    def agent_name(self) -> str | None:
        """The agent named explicitly, else the one the metadata names."""
        named = self.agent or self.metadata.get("agent")
        return named if isinstance(named, str) else None
