"""What the inbox search and filters ask for, and the text of a request they read.

The scope (pending, decided, all) decides what the inbox loads; the filter (search terms, type,
tool, agent) what of it shows. The texts here are the ones the search matches, lower-cased once.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from reviewer_app.domain.hitl import HITLStatus, HITLType
from reviewer_app.domain.records import RequestSummary

Key = tuple[int, int, str]


class Scope(StrEnum):
    """Which requests the inbox holds: the pending ones, the decided history, or both."""

    PENDING = "pending"
    HISTORY = "history"
    ALL = "all"

    def includes(self, status: str) -> bool:
        if self is Scope.ALL:
            return True
        return (status == HITLStatus.PENDING.value) == (self is Scope.PENDING)

    @property
    def statuses(self) -> tuple[str, ...]:
        """The statuses to load from the store for this scope."""
        if self is Scope.PENDING:
            return (HITLStatus.PENDING.value,)
        decided = tuple(s.value for s in HITLStatus if s is not HITLStatus.PENDING)
        return decided if self is Scope.HISTORY else (HITLStatus.PENDING.value, *decided)


TYPE_FILTERS = (("All types", None), ("Tool approvals", HITLType.TOOL_APPROVAL.value), ("Questions", "ask_user"))
SCOPES = (("Pending", Scope.PENDING), ("Decided", Scope.HISTORY), ("All", Scope.ALL))
ALL_TOOLS, ALL_AGENTS = "All tools", "All agents"
FILTER_KEYS = ("scope", "type", "tool", "agent", "search")  # remembered as ``filters/<key>``: the shown texts
UNFILTERED_TEXTS = {"scope": SCOPES[0][0], "type": TYPE_FILTERS[0][0], "tool": ALL_TOOLS, "agent": ALL_AGENTS}
FLAT_QUEUE_KEY = "inbox/flatQueue"  # remembered: the flat queue (most urgent first) instead of the grouped tree


@dataclass(frozen=True)
class InboxFilter:
    """What the search box and the filter combos ask for; empty fields do not filter."""

    text: str = ""
    hitl_type: str | None = None
    tool: str | None = None
    agent: str | None = None
    scope: Scope = Scope.PENDING

    @property
    def terms(self) -> tuple[str, ...]:
        return tuple(self.text.lower().split())

    @property
    def narrows_fields(self) -> bool:
        return self.hitl_type is not None or self.tool is not None or self.agent is not None

    @property
    def mask_key(self) -> tuple[Any, ...]:
        """What a mask depends on (not the scope: the grouping only ever holds the scope's requests)."""
        return (self.terms, self.hitl_type, self.tool, self.agent)

    def accepts_fields(self, s: RequestSummary) -> bool:
        if self.hitl_type is not None and s.hitl_type != self.hitl_type:
            return False
        if self.tool is not None and s.tool_name != self.tool:
            return False
        return not (self.agent is not None and s.agent != self.agent)

    def accepts(self, s: RequestSummary, haystack: str) -> bool:
        if not self.scope.includes(s.status) or not self.accepts_fields(s):
            return False
        return all(term in haystack for term in self.terms)


def haystack(s: RequestSummary) -> str:
    """The lower-cased text the search box matches for one request: tool, arguments summary, session, agent, run."""
    return f"{label_text(s)}\n{s.summary}\n{s.session_id}\n{s.agent or ''}\n{s.invocation_id}".lower()


def label_text(s: RequestSummary) -> str:
    """The request's kind as the search sees it (a question is found as 'ask_user' and as 'question')."""
    if s.hitl_type == HITLType.ASK_USER.value:
        return "ask_user question"
    return (s.tool_name or s.hitl_type).lower()


def group_hay(s: RequestSummary) -> str:
    return f"{s.session_id}\n{s.agent or ''}\n{s.invocation_id}".lower()


def sort_key(s: RequestSummary) -> Key:
    """Arrival order: created second, then the creation millisecond of a pending row, then id."""
    return (s.created_at, s.updated_at_ms if s.status == HITLStatus.PENDING.value else 0, s.hitl_id)
