"""Alembic environment: always run from :func:`reviewer_app.persistence.migrate.upgrade`.

The caller hands over its own connection (``config.attributes["connection"]``)
so that SQLite migrations run with ``foreign_keys=OFF`` and in batch mode.
"""

from __future__ import annotations

from alembic import context

from reviewer_app.persistence.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only from the alembic command line
    raise RuntimeError("run migrations through reviewer_app.persistence.migrate.upgrade()")

context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
