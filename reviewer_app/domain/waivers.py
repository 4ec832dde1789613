"""Which tool calls need a human, and the per-session rules (approve-for-session) that waive it.

Why: approve-for-session must waive exactly what the operator saw, never more. For shell tools a session rule
holds a ``CommandScope`` (``reviewer_app.domain.shell``): by default the exact command, so `git status; touch X`
or `git $(touch X)` are still asked. A command that does more than its text shows (``shell_effects``: a wrapper,
``find -delete``, inline code…) gets no waiver at all, not even its exact text. Which tools are shell tools comes
from the fixed operator-side set in ``reviewer_app.domain.toolcall`` and never from request data, so a request
cannot widen its own rule.

Public API:

- ``SHELL_TOOLS``, ``is_shell_tool(name)`` (re-exported from ``toolcall``)
- ``SessionRule(tool_name, scope=None)``: ``matches(tool_name, args, *, cwd=None, metadata=None) -> bool``,
  ``describe() -> str``, ``to_dict()`` / ``SessionRule.from_dict(data)`` (JSON-friendly, for the store)
- ``rule_for(tool_name, args) -> SessionRule | None``: the rule approve-for-session adds; None when the call
  cannot be waived (an unparseable or substituting shell command): then approve-for-session approves only
  this call
- ``describe_session_approval(tool_name, args) -> str``: the line the window shows before the rule is made
- ``ApprovalPolicy.needs_approval(tool_name, args, *, side_effects, rules=(), cwd=None, metadata=None) -> bool``
- ``command_word(args)``: display only (kept for the detail view's tooltip); never used for matching
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from reviewer_app.domain.decisions import canonical_json
from reviewer_app.domain.lean_settlement import waiver_words
from reviewer_app.domain.shell_scopes import CommandScope, scope_for_approval, why_not_waivable
from reviewer_app.domain.toolcall import (
    CONTEXT_FLAG_RISKS,
    SHELL_TOOLS,
    ToolCall,
    command_of,
    context_flags,
    is_shell_tool,
)

__all__ = [
    "SHELL_TOOLS",
    "ApprovalPolicy",
    "SessionRule",
    "command_word",
    "describe_session_approval",
    "is_shell_tool",
    "rule_for",
]


@dataclass(frozen=True, slots=True)
class SessionRule:
    """ "Allow this in this session without asking".

    For a shell tool, ``scope`` says which commands (exact or prefix) and is required: a shell tool is never
    waived wholesale. For other tools ``scope`` is None and every call of the tool is waived except high-risk
    ones. A prefix scope never waives a high-risk command (``reviewer_app.domain.risk``); only an exact scope
    does. The session's workspace is not known here, so paths are judged as relative to an unknown one
    (absolute and ``..`` paths count as outside it).
    """

    tool_name: str
    scope: CommandScope | None = None
    flags: frozenset[str] = frozenset()
    """The context flags (``toolcall.context_flags``: ``dangerouslyDisableSandbox``…) of the call it was granted
    for: it covers no call that sets another one (a waiver for a sandboxed call never covers an unsandboxed one)."""

    def matches(
        self,
        tool_name: str,
        args: dict[str, Any],
        *,
        cwd: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> bool:
        """Whether this waiver covers the call; ``cwd`` (the workspace) and ``metadata`` (e.g. an MCP tool's
        ``{"annotations": {"destructiveHint": true}}``) sharpen the risk check when the caller knows them."""
        if tool_name != self.tool_name:
            return False
        call = ToolCall(tool_name, args, cwd=cwd, metadata=metadata or {})
        if not context_flags(call) <= self.flags:
            return False

        if not is_shell_tool(tool_name):
            # A whole-tool waiver is a wildcard: it never waives a high-risk call (a write to .env, .git/hooks…).
            from reviewer_app.domain.risk import assess  # here: an exact waiver needs no risk (the hook's fast path)

            return self.scope is None and not assess(call, scan_secrets=False).high
        if self.scope is None:
            return False
        command = command_of(tool_name, args)
        if command is None or not self.scope.covers(command):
            return False
        if self.scope.kind == "prefix":
            from reviewer_app.domain.risk import assess

            return not assess(call, scan_secrets=False).high
        return self.scope.plain  # an exact waiver never covers a command that does more than its text shows

    def describe(self) -> str:
        return waiver_words(self.scope.describe() if self.scope is not None else None, self.tool_name, self.flags)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"tool_name": self.tool_name, "scope": self.scope.to_dict() if self.scope else None}
        if self.flags:
            data["flags"] = sorted(self.flags)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionRule:
        """Read a stored rule; raises ValueError for a shape that would waive more than it says."""
        tool_name = data.get("tool_name")
        if not isinstance(tool_name, str) or not tool_name:
            raise ValueError("a session rule needs a tool_name")
        raw_scope = data.get("scope")
        scope = CommandScope.from_dict(raw_scope) if isinstance(raw_scope, dict) else None
        if raw_scope is not None and scope is None:
            raise ValueError("a session rule's scope must be an object")
        flags = data.get("flags") or []
        if not isinstance(flags, list) or not all(flag in CONTEXT_FLAG_RISKS for flag in flags):
            raise ValueError("a session rule's flags must be known context flags")
        return cls(tool_name, scope, frozenset(flags))

    def stored_scope(self) -> str:
        """The scope as stored in a ``session_rules`` row: canonical JSON, empty for a whole non-shell tool with
        no flags; the flags ride along under ``"flags"`` (an older row has none: it covers no flagged call)."""
        stored: dict[str, Any] = self.scope.to_dict() if self.scope is not None else {}
        if self.flags:
            stored = {**stored, "flags": sorted(self.flags)}
        return canonical_json(stored) if stored else ""

    @classmethod
    def from_stored(cls, tool_name: str, stored_scope: str | None) -> SessionRule | None:
        """A ``session_rules`` row as a rule; None for a row this version cannot read (it then waives nothing)."""
        import json

        try:
            scope = json.loads(stored_scope) if stored_scope else None
            flags: Any = scope.pop("flags", []) if isinstance(scope, dict) else []
            return cls.from_dict({"tool_name": tool_name, "scope": scope or None, "flags": flags})
        except (ValueError, TypeError, KeyError):
            return None


def command_word(args: dict[str, Any]) -> str | None:
    """First word of a shell command, for display only (never for matching: see ``SessionRule``)."""
    command = args.get("command")
    if isinstance(command, list):
        command = " ".join(str(part) for part in command)
    if not isinstance(command, str):
        return None
    words = command.strip().split()
    return words[0] if words else None


def rule_for(tool_name: str, args: dict[str, Any]) -> SessionRule | None:
    """The rule an approve-for-session of this call adds, or None when nothing can be waived.

    Shell tools get the exact command (``scope_for_approval``); a command that cannot be parsed, or contains
    a substitution, a pipe into an interpreter, ``&``, a subshell or a heredoc, gets no rule at all.
    """
    flags = context_flags(ToolCall(tool_name, args))
    if is_shell_tool(tool_name):
        command = command_of(tool_name, args)
        scope = scope_for_approval(command) if command is not None else None
        return SessionRule(tool_name, scope, flags) if scope is not None else None
    return SessionRule(tool_name, None, flags)


def describe_session_approval(tool_name: str, args: dict[str, Any]) -> str:
    """What approve-for-session of this call will allow, in one line, shown before the rule is made."""
    rule = rule_for(tool_name, args)
    if rule is not None:
        return rule.describe()
    from reviewer_app.domain.shell import parse_command  # the parser: only for the window's explanation

    command = command_of(tool_name, args)
    reasons = why_not_waivable(command) if command is not None else ("the command could not be read",)
    if command is not None and not reasons and not parse_command(command).commands:
        reasons = ("the command is empty",)
    return "approve this call only: the command will be asked again (" + "; ".join(reasons) + ")"


@dataclass(frozen=True, slots=True)
class ApprovalPolicy:
    """Which tools must wait for a reviewer.

    ``gated`` names them explicitly; when it is None every tool that the tool
    registry marks as writing or executing is gated (the safe default).
    ``default_on_expiry`` is what an expired request receives.
    """

    gated: frozenset[str] | None = None
    ungated: frozenset[str] = field(default_factory=frozenset)
    default_on_expiry: str = "reject"
    expires_after_s: int | None = None

    def needs_approval(
        self,
        tool_name: str,
        args: dict[str, Any],
        *,
        side_effects: bool,
        rules: Iterable[SessionRule] = (),
        cwd: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> bool:
        if tool_name in self.ungated:
            return False
        gated = tool_name in self.gated if self.gated is not None else side_effects
        if not gated:
            return False
        return not any(rule.matches(tool_name, args, cwd=cwd, metadata=metadata) for rule in rules)
