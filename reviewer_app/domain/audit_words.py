"""The decision log in words: what each audit row was about (tool and command or target) and what was decided.

Rows are of two kinds. A decision on a request names the tool (from the request) and the command or target
from the arguments the row signed: what ran after an edit, with what was shown. A rule event (``rule_added``,
``rule_edited``, ``rule_revoked``, ``rule_expired``) is a change to the persistent rules, chained in the same log:
its ``shown_args`` is the rule as it was, its ``edited_args`` the rule as it became. A rule event is told apart by
its decision column, which no decision on a request can hold (agents choose request ids, never decisions).
"""

from __future__ import annotations

from typing import Any

from reviewer_app.domain.history import EXPIRY_CLOCK, decided_by_words, decision_words
from reviewer_app.domain.hitl import summarize_arguments
from reviewer_app.domain.records import AuditEntry
from reviewer_app.domain.tool_args import elide_middle
from reviewer_app.domain.toolcall import command_of, path_of

RULE_ADDED = "rule_added"
RULE_EDITED = "rule_edited"
RULE_REVOKED = "rule_revoked"
RULE_EXPIRED = "rule_expired"
RULE_EVENTS = (RULE_ADDED, RULE_EDITED, RULE_REVOKED, RULE_EXPIRED)
RULE_EVENT_WORDS = {
    RULE_ADDED: "Rule added",
    RULE_EDITED: "Rule edited",
    RULE_REVOKED: "Rule revoked",
    RULE_EXPIRED: "Rule expired",
}
EXPIRY_REVIEWER = EXPIRY_CLOCK
WHAT_CHARS = 120


def rule_subject(rule_id: str) -> str:
    """The ``hitl_id`` column of a rule event: the rule it is about."""
    return f"rule:{rule_id}"


def is_rule_event(decision: str) -> bool:
    return decision in RULE_EVENTS


def _short(text: str) -> str:
    return elide_middle(" ".join(text.split()), WHAT_CHARS)  # a command's end (`&& rm -rf /`) stays


def call_words(tool_name: str | None, arguments: Any) -> str:
    """``Bash “git status”``: the tool and its command, path or a summary of its arguments."""
    tool = tool_name or ""
    text = command_of(tool, arguments) or path_of(tool, arguments) or summarize_arguments(arguments)
    text = _short(text) if arguments is not None else ""
    if not tool:
        return f"“{text}”" if text else ""
    return f"{tool} “{text}”" if text else tool


def rule_words(rule: Any) -> str:
    """``allow Bash(git status*) (scope global)`` from a rule's stored dict."""
    if not isinstance(rule, dict):
        return ""
    text = f"{rule.get('effect', '?')} {rule.get('pattern', '?')} (scope {rule.get('scope', 'global')})"
    if rule.get("expires_at"):
        text += f", expires at unix time {int(rule['expires_at'])}"
    return text


def audit_what(entry: AuditEntry) -> str:
    """What the row was about: the call (what ran after an edit, then what was shown) or the rule changed."""
    if is_rule_event(entry.decision):
        if entry.decision == RULE_EDITED:
            return f"{rule_words(entry.edited_args)} (was: {rule_words(entry.shown_args)})"
        return rule_words(entry.edited_args if entry.edited_args is not None else entry.shown_args)
    if entry.edited_args is not None:
        ran = call_words(entry.tool_name, entry.edited_args)
        return f"{ran} (shown: {call_words(None, entry.shown_args)})"
    return call_words(entry.tool_name, entry.shown_args)


def audit_decision_words(entry: AuditEntry) -> str:
    """The decision as a person says it (``Approved with edited arguments``, ``Rule revoked``)."""
    if is_rule_event(entry.decision):
        return RULE_EVENT_WORDS[entry.decision]
    return decision_words(entry.decision, edited=entry.edited_args is not None, reviewer=entry.reviewer)


def audit_by_words(entry: AuditEntry) -> str:
    return decided_by_words(entry.reviewer)
