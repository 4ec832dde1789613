"""Full-text search over decided requests, kept in step by the database itself.

Every decision is one audit row, so the search index has one document per audit row (its id is the document's
id): the request's tool name, summary and agent, the arguments as shown (and as edited), who decided and the
reason. A trigger on ``audit_log`` adds the document in the decision's own transaction, whichever program wrote
it (the store, the Claude Code hook's ``sqlite3`` path, another process), and existing rows are indexed here.

- SQLite: a contentless FTS5 table (nothing is stored twice) whose documents are the rows of the view
  ``history_documents``; the index is rebuilt with ``INSERT INTO history_fts (history_fts) VALUES
  ('delete-all')`` and the migration's ``INSERT … SELECT … FROM history_documents``. (Not an external-content
  table on the view: FTS5 reads external content with virtual tables disabled, and the view flattens the
  arguments' JSON with ``json_tree``, so the index holds the decoded words: ``wörld``, not ``w\\u00f6rld``.)
- PostgreSQL: ``history_search`` (audit id, tsvector) with a GIN index; the trigger function is SECURITY DEFINER
  so a login that may append audit rows need not be granted the index table, and it never fails a decision
  (arguments it cannot read are left out of the document).

Both index words exactly as :func:`reviewer_app.domain.history.search_terms` splits a query: runs of letters and
digits; everything else (``_``, ``/``, ``.``, ``-``, quotes) separates them.

Batch migrations on SQLite recreate a table and drop its triggers: a later migration that batch-alters
``audit_log`` must create ``history_fts_after_audit`` again (``tests/persistence/test_history_search.py`` checks
it is present at head).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

# JSON string and number values, space-separated (keys and punctuation are not searched).
_SQLITE_ATOMS = (
    "CASE WHEN json_valid({col}) THEN (SELECT group_concat(atom, ' ') FROM json_tree({col})"
    " WHERE atom IS NOT NULL AND type IN ('text', 'integer', 'real')) ELSE {col} END"
)

_SQLITE_VIEW = f"""
CREATE VIEW history_documents AS
SELECT a.id AS id,
       coalesce(r.tool_name, '') AS tool_name,
       coalesce(r.summary, '') AS summary,
       coalesce({_SQLITE_ATOMS.format(col="a.shown_args")}, '') || ' '
           || coalesce({_SQLITE_ATOMS.format(col="a.edited_args")}, '') AS arguments,
       coalesce(r.agent, '') AS agent,
       a.reviewer AS reviewer,
       coalesce(a.message, '') AS reason
FROM audit_log AS a LEFT JOIN hitl_requests AS r ON r.hitl_id = a.hitl_id
"""

_SQLITE_FTS = """
CREATE VIRTUAL TABLE history_fts USING fts5(
    tool_name, summary, arguments, agent, reviewer, reason,
    content='',
    tokenize='unicode61 remove_diacritics 2', prefix='1 2 3'
)
"""

_SQLITE_TRIGGER = """
CREATE TRIGGER history_fts_after_audit AFTER INSERT ON audit_log BEGIN
    INSERT INTO history_fts (rowid, tool_name, summary, arguments, agent, reviewer, reason)
    SELECT id, tool_name, summary, arguments, agent, reviewer, reason FROM history_documents WHERE id = new.id;
END
"""

# ASCII punctuation separates words; explicit ranges, as [[:alnum:]] would follow the database's locale (in "C",
# it would split "wörld"). Non-ASCII text is left to the text-search parser.
_PUNCTUATION = r"[\x01-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]+"

_PG_FUNCTION = """
CREATE OR REPLACE FUNCTION reviewer_history_words(value json) RETURNS text
LANGUAGE plpgsql IMMUTABLE SET search_path = {path} AS $$
BEGIN
    RETURN (
        SELECT string_agg(item #>> '{}', ' ')
        FROM jsonb_path_query(value::jsonb, 'strict $.** ? (@.type() == "string" || @.type() == "number")') AS item
    );
EXCEPTION WHEN others THEN  -- text jsonb cannot hold (\\u0000): left out of the document, never an error
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION reviewer_history_index() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {path} AS $$
BEGIN
    INSERT INTO history_search (audit_id, document)
    SELECT NEW.id, to_tsvector('simple', regexp_replace(lower(concat_ws(' ',
               r.tool_name, r.summary, reviewer_history_words(NEW.shown_args),
               reviewer_history_words(NEW.edited_args), r.agent, NEW.reviewer, NEW.message)),
           '{punct}', ' ', 'g'))
    FROM (SELECT 1) AS one LEFT JOIN hitl_requests AS r ON r.hitl_id = NEW.hitl_id
    ON CONFLICT (audit_id) DO NOTHING;
    RETURN NULL;
END
$$;
"""


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        op.execute(_SQLITE_VIEW)
        op.execute(_SQLITE_FTS)
        op.execute(_SQLITE_TRIGGER)
        op.execute(  # existing decisions, as the trigger would have indexed them
            "INSERT INTO history_fts (rowid, tool_name, summary, arguments, agent, reviewer, reason)"
            " SELECT id, tool_name, summary, arguments, agent, reviewer, reason FROM history_documents"
        )
        return
    schema = bind.execute(sa.text("SELECT quote_ident(current_schema())")).scalar_one()
    op.execute("CREATE TABLE history_search (audit_id BIGINT PRIMARY KEY, document tsvector NOT NULL)")
    op.execute("CREATE INDEX ix_history_search_document ON history_search USING GIN (document)")
    op.execute(_PG_FUNCTION.replace("{path}", f"pg_catalog, {schema}").replace("{punct}", _PUNCTUATION))
    op.execute(
        "CREATE TRIGGER audit_log_history_index AFTER INSERT ON audit_log"
        " FOR EACH ROW EXECUTE FUNCTION reviewer_history_index()"
    )
    op.execute(  # existing decisions, as the trigger would have indexed them
        "INSERT INTO history_search (audit_id, document)"
        " SELECT a.id, to_tsvector('simple', regexp_replace(lower(concat_ws(' ',"
        " r.tool_name, r.summary, reviewer_history_words(a.shown_args), reviewer_history_words(a.edited_args),"
        f" r.agent, a.reviewer, a.message)), '{_PUNCTUATION}', ' ', 'g'))"
        " FROM audit_log AS a LEFT JOIN hitl_requests AS r ON r.hitl_id = a.hitl_id"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS history_fts_after_audit")
        op.execute("DROP TABLE IF EXISTS history_fts")
        op.execute("DROP VIEW IF EXISTS history_documents")
        return
    op.execute("DROP TRIGGER IF EXISTS audit_log_history_index ON audit_log")
    op.execute("DROP FUNCTION IF EXISTS reviewer_history_index()")
    op.execute("DROP FUNCTION IF EXISTS reviewer_history_words(json)")
    op.execute("DROP TABLE IF EXISTS history_search")
