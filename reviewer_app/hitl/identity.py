"""Who the backend's decisions are recorded as.

A decision names its reviewer from the backend's own identity, never from a name the caller asserts; on
PostgreSQL that identity is the database login, which the database itself enforces.
"""

from __future__ import annotations

import getpass
import os

from reviewer_app.domain.identity import recorded_reviewer
from reviewer_app.persistence.store import Store


def default_reviewer() -> str:
    """Who decisions are recorded as: ``REVIEWER_NAME`` or the OS user."""
    name = os.environ.get("REVIEWER_NAME")
    if name:
        return name
    try:
        return getpass.getuser()
    except Exception:  # no user database entry (some containers)
        return f"uid-{os.getuid()}" if hasattr(os, "getuid") else "unknown"


def reviewer_identity(store: Store, label: str | None) -> str:
    """Who this backend's decisions are recorded as.

    SQLite: ``label`` (``--reviewer``), else ``REVIEWER_NAME`` or the OS user: anyone who can write the file is
    trusted anyway. PostgreSQL: the database login, with the display name only as a label after it
    (``alice``, ``alice (Alice Smith)``; see :mod:`reviewer_app.domain.identity`), which the database enforces.
    """
    login = store.database_login()
    if login is None:
        return label or default_reviewer()
    return recorded_reviewer(login, label or os.environ.get("REVIEWER_NAME") or None)
