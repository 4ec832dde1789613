"""The tables as SQLAlchemy Core ``Table`` objects, for the processes that open the store.

:mod:`reviewer_app.persistence.tables` (SQLModel) is the schema's definition: the migrations' autogenerate and the
tests read it. The store writes through Core (or its SQLite fast path), never the ORM, and uses only each class's
``__table__``; importing SQLModel, pydantic and the ORM to get them cost every process that opens the store (a
permission hook waiting for a reviewer, the MCP proxy, each CLI command) ~0.18 s of CPU. These are the same tables
written in Core: ``tests/persistence/test_core_tables.py`` checks them against the SQLModel classes column by
column (type, nullability, defaults, keys, indexes, constraints, and the DDL on SQLite and PostgreSQL), so a change
to one that is not made to the other fails the tests.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData()


def _key(name: str, *, foreign_key: str | None = None) -> Column[str]:
    """A string primary key (or part of one)."""
    return Column(name, String(), *([ForeignKey(foreign_key)] if foreign_key else []), primary_key=True)


def _text(name: str, *, nullable: bool = False, default: str | None = None, index: bool = False) -> Column[str]:
    """A string column (VARCHAR without a length: SQLModel's ``str``)."""
    return Column(name, String(), nullable=nullable, default=default, index=index)


def _ref(name: str, target: str, *, index: bool = False) -> Column[str]:
    """A required string naming a row of another table."""
    return Column(name, String(), ForeignKey(target), nullable=False, index=index)


def _big(name: str, *, nullable: bool = False, default: int | None = None, index: bool = False) -> Column[int]:
    return Column(name, BigInteger(), nullable=nullable, default=default, index=index)


def _json(name: str, *, nullable: bool = True) -> Column[object]:
    return Column(name, JSON(), nullable=nullable)


def _flag(name: str) -> Column[bool]:
    return Column(name, Boolean(), nullable=False, default=False)


# A conversation with an agent; invocations (runs) belong to it.
sessions_t = Table(
    "sessions",
    metadata,
    _key("id"),
    _text("agent", nullable=True),
    _text("title", nullable=True),
    _text("workspace", nullable=True),
    _flag("external"),
    _big("created_at"),
    _big("updated_at"),
)

# One run of an agent inside a session: the unit the runs board shows.
invocations_t = Table(
    "invocations",
    metadata,
    _key("id"),
    _ref("session_id", "sessions.id", index=True),
    _text("agent", nullable=True),
    Column("prompt", Text(), nullable=True),
    _text("state", default="queued"),
    _text("parent_id", nullable=True),  # the run this one retries or follows up
    _flag("external"),
    _text("owner", nullable=True),  # process that drives the run while it is running
    Column("error", Text(), nullable=True),
    _big("created_at"),
    _big("started_at", nullable=True),
    _big("finished_at", nullable=True),
    _big("updated_at_ms", index=True),
    _big("active_ms", default=0),  # wall time not spent waiting for a human
    _big("heartbeat_ms", nullable=True),  # the owner's last sign of life
    Column("process_group", Integer(), nullable=True),  # the group of the shell tool the owner is running
    Index("ix_invocations_state", "state"),
    Index("ix_invocations_created", "created_at"),
)

# A request for a human, keyed by ``hitl_id`` (aury-agent's HITL record).
requests_t = Table(
    "hitl_requests",
    metadata,
    _key("hitl_id"),
    _text("hitl_type"),
    _ref("session_id", "sessions.id", index=True),
    _ref("invocation_id", "invocations.id", index=True),
    _json("data", nullable=False),
    _json("metadata", nullable=False),
    _text("block_id", nullable=True),
    _text("status", default="pending"),
    _text("resume_mode", default="response"),
    _json("tool_state"),
    _text("checkpoint_id", nullable=True),
    _text("tool_name", nullable=True),
    _text("tool_call_id", nullable=True),
    _text("node_id", nullable=True),
    _big("expires_at", nullable=True),
    _json("user_response"),
    _big("responded_at", nullable=True),
    _big("created_at"),
    _big("updated_at"),
    # Ours, not the protocol's: change tracking and triage columns.
    _big("updated_at_ms"),
    _text("summary", default=""),
    _text("agent", nullable=True),
    _text("decision", nullable=True),
    _text("decided_by", nullable=True),
    _flag("external"),
    Index("ix_hitl_status_created", "status", "created_at"),
    Index("ix_hitl_updated_ms", "updated_at_ms"),
    Index("ix_hitl_status_expires", "status", "expires_at"),
    Index("ix_hitl_invocation_status", "invocation_id", "status"),
    Index("ix_hitl_created", "created_at"),  # the statistics' partial hours (migration 0012)
    Index("ix_hitl_responded", "responded_at"),
)

# Append-only timeline event; ``seq`` orders them.
events_t = Table(
    "block_events",
    metadata,
    Column("seq", Integer(), primary_key=True),
    _text("block_id"),
    _text("parent_id", nullable=True),
    _text("kind"),
    _text("op"),
    _json("data", nullable=False),
    _big("ts_ms"),
    _text("session_id", index=True),
    _text("invocation_id"),
    _json("blob_refs"),  # large top-level fields of ``data``, stored once in ``blobs`` (persistence/blobs.py)
    Index("ix_block_events_invocation_seq", "invocation_id", "seq"),
)

# A run's resumable state: the current turn's pending calls, counters and how many messages it resumes from. The
# conversation itself is in ``run_messages``; a superseded checkpoint is deleted by the commit that replaces it
# unless a pending request names it. (Format 1, before migration 0009, held the whole conversation.)
checkpoints_t = Table(
    "checkpoints",
    metadata,
    _key("checkpoint_id"),
    _ref("invocation_id", "invocations.id"),
    _text("session_id"),
    _json("state", nullable=False),
    _big("created_ms"),
    Index("ix_checkpoints_invocation", "invocation_id", "created_ms"),
)

# One message of a run's conversation (OpenAI chat format), written once when the run commits it.
run_messages_t = Table(
    "run_messages",
    metadata,
    _key("invocation_id"),
    Column("idx", Integer(), primary_key=True),
    _json("message", nullable=False),
)

# A large value stored once, by the SHA-256 of its bytes (``codec``: raw or zlib), see persistence/blobs.py.
blobs_t = Table(
    "blobs",
    metadata,
    _key("sha256"),
    _text("codec"),
    _big("size"),
    Column("data", LargeBinary(), nullable=False),
)

# An approve-for-session waiver: this tool, within the exact parsed scope it grants, needs no approval here.
# ``scope``: canonical JSON of the granted CommandScope; empty for a whole (non-shell) tool.
rules_t = Table(
    "session_rules",
    metadata,
    Column("id", Integer(), primary_key=True),
    _ref("session_id", "sessions.id", index=True),
    _text("tool_name"),
    Column("scope", String(), nullable=False, default="", server_default=""),
    _big("created_at"),
    _text("created_by", nullable=True),
    _text("hitl_id", nullable=True),
    UniqueConstraint("session_id", "tool_name", "scope", name="uq_session_rule_scope"),
)

# A persistent allow / ask / deny rule (``reviewer_app.domain.rules.Rule``) and how often it has decided.
policy_rules_t = Table(
    "policy_rules",
    metadata,
    _key("id"),
    _text("effect"),
    Column("pattern", Text(), nullable=False),
    _text("scope"),
    Column("expires_at", Float(), nullable=True),
    Column("note", Text(), nullable=False, default=""),
    Column("created_at", Float(), nullable=False),
    _text("created_by", nullable=True),
    Column("revoked_at", Float(), nullable=True),
    _big("hit_count", default=0),
    Column("last_hit_at", Float(), nullable=True),
    Index("ix_policy_rules_revoked_at", "revoked_at"),
)

# Append-only, hash-chained record of every decision.
audit_t = Table(
    "audit_log",
    metadata,
    Column("id", Integer(), primary_key=True),
    _text("hitl_id", index=True),
    _text("decision"),
    _text("reviewer"),
    _big("at_ms"),
    _json("shown_args"),
    _text("shown_args_sha256", nullable=True),
    _text("shown_args_ref", nullable=True),  # large shown arguments: the blob holding them (shown_args is NULL)
    _json("edited_args"),
    Column("message", Text(), nullable=True),
    _text("prev_hash"),
    _text("row_hash"),
)

# Small key/value facts about the database (the audit chain head, the app that wrote it).
meta_t = Table(
    "reviewer_meta",
    metadata,
    _key("key"),
    Column("value", Text(), nullable=False),
)

# Requests created per hour, agent and tool: kept by triggers on ``hitl_requests`` (migration 0012).
stats_created_t = Table(
    "stats_created_per_hour",
    metadata,
    Column("hour_s", BigInteger(), primary_key=True),
    _key("agent"),
    _key("tool"),
    _big("n"),
)

# Requests decided per hour, decider, status and time-to-decision bucket, with the sum of their waits: kept by
# triggers on ``hitl_requests`` (migration 0012). ``decided_by`` is '' and ``has_decider`` 0 for no decider.
stats_decided_t = Table(
    "stats_decided_per_hour",
    metadata,
    Column("hour_s", BigInteger(), primary_key=True),
    _key("decided_by"),
    Column("has_decider", Integer(), primary_key=True),
    _key("status"),
    Column("waited_index", Integer(), primary_key=True),
    _big("n"),
    _big("waited_s"),
)
