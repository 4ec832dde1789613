"""Session rules record the exact parsed scope they grant; adding one is an upsert.

Rules written before this stored the first word of a shell command and waived every command starting with
it (``git status; touch X`` after approving ``git status``). They are removed, not converted: the commands
they covered will be asked again, which is the safe side. ``scope`` holds the canonical JSON of the granted
scope (empty for a whole non-shell tool), so two processes adding the same rule insert one row.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("DELETE FROM session_rules")
    with op.batch_alter_table("session_rules") as batch:
        batch.drop_constraint("uq_session_rule", type_="unique")
        batch.drop_column("command_prefix")
        batch.add_column(sa.Column("scope", sa.String(), nullable=False, server_default=""))
        batch.create_unique_constraint("uq_session_rule_scope", ["session_id", "tool_name", "scope"])


def downgrade() -> None:
    op.execute("DELETE FROM session_rules")
    with op.batch_alter_table("session_rules") as batch:
        batch.drop_constraint("uq_session_rule_scope", type_="unique")
        batch.drop_column("scope")
        batch.add_column(sa.Column("command_prefix", sa.String(), nullable=True))
        batch.create_unique_constraint("uq_session_rule", ["session_id", "tool_name", "command_prefix"])
