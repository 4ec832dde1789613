"""Decided requests as the History view and the CLI read them: the query, one entry, a page, and the words.

Search text is hostile (it comes from a text box, a command line or another process): :func:`search_terms`
reduces it to plain words that the store matches as literal prefixes, so no input can be an FTS5 or tsquery
syntax error, whatever quotes, operators, NUL characters or megabytes it holds.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from reviewer_app.domain.decisions import DecisionKind

MAX_SEARCH_CHARS = 1_000
"""Only the start of a search text is read: nobody types more, and a huge paste must stay cheap."""
MAX_SEARCH_TERMS = 16
MAX_TERM_CHARS = 64
_WORD = re.compile(r"[^\W_]+", re.UNICODE)  # letters and digits; everything else separates words


def search_terms(text: str | None) -> tuple[str, ...]:
    """The words of ``text``, lower-cased, at most :data:`MAX_SEARCH_TERMS` of at most :data:`MAX_TERM_CHARS`.

    Each is matched as a prefix of a word in the indexed text; all of them must match. Punctuation (quotes,
    ``*``, ``-``, ``:``, parentheses, NUL…) only separates words, exactly as the index's tokenizer treats it.
    """
    if not text:
        return ()
    words = _WORD.findall(text[:MAX_SEARCH_CHARS].lower())
    return tuple(dict.fromkeys(word[:MAX_TERM_CHARS] for word in words))[:MAX_SEARCH_TERMS]


@dataclass(frozen=True, slots=True)
class HistoryCursor:
    """Where the next page starts: the last entry's decision time and audit id (pages go newest first)."""

    decided_at_ms: int
    audit_id: int


@dataclass(frozen=True, slots=True)
class HistoryQuery:
    """What the History view and ``reviewer-app audit`` ask for. Empty fields do not filter."""

    text: str | None = None
    decisions: tuple[str, ...] = ()
    tool_name: str | None = None
    agent: str | None = None
    reviewer: str | None = None
    hitl_type: str | None = None
    hitl_id: str | None = None


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One decision on the record (one audit row) with the request it decided.

    ``shown_args``/``edited_args`` are filled only by the single-entry read (a page leaves them out: arguments
    can be megabytes); ``edited`` says whether the decision changed the arguments.
    """

    audit_id: int
    decided_at_ms: int
    hitl_id: str
    decision: str
    reviewer: str
    reason: str | None
    edited: bool
    tool_name: str | None = None
    summary: str = ""
    agent: str | None = None
    hitl_type: str | None = None
    session_id: str | None = None
    invocation_id: str | None = None
    created_at: int | None = None
    rule_pattern: str | None = None
    rule_effect: str | None = None
    shown_args: Any = None
    edited_args: Any = None

    @property
    def cursor(self) -> HistoryCursor:
        return HistoryCursor(self.decided_at_ms, self.audit_id)

    @property
    def rule_id(self) -> str | None:
        """The persistent rule that decided this request (``rule:<id>``), if one did."""
        return rule_id_of(self.reviewer)

    @property
    def decision_words(self) -> str:
        return decision_words(self.decision, edited=self.edited, reviewer=self.reviewer)

    @property
    def reason_words(self) -> str:
        """The reason with its times as a person reads them (an expiry's "at unix time 1795829109")."""
        return human_times(self.reason or "")

    @property
    def decided_by_words(self) -> str:
        return decided_by_words(self.reviewer, self.rule_pattern)


@dataclass(frozen=True, slots=True)
class HistoryPage:
    """Entries newest first, and the cursor of the next page (None: this was the last)."""

    entries: list[HistoryEntry] = field(default_factory=list)
    next_cursor: HistoryCursor | None = None


EXPIRY_CLOCK = "system:expiry"  # the reviewer the expiry sweep records
_UNIX_TIME = re.compile(r"\bat unix time (\d{1,12})\b")


def human_times(text: str) -> str:
    """``text`` with each "at unix time N" (how the expiry sweep and conflicts say when) as a local date and time;
    a time the platform cannot show (a reason is any process's text) stays as written."""

    def local(found: re.Match[str]) -> str:
        try:
            return "at " + time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(int(found[1])))
        except (OverflowError, OSError, ValueError):
            return found[0]

    return _UNIX_TIME.sub(local, text)


_DECISION_WORDS = {
    DecisionKind.APPROVE.value: "Approved",
    DecisionKind.APPROVE_FOR_SESSION.value: "Approved for the rest of the session",
    DecisionKind.EDIT.value: "Approved with edited arguments",
    DecisionKind.REJECT.value: "Rejected",
    DecisionKind.STEER.value: "Redirected with guidance",
    DecisionKind.RESPOND.value: "Answered",
    DecisionKind.CANCEL.value: "Cancelled",
    DecisionKind.EXPIRE.value: "Expired without a decision",
}


def decision_words(decision: str, *, edited: bool = False, reviewer: str = "") -> str:
    """A decision as a person says it ("Approved with edited arguments"), never the stored kind name; one the
    expiry clock made says so ("Expired without a decision (so rejected)", not "Rejected")."""
    if _automatic_label(reviewer) == EXPIRY_CLOCK and decision != DecisionKind.EXPIRE.value:
        settled = decision_words(decision).lower()
        return f"{_DECISION_WORDS[DecisionKind.EXPIRE.value]} (so {settled})"
    words = _DECISION_WORDS.get(decision)
    if words is None:
        return decision.replace("_", " ").capitalize() or "Decided"
    if edited and decision == DecisionKind.APPROVE_FOR_SESSION.value:
        return "Approved with edits, for the rest of the session"
    return words


def _automatic_label(reviewer: str) -> str:
    """The automatic decider's label: PostgreSQL records it after the login (``alice/rule:r1``)."""
    return reviewer.rpartition("/")[2]


def rule_id_of(reviewer: str) -> str | None:
    """The id of the persistent rule recorded as the reviewer (``rule:<id>``), else None."""
    label = _automatic_label(reviewer)
    return label[len("rule:") :] or None if label.startswith("rule:") else None


def decided_by_words(reviewer: str, rule_pattern: str | None = None) -> str:
    """Who decided: a person's name, ``rule:<id> (pattern)``, a session waiver, or the expiry clock."""
    label = _automatic_label(reviewer)
    if label.startswith("rule:"):
        return f"{label} ({rule_pattern})" if rule_pattern else label
    if label.startswith("session-rule:"):
        return f"the session's standing approval ({label})"
    if label == EXPIRY_CLOCK:
        return "the expiry clock"
    return reviewer
