"""Persistent policy rules: allow / ask / deny in Claude Code's permission-rule syntax, with hit counts.

Each row is one :class:`reviewer_app.domain.rules.Rule`; a revoked rule keeps its row (``revoked_at``) so the
requests it decided still name a rule that can be looked up.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "policy_rules",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("effect", sa.String(), nullable=False),
        sa.Column("pattern", sa.Text(), nullable=False),
        sa.Column("scope", sa.String(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=True),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("created_by", sa.String(), nullable=True),
        sa.Column("revoked_at", sa.Float(), nullable=True),
        sa.Column("hit_count", sa.BigInteger(), nullable=False),
        sa.Column("last_hit_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("policy_rules") as batch:
        batch.create_index("ix_policy_rules_revoked_at", ["revoked_at"])


def downgrade() -> None:
    with op.batch_alter_table("policy_rules") as batch:
        batch.drop_index("ix_policy_rules_revoked_at")
    op.drop_table("policy_rules")
