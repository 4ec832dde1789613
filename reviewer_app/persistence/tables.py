"""SQLModel tables: the durable record of what agents asked and what humans decided.

Writes go through SQLAlchemy Core on these tables' ``__table__`` (see
:mod:`reviewer_app.persistence.store`): the ORM's unit of work costs more per
row than the whole SQLite commit does.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Column, Index, LargeBinary, Text, UniqueConstraint
from sqlmodel import Field, SQLModel


def _json(nullable: bool = True) -> Any:
    return Field(default=None, sa_column=Column(JSON, nullable=nullable))


class SessionRow(SQLModel, table=True):
    """A conversation with an agent; invocations (runs) belong to it."""

    __tablename__ = "sessions"

    id: str = Field(primary_key=True)
    agent: str | None = None
    title: str | None = None
    workspace: str | None = None
    external: bool = False
    created_at: int = Field(sa_type=BigInteger)
    updated_at: int = Field(sa_type=BigInteger)


class InvocationRow(SQLModel, table=True):
    """One run of an agent inside a session: the unit the runs board shows."""

    __tablename__ = "invocations"
    __table_args__ = (Index("ix_invocations_state", "state"), Index("ix_invocations_created", "created_at"))

    id: str = Field(primary_key=True)
    session_id: str = Field(foreign_key="sessions.id", index=True)
    agent: str | None = None
    prompt: str | None = Field(default=None, sa_type=Text)
    state: str = "queued"
    parent_id: str | None = None  # the run this one retries or follows up
    external: bool = False
    owner: str | None = None  # process that drives the run while it is running
    error: str | None = Field(default=None, sa_type=Text)
    created_at: int = Field(sa_type=BigInteger)
    started_at: int | None = Field(default=None, sa_type=BigInteger)
    finished_at: int | None = Field(default=None, sa_type=BigInteger)
    updated_at_ms: int = Field(sa_type=BigInteger, index=True)
    active_ms: int = Field(default=0, sa_type=BigInteger)  # wall time not spent waiting for a human
    heartbeat_ms: int | None = Field(default=None, sa_type=BigInteger)  # the owner's last sign of life
    process_group: int | None = None  # the group of the shell tool the owner is running, killed on recovery


class HITLRequestRow(SQLModel, table=True):
    """A request for a human, keyed by ``hitl_id`` (aury-agent's HITL record)."""

    __tablename__ = "hitl_requests"
    __table_args__ = (
        Index("ix_hitl_status_created", "status", "created_at"),
        Index("ix_hitl_updated_ms", "updated_at_ms"),
        Index("ix_hitl_status_expires", "status", "expires_at"),
        Index("ix_hitl_invocation_status", "invocation_id", "status"),
        Index("ix_hitl_created", "created_at"),  # the statistics' partial hours (migration 0012)
        Index("ix_hitl_responded", "responded_at"),
    )

    hitl_id: str = Field(primary_key=True)
    hitl_type: str
    session_id: str = Field(foreign_key="sessions.id", index=True)
    invocation_id: str = Field(foreign_key="invocations.id", index=True)
    data: Any = _json(nullable=False)
    meta: Any = Field(default=None, sa_column=Column("metadata", JSON, nullable=False))
    block_id: str | None = None
    status: str = "pending"
    resume_mode: str = "response"
    tool_state: Any = _json()
    checkpoint_id: str | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    node_id: str | None = None
    expires_at: int | None = Field(default=None, sa_type=BigInteger)
    user_response: Any = _json()
    responded_at: int | None = Field(default=None, sa_type=BigInteger)
    created_at: int = Field(sa_type=BigInteger)
    updated_at: int = Field(sa_type=BigInteger)
    # Ours, not the protocol's: change tracking and triage columns.
    updated_at_ms: int = Field(sa_type=BigInteger)
    summary: str = ""
    agent: str | None = None
    decision: str | None = None
    decided_by: str | None = None
    external: bool = False


class BlockEventRow(SQLModel, table=True):
    """Append-only timeline event; ``seq`` orders them."""

    __tablename__ = "block_events"
    __table_args__ = (Index("ix_block_events_invocation_seq", "invocation_id", "seq"),)

    seq: int | None = Field(default=None, primary_key=True)
    block_id: str
    parent_id: str | None = None
    kind: str
    op: str
    data: Any = _json(nullable=False)
    ts_ms: int = Field(sa_type=BigInteger)
    session_id: str = Field(index=True)
    invocation_id: str
    blob_refs: Any = _json()  # large top-level fields of ``data``, stored once in ``blobs`` (persistence/blobs.py)


class CheckpointRow(SQLModel, table=True):
    """A run's resumable state: the current turn's pending calls, counters and how many messages it resumes from.

    The conversation itself is in ``run_messages``; a superseded checkpoint is deleted by the commit that
    replaces it unless a pending request names it. (Format 1, before migration 0009, held the whole conversation.)
    """

    __tablename__ = "checkpoints"
    __table_args__ = (Index("ix_checkpoints_invocation", "invocation_id", "created_ms"),)

    checkpoint_id: str = Field(primary_key=True)
    invocation_id: str = Field(foreign_key="invocations.id")
    session_id: str
    state: Any = _json(nullable=False)
    created_ms: int = Field(sa_type=BigInteger)


class RunMessageRow(SQLModel, table=True):
    """One message of a run's conversation (OpenAI chat format), written once when the run commits it."""

    __tablename__ = "run_messages"

    invocation_id: str = Field(primary_key=True)
    idx: int = Field(primary_key=True)
    message: Any = _json(nullable=False)


class BlobRow(SQLModel, table=True):
    """A large value stored once, by the SHA-256 of its bytes (``codec``: raw or zlib), see persistence/blobs.py."""

    __tablename__ = "blobs"

    sha256: str = Field(primary_key=True)
    codec: str
    size: int = Field(sa_type=BigInteger)
    data: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


class SessionRuleRow(SQLModel, table=True):
    """An approve-for-session waiver: this tool, within the exact parsed scope it grants, needs no approval here."""

    __tablename__ = "session_rules"
    __table_args__ = (UniqueConstraint("session_id", "tool_name", "scope", name="uq_session_rule_scope"),)

    id: int | None = Field(default=None, primary_key=True)
    session_id: str = Field(foreign_key="sessions.id", index=True)
    tool_name: str
    scope: str = Field(default="", sa_column_kwargs={"server_default": ""})
    """Canonical JSON of the granted :class:`CommandScope`; empty for a whole (non-shell) tool."""
    created_at: int = Field(sa_type=BigInteger)
    created_by: str | None = None
    hitl_id: str | None = None


class PolicyRuleRow(SQLModel, table=True):
    """A persistent allow / ask / deny rule (``reviewer_app.domain.rules.Rule``) and how often it has decided."""

    __tablename__ = "policy_rules"
    __table_args__ = (Index("ix_policy_rules_revoked_at", "revoked_at"),)

    id: str = Field(primary_key=True)
    effect: str
    pattern: str = Field(sa_type=Text)
    scope: str
    expires_at: float | None = None
    note: str = Field(default="", sa_type=Text)
    created_at: float
    created_by: str | None = None
    revoked_at: float | None = None
    hit_count: int = Field(default=0, sa_type=BigInteger)
    last_hit_at: float | None = None


class AuditRow(SQLModel, table=True):
    """Append-only, hash-chained record of every decision."""

    __tablename__ = "audit_log"

    id: int | None = Field(default=None, primary_key=True)
    hitl_id: str = Field(index=True)
    decision: str
    reviewer: str
    at_ms: int = Field(sa_type=BigInteger)
    shown_args: Any = _json()
    shown_args_sha256: str | None = None
    shown_args_ref: str | None = None  # large shown arguments: the blob holding them (then shown_args is NULL)
    edited_args: Any = _json()
    message: str | None = Field(default=None, sa_type=Text)
    prev_hash: str
    row_hash: str


class MetaRow(SQLModel, table=True):
    """Small key/value facts about the database (the audit chain head, the app that wrote it)."""

    __tablename__ = "reviewer_meta"

    key: str = Field(primary_key=True)
    value: str = Field(sa_type=Text)


class StatsCreatedPerHourRow(SQLModel, table=True):
    """Requests created per hour, agent and tool: kept by triggers on ``hitl_requests`` (migration 0012)."""

    __tablename__ = "stats_created_per_hour"

    hour_s: int = Field(primary_key=True, sa_type=BigInteger)
    agent: str = Field(primary_key=True)
    tool: str = Field(primary_key=True)
    n: int = Field(sa_type=BigInteger)


class StatsDecidedPerHourRow(SQLModel, table=True):
    """Requests decided per hour, decider, status and time-to-decision bucket, with the sum of their waits: kept by
    triggers on ``hitl_requests`` (migration 0012). ``decided_by`` is '' and ``has_decider`` 0 for no decider."""

    __tablename__ = "stats_decided_per_hour"

    hour_s: int = Field(primary_key=True, sa_type=BigInteger)
    decided_by: str = Field(primary_key=True)
    has_decider: int = Field(primary_key=True)
    status: str = Field(primary_key=True)
    waited_index: int = Field(primary_key=True)
    n: int = Field(sa_type=BigInteger)
    waited_s: int = Field(sa_type=BigInteger)


metadata = SQLModel.metadata


# Core table handles: the store writes through SQLAlchemy Core (or its SQLite fast path), not the ORM.
requests_t = HITLRequestRow.__table__  # type: ignore[attr-defined]

sessions_t = SessionRow.__table__  # type: ignore[attr-defined]

invocations_t = InvocationRow.__table__  # type: ignore[attr-defined]

events_t = BlockEventRow.__table__  # type: ignore[attr-defined]

checkpoints_t = CheckpointRow.__table__  # type: ignore[attr-defined]

run_messages_t = RunMessageRow.__table__  # type: ignore[attr-defined]

blobs_t = BlobRow.__table__  # type: ignore[attr-defined]

rules_t = SessionRuleRow.__table__  # type: ignore[attr-defined]

policy_rules_t = PolicyRuleRow.__table__  # type: ignore[attr-defined]

audit_t = AuditRow.__table__  # type: ignore[attr-defined]

meta_t = MetaRow.__table__  # type: ignore[attr-defined]

stats_created_t = StatsCreatedPerHourRow.__table__  # type: ignore[attr-defined]

stats_decided_t = StatsDecidedPerHourRow.__table__  # type: ignore[attr-defined]
