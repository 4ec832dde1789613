"""Runs carry their owner's heartbeat and the process group of the tool it is running.

The owning runtime stamps ``heartbeat_ms`` every second or so; a run whose heartbeat is stale and whose owner's
pid is gone is noticed within seconds by the window and by workers, not only when a process starts.
``process_group`` is the group of the shell tool the owner is running (its own session), so recovery can kill
what a dead owner left behind.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("invocations") as batch:
        batch.add_column(sa.Column("heartbeat_ms", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("process_group", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("invocations") as batch:
        batch.drop_column("process_group")
        batch.drop_column("heartbeat_ms")
