"""Short texts the views show: ages, countdowns, shortened ids (with when an age's text next changes)."""

from __future__ import annotations

from collections.abc import Callable

from reviewer_app.domain.hitl import HITLType
from reviewer_app.domain.records import RequestSummary
from reviewer_app.domain.tool_args import elide_middle
from reviewer_app.domain.toolcall import mcp_parts

QUESTION_PREFIX = "question: "  # how a stored question's summary begins (its arguments summarised)


def short_id(value: str, keep: int = 10) -> str:
    """``value`` elided in the middle to about ``keep`` characters: the prefix says what it is, the tail tells apart."""
    return elide_middle(value, keep + 1)


def shown_summary(s: RequestSummary) -> str:
    """A request's summary as the views say it: a question's without "question: " (they say it is a question)."""
    text = s.summary
    if s.hitl_type == HITLType.ASK_USER.value and text.startswith(QUESTION_PREFIX):
        return text[len(QUESTION_PREFIX) :]
    return text


def one_line(text: str | None, limit: int = 200) -> str:
    """A title on one line: whitespace folded, elided at the end past ``limit``."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def format_age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"
    return f"{seconds // 86400}d {seconds % 86400 // 3600}h"


def age_text_lasts(seconds: float) -> float:
    """How many more seconds :func:`format_age` keeps giving the same text for this age."""
    whole = max(0, int(seconds))
    if whole < 60:
        step = 1
    elif whole < 86400:
        step = 60
    else:
        step = 3600
    return whole - whole % step + step - max(0.0, seconds)


def format_countdown(expires_at: int | None, now: float) -> str:
    if expires_at is None:
        return ""
    left = int(expires_at - now)
    if left <= 0:
        return "expired"
    if left < 3600:
        return f"in {left // 60}:{left % 60:02d}"
    return f"in {format_age(left)}"


def tool_label(tool_name: str | None) -> str:
    """A tool as the operator reads it: MCP tools by their own name and server (``write_file · fs``)."""
    if not tool_name:
        return ""
    parts = mcp_parts(tool_name)
    if parts is None:
        return tool_name
    server, tool = parts
    return f"{tool} · {server}"


def count_text(count: int, noun: str) -> str:
    """ "1 request", "4 requests" (an operator reads "4 request(s)" as a program talking)."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def cut_path(path: str, fits: Callable[[str], bool]) -> str | None:
    """``path`` whole if it ``fits``, else cut at its slashes: its first folder, then as many of its last parts as fit
    (``/home/…/orders/statement.py``), else its last parts alone (``…/statement.py``). None when it is no path (a
    command's spaces, a URL, fewer than three parts) or not even its file name fits. Cut anywhere, a path kept a few
    characters of each end ("/ho…tatement.py")."""
    parts = path.split("/")
    if len(parts) < 3 or "://" in path or any(character.isspace() for character in path):
        return None
    if fits(path):
        return path
    first = "/".join(parts[: 2 if parts[0] == "" else 1])
    for start in (f"{first}/…/", "…/"):
        for kept in range(len(parts) - 2, 0, -1):  # the most of the end first
            shown = start + "/".join(parts[-kept:])
            if fits(shown):
                return shown
    return None
