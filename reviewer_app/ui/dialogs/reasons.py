"""Reject reasons: the stock ones and the operator's recent ones (kept in QSettings), numbered for the keys."""

from __future__ import annotations

import json
from collections.abc import Sequence

from PySide6.QtCore import QSettings

CANNED_REJECT_REASONS = (
    "Stay inside the workspace: not this path.",
    "Too broad: do something smaller and more specific.",
    "Not now: explain why you need this first.",
    "Never touch production, credentials or secrets.",
    "Wrong approach: stop and summarise what you found.",
)
RECENT_REASONS_KEY = "decisions/recentRejectReasons"
MAX_RECENT_REASONS = 4
MAX_REASONS_SHOWN = 9  # one per number key


def recent_reject_reasons(settings: QSettings | None) -> list[str]:
    """The reasons typed lately, newest first (kept as JSON: QSettings lists differ between formats)."""
    if settings is None:
        return []
    try:
        value = json.loads(str(settings.value(RECENT_REASONS_KEY, "[]")))
    except (json.JSONDecodeError, TypeError):
        return []
    return (
        [str(v) for v in value if isinstance(v, str) and v.strip()][:MAX_RECENT_REASONS]
        if isinstance(value, list)
        else []
    )


def remember_reject_reason(settings: QSettings | None, reason: str) -> None:
    if settings is None or not reason.strip():
        return
    recent = [reason, *(r for r in recent_reject_reasons(settings) if r != reason)][:MAX_RECENT_REASONS]
    settings.setValue(RECENT_REASONS_KEY, json.dumps(recent))
    settings.sync()


def numbered_reasons(recent: Sequence[str]) -> list[tuple[str, bool]]:
    """(reason, is recent) in key order: the stock reasons always hold 1-5, the recent ones of one's own follow.

    Why stable: an operator learns "4 is *not now*"; numbering the recent reasons first moved every stock
    reason each time a new one was typed, and ``r 4`` sent a different reason than yesterday.
    """
    own = [r for r in recent if r not in CANNED_REJECT_REASONS]
    return [(r, False) for r in CANNED_REJECT_REASONS] + [(r, True) for r in own][
        : MAX_REASONS_SHOWN - len(CANNED_REJECT_REASONS)
    ]
