"""How a request left the pending state, said in words and human time (no widgets here).

The pane's state line, the notices of requests decided elsewhere or expired, and the
conflict banner all say it the same way: what the request was, who settled it, how, when.
"""

from __future__ import annotations

import time
from typing import Any

from reviewer_app.domain.hitl import summarize_arguments
from reviewer_app.domain.records import RequestSummary
from reviewer_app.domain.tool_args import elide_middle
from reviewer_app.domain.toolcall import command_of, path_of
from reviewer_app.ui.common.texts import cut_path, format_age, shown_summary

DECISION_PAST = {
    "approve": "approved",
    "approve_for_session": "approved for the session",
    "edit": "edited and approved",
    "reject": "rejected",
    "steer": "steered",
    "respond": "answered",
    "cancel": "cancelled",
}
WHAT_CHARS = 60


def human_time(when_s: float, now: float) -> str:
    """``14:02:11 (32s ago)`` today, with the date on other days."""
    local = time.localtime(when_s)
    same_day = time.localtime(now)[:3] == local[:3]
    clock = time.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M:%S", local)
    return f"{clock} ({format_age(now - when_s)} ago)"


def describe_request(summary: RequestSummary) -> str:
    """What the request asked, short: ``run_shell "make deploy"``."""
    what = summary.tool_name or ("question" if summary.hitl_type == "ask_user" else summary.hitl_type)
    text = short_call(" ".join(shown_summary(summary).split()))
    return f"{what} “{text}”" if text else what


def struck(text: str) -> str:
    """``text`` struck through in plain text (a combining stroke after each character): the status bar is plain."""
    return "".join(ch + "\u0336" for ch in text)


def _call_text(tool: str, arguments: Any) -> str:
    text = command_of(tool, arguments) or path_of(tool, arguments) or summarize_arguments(arguments)
    return short_call(" ".join(text.split()))


def short_call(text: str) -> str:
    """A call in :data:`WHAT_CHARS`: a path cut at its slashes (its file name stays), anything else in the middle
    (the end of a command, `&& rm -rf /`, stays)."""
    return cut_path(text, lambda shown: len(shown) <= WHAT_CHARS) or elide_middle(text, WHAT_CHARS)


def describe_edit(summary: RequestSummary, shown: Any, edited: Any) -> str:
    """What ran after an edit, and what was shown struck through: ``Bash “rm -r build/tmp” (shown: r̶m̶…)``."""
    return "".join(edit_parts(summary, shown, edited))


def edit_parts(summary: RequestSummary, shown: Any, edited: Any) -> tuple[str, str]:
    """:func:`describe_edit` as the call that ran and the detail after it (`` (shown: …)``, `` (edited: …)``): a
    narrow status bar cuts the detail first, never the call."""
    tool = summary.tool_name or summary.hitl_type
    ran, was = _call_text(tool, edited), _call_text(tool, shown)
    if ran != was:
        return f"{tool} “{ran}”", f" (shown: {struck(was)})"
    # The line that names the call is unchanged (a WebFetch's prompt was edited): say which fields were.
    before, after = (value if isinstance(value, dict) else {} for value in (shown, edited))
    changed = [key for key in dict.fromkeys([*before, *after]) if before.get(key) != after.get(key)]
    return f"{tool} “{ran}”", f" (edited: {', '.join(map(str, changed))})" if changed else ""


def settled_phrase(summary: RequestSummary, now: float) -> str:
    """``was rejected by alice at 14:02:11 (5s ago)``; an expiry says so and names the default it got."""
    when = human_time(summary.updated_at_ms / 1000, now)
    if summary.status == "expired":
        # What the expiry defaulted to, in words; "expire" itself (no default recorded) says nothing more.
        default = DECISION_PAST.get(summary.decision or "", "")
        return f"expired at {when} without a decision" + (f" (so it was {default})" if default else "")
    how = DECISION_PAST.get(summary.decision or "", summary.decision or summary.status)
    who = f" by {summary.decided_by}" if summary.decided_by else ""
    return f"was {how}{who} at {when}"


def conflict_phrase(record: dict[str, Any] | None, now: float) -> str | None:
    """The same words from a conflict's record (the request as it is now), or None without one."""
    if not record:
        return None
    response = record.get("user_response")
    response = response if isinstance(response, dict) else {}
    status = str(record.get("status") or "")
    decision = response.get("decision")
    who = response.get("reviewer")
    when = record.get("responded_at") or record.get("updated_at")
    at = f" at {human_time(float(when), now)}" if isinstance(when, int | float) and when else ""
    if status == "expired":
        return f"it expired{at} without a decision"
    how = DECISION_PAST.get(str(decision or ""), str(decision or status))
    return f"it was {how}" + (f" by {who}" if who else "") + at
