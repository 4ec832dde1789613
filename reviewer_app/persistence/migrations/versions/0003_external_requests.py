"""Mark requests raised by agents in other processes, so the inbox can show it without a join.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("hitl_requests") as batch:
        batch.add_column(sa.Column("external", sa.Boolean(), nullable=False, server_default=sa.false()))
    invocations = sa.table("invocations", sa.column("id", sa.String), sa.column("external", sa.Boolean))
    requests = sa.table("hitl_requests", sa.column("invocation_id", sa.String), sa.column("external", sa.Boolean))
    external_runs = sa.select(invocations.c.id).where(invocations.c.external == sa.true())
    op.get_bind().execute(requests.update().where(requests.c.invocation_id.in_(external_runs)).values(external=True))


def downgrade() -> None:
    with op.batch_alter_table("hitl_requests") as batch:
        batch.drop_column("external")
