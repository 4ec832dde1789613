"""Decision audit: a hash-chained audit log, who decided each request, and a meta table.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("hitl_requests") as batch:
        batch.add_column(sa.Column("decision", sa.String(), nullable=True))
        batch.add_column(sa.Column("decided_by", sa.String(), nullable=True))
    # Backfill from the stored responses of requests decided before this revision.
    table = sa.table(
        "hitl_requests",
        sa.column("hitl_id", sa.String),
        sa.column("status", sa.String),
        sa.column("user_response", sa.JSON),
        sa.column("decision", sa.String),
        sa.column("decided_by", sa.String),
    )
    bind = op.get_bind()
    decided = bind.execute(
        sa.select(table.c.hitl_id, table.c.status, table.c.user_response).where(table.c.status != "pending")
    ).all()
    for hitl_id, status, stored in decided:
        response = stored if isinstance(stored, dict) else {}
        bind.execute(
            table.update()
            .where(table.c.hitl_id == hitl_id)
            .values(
                decision=response.get("decision") or ("respond" if status == "completed" else status),
                decided_by=response.get("reviewer"),
            )
        )
    op.create_table(
        "audit_log",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("hitl_id", sa.String(), nullable=False),
        sa.Column("decision", sa.String(), nullable=False),
        sa.Column("reviewer", sa.String(), nullable=False),
        sa.Column("at_ms", sa.BigInteger(), nullable=False),
        sa.Column("shown_args", sa.JSON(), nullable=True),
        sa.Column("shown_args_sha256", sa.String(), nullable=True),
        sa.Column("edited_args", sa.JSON(), nullable=True),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("prev_hash", sa.String(), nullable=False),
        sa.Column("row_hash", sa.String(), nullable=False),
    )
    op.create_index("ix_audit_log_hitl_id", "audit_log", ["hitl_id"])
    op.create_table(
        "reviewer_meta",
        sa.Column("key", sa.String(), primary_key=True),
        sa.Column("value", sa.Text(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("reviewer_meta")
    op.drop_table("audit_log")
    with op.batch_alter_table("hitl_requests") as batch:
        batch.drop_column("decided_by")
        batch.drop_column("decision")
