"""PostgreSQL: a decided request's decision is final in the row agents read.

Agents act on ``hitl_requests`` (the decision, the edited arguments, the message, the arguments shown); only the
audit row is chained. Migration 0006 ties who decided to the login; this trigger refuses any later change of what
was decided, so a second login cannot rewrite another reviewer's edit. (Readers check the record against its
audit row anyway, for SQLite and for an owner who disables triggers.) SQLite has no logins: nothing is installed.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_FUNCTION = """
CREATE OR REPLACE FUNCTION reviewer_decided_request_is_final() RETURNS trigger
LANGUAGE plpgsql SET search_path = {path} AS $$
BEGIN
    IF OLD.status <> 'pending' AND (
        NEW.hitl_id, NEW.hitl_type, NEW.status, NEW.decision, NEW.decided_by, NEW.user_response::text,
        NEW.responded_at, NEW.data::text, NEW.tool_name
    ) IS DISTINCT FROM (
        OLD.hitl_id, OLD.hitl_type, OLD.status, OLD.decision, OLD.decided_by, OLD.user_response::text,
        OLD.responded_at, OLD.data::text, OLD.tool_name
    ) THEN
        RAISE EXCEPTION 'request % is decided (%): a decided request cannot be changed', OLD.hitl_id, OLD.status;
    END IF;
    RETURN NEW;
END
$$;
"""


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    schema = bind.execute(sa.text("SELECT quote_ident(current_schema())")).scalar_one()
    op.execute(_FUNCTION.replace("{path}", f"pg_catalog, {schema}"))
    op.execute(
        "CREATE TRIGGER hitl_requests_decided_is_final BEFORE UPDATE ON hitl_requests"
        " FOR EACH ROW EXECUTE FUNCTION reviewer_decided_request_is_final()"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER IF EXISTS hitl_requests_decided_is_final ON hitl_requests")
    op.execute("DROP FUNCTION IF EXISTS reviewer_decided_request_is_final()")
