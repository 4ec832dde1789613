"""Per-hour counts of requests created and decided, kept by the database, so statistics read hours, not rows.

The Statistics view grouped every request of its period: 2.5 s over a million decisions on PostgreSQL. Two small
tables now hold the counts per hour, and the view reads whole hours from them and only the partial hours at a
period's edges from ``hitl_requests`` (by the two indexes added here), so its figures are exactly those of the
rows:

- ``stats_created_per_hour``: requests per (hour created, agent, tool), the agent and tool as the view names them;
- ``stats_decided_per_hour``: decided requests per (hour decided, decider, status, time-to-decision bucket), with
  the sum of their times to decision (the mean). ``decided_by`` is '' and ``has_decider`` 0 for a request decided
  by no one named.

Triggers on ``hitl_requests`` add and subtract each row's contribution on every insert, update and delete,
whichever program writes (the store, the hook's ``sqlite3`` path, another client), so the counts cannot drift from
the rows. On PostgreSQL the trigger is deferred to commit (the count rows it updates are locked only while the
transaction commits; decisions commit one at a time anyway, behind the audit chain's lock) and SECURITY DEFINER
(a login that may create requests needs no grant on the counts), and the count tables refuse every write that
does not come from it. The figures are informational: whoever can rewrite requests can change them either way.

Hours are floor(t / 3600) * 3600 in UTC seconds; the time-to-decision buckets are frozen here (``WAIT_BOUNDS_S``;
a test holds them equal to :data:`reviewer_app.domain.stats.TIME_TO_DECISION_BUCKETS`).

Batch migrations on SQLite recreate a table and drop its triggers: a later migration that batch-alters
``hitl_requests`` must create the ``stats_*`` triggers again (``tests/persistence/test_decision_stats_rollup.py``
checks the counts at head).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

WAIT_BOUNDS_S = (10, 60, 300, 900, 3600, 4 * 3600)
"""Upper bounds (exclusive) of the time-to-decision buckets; the last bucket is open-ended."""


def _hour(value: str) -> str:
    """Floor to the hour, also for negative values (``%`` truncates in both databases)."""
    return f"({value} - (({value} % 3600) + 3600) % 3600)"


def _wait_index(row: str) -> str:
    waited = f"({row}.responded_at - {row}.created_at)"
    whens = " ".join(f"WHEN {waited} < {bound} THEN {index}" for index, bound in enumerate(WAIT_BOUNDS_S))
    return f"CASE {whens} ELSE {len(WAIT_BOUNDS_S)} END"


def _created_delta(row: str, sign: int, where: str = "1 = 1") -> str:
    return (
        "INSERT INTO stats_created_per_hour (hour_s, agent, tool, n)"
        f" SELECT {_hour(f'{row}.created_at')}, coalesce({row}.agent, '(unknown)'),"
        f" coalesce({row}.tool_name, {row}.hitl_type), {sign} WHERE {where}"
        " ON CONFLICT (hour_s, agent, tool) DO UPDATE SET n = stats_created_per_hour.n + excluded.n"
    )


def _decided_delta(row: str, sign: int, where: str = "1 = 1") -> str:
    return (
        "INSERT INTO stats_decided_per_hour (hour_s, decided_by, has_decider, status, waited_index, n, waited_s)"
        f" SELECT {_hour(f'{row}.responded_at')}, coalesce({row}.decided_by, ''),"
        f" CASE WHEN {row}.decided_by IS NULL THEN 0 ELSE 1 END, {row}.status, {_wait_index(row)},"
        f" {sign}, {sign} * ({row}.responded_at - {row}.created_at)"
        f" WHERE {row}.status <> 'pending' AND {row}.responded_at IS NOT NULL AND ({where})"
        " ON CONFLICT (hour_s, decided_by, has_decider, status, waited_index) DO UPDATE SET"
        " n = stats_decided_per_hour.n + excluded.n, waited_s = stats_decided_per_hour.waited_s + excluded.waited_s"
    )


def _changed(columns: tuple[str, ...], distinct: str) -> str:
    return " OR ".join(f"old.{c} {distinct} new.{c}" for c in columns)


_CREATED_KEY = ("created_at", "agent", "tool_name", "hitl_type")
_DECIDED_KEY = ("status", "responded_at", "decided_by", "created_at")


def _update_statements(distinct: str) -> list[str]:
    created, decided = _changed(_CREATED_KEY, distinct), _changed(_DECIDED_KEY, distinct)
    return [
        _created_delta("old", -1, created),
        _created_delta("new", 1, created),
        _decided_delta("old", -1, decided),
        _decided_delta("new", 1, decided),
    ]


def _sqlite_triggers() -> list[str]:
    def trigger(name: str, event: str, statements: list[str]) -> str:
        body = "".join(f"    {statement};\n" for statement in statements)
        return f"CREATE TRIGGER {name} AFTER {event} ON hitl_requests BEGIN\n{body}END"

    return [
        trigger("stats_after_request_insert", "INSERT", [_created_delta("new", 1), _decided_delta("new", 1)]),
        trigger("stats_after_request_update", "UPDATE", _update_statements("IS NOT")),
        trigger("stats_after_request_delete", "DELETE", [_created_delta("old", -1), _decided_delta("old", -1)]),
    ]


def _pg_function() -> str:
    inserted = ";\n        ".join([_created_delta("NEW", 1), _decided_delta("NEW", 1)])
    deleted = ";\n        ".join([_created_delta("OLD", -1), _decided_delta("OLD", -1)])
    updated = ";\n        ".join(_update_statements("IS DISTINCT FROM"))
    return f"""
