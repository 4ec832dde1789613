"""The HITL store: sessions, invocations, requests, block events, checkpoints, session rules.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("id", sa.String(), primary_key=True),
        sa.Column("agent", sa.String(), nullable=True),
        sa.Column("title", sa.String(), nullable=True),
        sa.Column("workspace", sa.String(), nullable=True),
        sa.Column("external", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "invocations",
        sa.Column("id", sa.String(), primary_key=True),
        sa.Column("session_id", sa.String(), sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("agent", sa.String(), nullable=True),
        sa.Column("prompt", sa.Text(), nullable=True),
        sa.Column("state", sa.String(), nullable=False),
        sa.Column("parent_id", sa.String(), nullable=True),
        sa.Column("external", sa.Boolean(), nullable=False),
        sa.Column("owner", sa.String(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("started_at", sa.BigInteger(), nullable=True),
        sa.Column("finished_at", sa.BigInteger(), nullable=True),
        sa.Column("updated_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("active_ms", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_invocations_session_id", "invocations", ["session_id"])
    op.create_index("ix_invocations_state", "invocations", ["state"])
    op.create_index("ix_invocations_created", "invocations", ["created_at"])
    op.create_index("ix_invocations_updated_at_ms", "invocations", ["updated_at_ms"])
    op.create_table(
        "hitl_requests",
        sa.Column("hitl_id", sa.String(), primary_key=True),
        sa.Column("hitl_type", sa.String(), nullable=False),
        sa.Column("session_id", sa.String(), sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("invocation_id", sa.String(), sa.ForeignKey("invocations.id"), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.Column("block_id", sa.String(), nullable=True),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("resume_mode", sa.String(), nullable=False),
        sa.Column("tool_state", sa.JSON(), nullable=True),
        sa.Column("checkpoint_id", sa.String(), nullable=True),
        sa.Column("tool_name", sa.String(), nullable=True),
        sa.Column("tool_call_id", sa.String(), nullable=True),
        sa.Column("node_id", sa.String(), nullable=True),
        sa.Column("expires_at", sa.BigInteger(), nullable=True),
        sa.Column("user_response", sa.JSON(), nullable=True),
        sa.Column("responded_at", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("summary", sa.String(), nullable=False),
        sa.Column("agent", sa.String(), nullable=True),
    )
    op.create_index("ix_hitl_requests_session_id", "hitl_requests", ["session_id"])
    op.create_index("ix_hitl_requests_invocation_id", "hitl_requests", ["invocation_id"])
    op.create_index("ix_hitl_status_created", "hitl_requests", ["status", "created_at"])
    op.create_index("ix_hitl_updated_ms", "hitl_requests", ["updated_at_ms"])
    op.create_index("ix_hitl_status_expires", "hitl_requests", ["status", "expires_at"])
    op.create_table(
        "block_events",
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("block_id", sa.String(), nullable=False),
        sa.Column("parent_id", sa.String(), nullable=True),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("op", sa.String(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("ts_ms", sa.BigInteger(), nullable=False),
        sa.Column("session_id", sa.String(), nullable=False),
        sa.Column("invocation_id", sa.String(), nullable=False),
    )
    op.create_index("ix_block_events_session_id", "block_events", ["session_id"])
    op.create_index("ix_block_events_invocation_seq", "block_events", ["invocation_id", "seq"])
    op.create_table(
        "checkpoints",
        sa.Column("checkpoint_id", sa.String(), primary_key=True),
        sa.Column("invocation_id", sa.String(), sa.ForeignKey("invocations.id"), nullable=False),
        sa.Column("session_id", sa.String(), nullable=False),
        sa.Column("state", sa.JSON(), nullable=False),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_checkpoints_invocation", "checkpoints", ["invocation_id", "created_ms"])
    op.create_table(
        "session_rules",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(), sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("tool_name", sa.String(), nullable=False),
        sa.Column("command_prefix", sa.String(), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("created_by", sa.String(), nullable=True),
        sa.Column("hitl_id", sa.String(), nullable=True),
        sa.UniqueConstraint("session_id", "tool_name", "command_prefix", name="uq_session_rule"),
    )
    op.create_index("ix_session_rules_session_id", "session_rules", ["session_id"])


def downgrade() -> None:
    for table in ("session_rules", "checkpoints", "block_events", "hitl_requests", "invocations", "sessions"):
        op.drop_table(table)
