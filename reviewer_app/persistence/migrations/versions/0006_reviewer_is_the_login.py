"""PostgreSQL: a decision or audit row is accepted only under the database login that writes it.

Reviewer records ``session_user`` as the reviewer (``alice``, ``alice (Alice Smith)``, ``alice/system:expiry``;
:mod:`reviewer_app.domain.identity`); these triggers refuse any other name whatever client writes, so a login
cannot decide, or change a decision, as someone else. SQLite has no logins: anyone who can write the file is
trusted, and nothing is installed there.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_FUNCTIONS = """
CREATE OR REPLACE FUNCTION reviewer_is_login(recorded text) RETURNS boolean
LANGUAGE sql STABLE SET search_path = {path} AS $$
    SELECT recorded = session_user::text
        OR left(recorded, length(session_user::text) + 2) = session_user::text || ' ('
        OR left(recorded, length(session_user::text) + 1) = session_user::text || '/'
$$;

CREATE OR REPLACE FUNCTION reviewer_decision_by_login() RETURNS trigger
LANGUAGE plpgsql SET search_path = {path} AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.decided_by IS NOT NULL AND NOT coalesce(reviewer_is_login(NEW.decided_by), false) THEN
            RAISE EXCEPTION 'a request can be recorded as decided only by the database login %, not %',
                session_user, NEW.decided_by USING ERRCODE = 'insufficient_privilege';
        END IF;
    ELSIF (NEW.status, NEW.decision, NEW.decided_by) IS DISTINCT FROM (OLD.status, OLD.decision, OLD.decided_by)
        AND NOT coalesce(reviewer_is_login(NEW.decided_by), false) THEN
        RAISE EXCEPTION 'a decision can be recorded only under the database login %, not %',
            session_user, coalesce(NEW.decided_by, 'nobody') USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION reviewer_audit_by_login() RETURNS trigger
LANGUAGE plpgsql SET search_path = {path} AS $$
BEGIN
    IF NOT coalesce(reviewer_is_login(NEW.reviewer), false) THEN
        RAISE EXCEPTION 'an audit row can be written only under the database login %, not %',
            session_user, NEW.reviewer USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$$;
"""


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    bind = op.get_bind()
    # The functions resolve names only in pg_catalog and the schema they live in: a role with a schema of its own
    # ("$user" comes first in the default search_path) cannot shadow reviewer_is_login() to pass the check.
    schema = bind.execute(sa.text("SELECT quote_ident(current_schema())")).scalar_one()
    op.execute(_FUNCTIONS.replace("{path}", f"pg_catalog, {schema}"))
    op.execute(
        "CREATE TRIGGER hitl_requests_decided_by_login BEFORE INSERT OR UPDATE ON hitl_requests"
        " FOR EACH ROW EXECUTE FUNCTION reviewer_decision_by_login()"
    )
    op.execute(
        "CREATE TRIGGER audit_log_reviewer_login BEFORE INSERT ON audit_log"
        " FOR EACH ROW EXECUTE FUNCTION reviewer_audit_by_login()"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER IF EXISTS audit_log_reviewer_login ON audit_log")
    op.execute("DROP TRIGGER IF EXISTS hitl_requests_decided_by_login ON hitl_requests")
    op.execute("DROP FUNCTION IF EXISTS reviewer_audit_by_login()")
    op.execute("DROP FUNCTION IF EXISTS reviewer_decision_by_login()")
    op.execute("DROP FUNCTION IF EXISTS reviewer_is_login(text)")