CREATE OR REPLACE FUNCTION reviewer_stats_per_hour() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {{path}} AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        {inserted};
    ELSIF TG_OP = 'DELETE' THEN
        {deleted};
    ELSE
        {updated};
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION reviewer_stats_written_by_trigger() RETURNS trigger
LANGUAGE plpgsql SET search_path = {{path}} AS $$
BEGIN
    IF pg_trigger_depth() < 2 THEN
        RAISE EXCEPTION 'the statistics per hour are kept by the requests'' trigger: % of % refused', TG_OP,
            TG_TABLE_NAME USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END
$$;
"""


_TABLES = ("stats_created_per_hour", "stats_decided_per_hour")


def upgrade() -> None:
    op.create_table(
        "stats_created_per_hour",
        sa.Column("hour_s", sa.BigInteger(), nullable=False),
        sa.Column("agent", sa.String(), nullable=False),
        sa.Column("tool", sa.String(), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("hour_s", "agent", "tool"),
    )
    op.create_table(
        "stats_decided_per_hour",
        sa.Column("hour_s", sa.BigInteger(), nullable=False),
        sa.Column("decided_by", sa.String(), nullable=False),
        sa.Column("has_decider", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("waited_index", sa.Integer(), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.Column("waited_s", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("hour_s", "decided_by", "has_decider", "status", "waited_index"),
    )
    # The partial hours at a period's edges are read from the requests by these.
    op.create_index("ix_hitl_created", "hitl_requests", ["created_at"])
    op.create_index("ix_hitl_responded", "hitl_requests", ["responded_at"])
    # Existing requests, as the triggers would have counted them.
    op.execute(
        "INSERT INTO stats_created_per_hour (hour_s, agent, tool, n)"
        f" SELECT {_hour('r.created_at')} AS hour_s, coalesce(r.agent, '(unknown)') AS agent,"
        " coalesce(r.tool_name, r.hitl_type) AS tool, count(*) FROM hitl_requests AS r"
        " GROUP BY 1, 2, 3"
    )
    op.execute(
        "INSERT INTO stats_decided_per_hour (hour_s, decided_by, has_decider, status, waited_index, n, waited_s)"
        f" SELECT {_hour('r.responded_at')}, coalesce(r.decided_by, ''),"
        f" CASE WHEN r.decided_by IS NULL THEN 0 ELSE 1 END, r.status, {_wait_index('r')}, count(*),"
        " sum(r.responded_at - r.created_at) FROM hitl_requests AS r"
        " WHERE r.status <> 'pending' AND r.responded_at IS NOT NULL GROUP BY 1, 2, 3, 4, 5"
    )
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for statement in _sqlite_triggers():
            op.execute(statement)
        return
    schema = bind.execute(sa.text("SELECT quote_ident(current_schema())")).scalar_one()
    op.execute(_pg_function().replace("{path}", f"pg_catalog, {schema}"))
    op.execute(
        "CREATE CONSTRAINT TRIGGER hitl_requests_stats_per_hour AFTER INSERT OR UPDATE OR DELETE ON hitl_requests"
        " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION reviewer_stats_per_hour()"
    )
    for table in _TABLES:
        op.execute(
            f"CREATE TRIGGER {table}_by_trigger_only BEFORE INSERT OR UPDATE OR DELETE ON {table}"
            " FOR EACH ROW EXECUTE FUNCTION reviewer_stats_written_by_trigger()"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for name in ("insert", "update", "delete"):
            op.execute(f"DROP TRIGGER IF EXISTS stats_after_request_{name}")
    else:
        op.execute("DROP TRIGGER IF EXISTS hitl_requests_stats_per_hour ON hitl_requests")
        op.execute("DROP FUNCTION IF EXISTS reviewer_stats_per_hour()")
    op.drop_index("ix_hitl_responded", "hitl_requests")
    op.drop_index("ix_hitl_created", "hitl_requests")
    for table in _TABLES:
        op.drop_table(table)
    if op.get_bind().dialect.name != "sqlite":
        op.execute("DROP FUNCTION IF EXISTS reviewer_stats_written_by_trigger()")
