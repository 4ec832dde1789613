"""Who a decision is recorded as when the database knows who is connected (PostgreSQL's ``session_user``).

The login is the identity; a display name is only a label after it, so a client cannot record a decision under
someone else's name. Migration 0006 enforces the same shapes in the database (see :func:`is_recorded_as`).
"""

from __future__ import annotations

SYSTEM_PREFIXES = ("system:", "session-rule:", "rule:")
"""Names of automatic deciders (expiry, waivers, an agent abandoning its request): recorded as ``<login>/<name>``."""


def recorded_reviewer(login: str, name: str | None) -> str:
    """The reviewer to record for ``name`` asserted by a client logged in as ``login``.

    ``alice`` (no label, or the login itself), ``alice (Alice Smith)`` for a display name, and
    ``alice/system:expiry`` for automatic deciders. A name already recorded under this login is kept as is.
    """
    if not name or is_recorded_as(login, name):
        return name or login
    if name.startswith(SYSTEM_PREFIXES):
        return f"{login}/{name}"
    return f"{login} ({name})"


def is_recorded_as(login: str, recorded: str) -> bool:
    """True if ``recorded`` names ``login``: the login itself, ``login (label)`` or ``login/system name``.

    A longer login that merely starts with it (``alice`` vs ``alicebob``) is not it.
    """
    return recorded == login or recorded.startswith((f"{login} (", f"{login}/"))
