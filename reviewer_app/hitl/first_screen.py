"""The window's first screen before the backend exists: the oldest pending requests and the pending count.

The service side of ``persistence/first_screen.py`` (plain ``sqlite3``, read-only): importing this module
imports no SQLAlchemy, so the window can paint its first rows while the backend's modules load. None means
"wait for the backend": PostgreSQL, a database to create or migrate, anything the read could not trust.
"""

from __future__ import annotations

from reviewer_app.persistence.first_screen import FirstScreen, is_sqlite_file, read_first_screen, sqlite_file

__all__ = ["FirstScreen", "first_screen", "has_first_screen"]


def has_first_screen(database: str) -> bool:
    """Whether ``database`` (a ``--db`` value) may have a first screen at all: an existing SQLite file."""
    path = sqlite_file(database)
    return path is not None and is_sqlite_file(path)


def first_screen(database: str, limit: int) -> FirstScreen | None:
    """Read the first screen (blocking: call it off the GUI thread); None when the backend must read it."""
    path = sqlite_file(database)
    return None if path is None else read_first_screen(path, limit)
