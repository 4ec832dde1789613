"""Alembic environment: always run from :func:`reviewer_app.persistence.migrate.upgrade`.

The caller hands over its own connection (``config.attributes["connection"]``)
so that SQLite migrations run with ``foreign_keys=OFF`` and in batch mode.
"""

from __future__ import annotations

from alembic import context

from reviewer_app.persistence.search_index import include_name
from reviewer_app.persistence.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only from the alembic command line
    raise RuntimeError("run migrations through reviewer_app.persistence.migrate.upgrade()")

is_sqlite = connection.dialect.name == "sqlite"
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=is_sqlite,
    compare_type=True,
    include_name=include_name,  # the history search index is not described by the models
    # Alembic treats SQLite DDL as non-transactional and commits between revisions, which lets a
    # second process that opens a new database at the same moment slip in mid-chain and apply a
    # revision twice. SQLite does run DDL in transactions: do the whole upgrade in one.
    transactional_ddl=True,
    transaction_per_migration=False,
)
with context.begin_transaction():
    context.run_migrations()
