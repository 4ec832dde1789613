"""The part of settling a call that needs no rules engine, shell parser or risk module: the hook's lean path.

Why: most hook calls meet either nothing that could settle them (they wait for a reviewer) or the session's exact
waiver for the very command the reviewer approved (``allow `git status` exactly``). Telling those apart needs
only the stored rows, so the hook answers them in little more than the interpreter's start. Everything else
(a rule about the tool, ``--allow-tools``, a prefix or whole-tool waiver, a command that differs from an approved
one only in its quoting) is left to :func:`reviewer_app.domain.settlement.settlement_for`: these functions say
"unsure" rather than guess. The words and the order are settlement's own (it calls :func:`waiver_words` and
:func:`may_concern` from here); a parity test holds :func:`stored_waiver_verdict` to ``SessionRule.matches``.

Standard library only, no dataclasses or ``typing`` at run time.

Public API:

- ``may_concern(pattern, tool_name) -> bool``
- ``stored_waiver_verdict(tool_name, arguments, stored_scope) -> COVERS | NOT_COVERED | UNSURE``
- ``settle_by_stored_waivers(tool_name, arguments, rows) -> (row_id, description) | None | UNSURE``
- ``exact_scope_words(text)``, ``waiver_words(scope_words, tool_name, flags)``, ``waiver_settlement(id, words)``,
  ``allow_tools_settlement(tool_name)``

A command of plain literal words only is told by :func:`reviewer_app.domain.plain_shell.plain_words`.
"""

from __future__ import annotations

from reviewer_app.domain.lean_json import loads
from reviewer_app.domain.plain_shell import plain_words
from reviewer_app.domain.tool_args import CONTEXT_FLAG_RISKS, command_of, flags_in, is_shell_tool

TYPE_CHECKING = False  # no ``typing`` at run time (see the module docstring)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

RULE_COLUMNS = ("id", "effect", "pattern", "scope", "expires_at", "note", "created_at")
"""The ``policy_rules`` columns a rule is rebuilt from (``rule_outcome.rule_from_row``)."""
COVERS = "covers"
NOT_COVERED = "not covered"
UNSURE = "unsure"
"""The lean check cannot tell without the parser or the risk module: ask ``settlement_for``."""


def may_concern(pattern: str, tool_name: str) -> bool:
    """False only when a rule with this pattern can never match a call of ``tool_name`` (another tool, another
    MCP server's tools): then the rule need not be built. A test holds it to ``RulePattern.concerns``."""
    head = pattern.strip().partition("(")[0]
    return head == tool_name or (head.startswith("mcp__") and tool_name.startswith("mcp__"))


def exact_scope_words(text: str) -> str:
    """How an exact command scope is described (``CommandScope.describe``)."""
    return f"allow `{text}` exactly"


def waiver_words(scope_words: str | None, tool_name: str, flags: Iterable[str]) -> str:
    """How a waiver is described (``SessionRule.describe``); ``scope_words`` None: a whole non-shell tool."""
    extra = "".join(f", with {CONTEXT_FLAG_RISKS[flag][1].split(' (')[0]}" for flag in sorted(flags))
    if scope_words is None:
        return f"allow every {tool_name} call in this session{extra}"
    return f"{scope_words} ({tool_name}, this session{extra})"


ALLOW_TOOLS = "rule:allow-tools"
"""Who the record names as deciding a call that ``--allow-tools`` in a hook command let through."""


def allow_tools_settlement(tool_name: str) -> tuple[str, str]:
    """Who the record names and the reason given when ``--allow-tools`` settles a call
    (``Settlement.by_allow_tools``)."""
    return ALLOW_TOOLS, f"allowed by --allow-tools in the hook command ({tool_name})"


def waiver_settlement(waiver_id: int, description: str) -> tuple[str, str]:
    """Who the record names and the reason given when a waiver settles a call (``Settlement.by_waiver``)."""
    return f"session-rule:{waiver_id}", f"waived by this session's rule: {description}"


def _stored_scope(stored_scope: str | None) -> tuple[dict[str, Any], list[str]] | None:
    """A ``session_rules`` scope read as ``SessionRule.from_stored`` reads it: (scope, flags), None if unreadable
    or not a shell scope."""
    try:
        scope = loads(stored_scope) if stored_scope else None
    except ValueError:
        return None
    if not isinstance(scope, dict):
        return None
    flags = scope.pop("flags", [])
    if not isinstance(flags, list) or not all(isinstance(flag, str) and flag in CONTEXT_FLAG_RISKS for flag in flags):
        return None
    return (scope, flags) if scope else None


def stored_waiver_verdict(tool_name: str, arguments: Any, stored_scope: str | None) -> str:
    """Whether a stored waiver of ``tool_name`` covers a call with ``arguments``: :data:`COVERS` only for an exact,
    checked, plain shell scope whose text is the command itself; :data:`NOT_COVERED` only when that is certain
    without the parser (another context flag, other plain words); else :data:`UNSURE`."""
    if not is_shell_tool(tool_name):
        return UNSURE  # a whole-tool waiver never covers a high-risk call: the risk module decides
    read = _stored_scope(stored_scope)
    if read is None:
        return UNSURE
    scope, flags = read
    if not flags_in(arguments) <= frozenset(flags):
        return NOT_COVERED
    command = command_of(tool_name, arguments)
    text, words, kind = scope.get("text"), scope.get("words"), scope.get("kind")
    if command is None or not isinstance(text, str) or not isinstance(words, list):
        return UNSURE
    if not all(isinstance(word, str) for word in words):
        return UNSURE
    if kind == "exact" and scope.get("waivable") is True and scope.get("plain") is True:
        if command == text:
            return COVERS
        ours, theirs = plain_words(command), plain_words(text)
        return NOT_COVERED if ours is not None and theirs is not None and ours != theirs else UNSURE
    if kind == "prefix" and words:
        ours = plain_words(command)
        return NOT_COVERED if ours is not None and ours[: len(words)] != words else UNSURE
    return UNSURE


def settle_by_stored_waivers(
    tool_name: str, arguments: Any, rows: Iterable[tuple[int, str | None]]
) -> tuple[int, str] | str | None:
    """The first of the session's waiver rows (``(id, stored scope)``, in the store's order) that covers the call,
    as ``(id, description)``; None when certainly none does; :data:`UNSURE` when an earlier row cannot be told."""
    for row_id, stored_scope in rows:
        verdict = stored_waiver_verdict(tool_name, arguments, stored_scope)
        if verdict == UNSURE:
            return UNSURE
        if verdict == COVERS:
            read = _stored_scope(stored_scope)
            assert read is not None
            scope, flags = read
            return row_id, waiver_words(exact_scope_words(str(scope["text"])), tool_name, flags)
    return None
