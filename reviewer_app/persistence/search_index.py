"""The history search index's own database objects, which the SQLModel tables do not describe.

Migration 0010 creates them (an FTS5 table and its shadow tables on SQLite, ``history_search`` on PostgreSQL);
comparing the models with the database leaves them out with :func:`include_name`.
"""

from __future__ import annotations

from typing import Any

SEARCH_INDEX_TABLES = frozenset(
    {
        "history_fts",
        "history_fts_data",
        "history_fts_idx",
        "history_fts_docsize",
        "history_fts_config",
        "history_fts_content",
        "history_search",
    }
)


def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    """Alembic's ``include_name`` hook: everything but the search index's tables."""
    return not (type_ == "table" and name in SEARCH_INDEX_TABLES)
