"""Count a run's pending requests through one index.

The runs board counts each run's pending requests; with only single-column
indexes SQLite may walk every pending request once per run (32 s for 2,000 runs
at 100,000 pending on a database without statistics). ``(invocation_id, status)``
answers each count from the index alone.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_hitl_invocation_status", "hitl_requests", ["invocation_id", "status"])


def downgrade() -> None:
    op.drop_index("ix_hitl_invocation_status", table_name="hitl_requests")
