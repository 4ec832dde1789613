"""Which tool calls need a human, and the per-session rules that waive it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

SHELL_TOOLS = frozenset({"run_shell", "shell", "bash", "exec"})


@dataclass(frozen=True, slots=True)
class SessionRule:
    """ "Allow this tool (for shell tools: commands starting with this word) in this session"."""

    tool_name: str
    command_prefix: str | None = None

    def matches(self, tool_name: str, args: dict[str, Any]) -> bool:
        if tool_name != self.tool_name:
            return False
        if self.command_prefix is None:
            return True
        return command_word(args) == self.command_prefix


def command_word(args: dict[str, Any]) -> str | None:
    """First word of a shell command, the unit approve-for-session allows."""
    command = args.get("command")
    if isinstance(command, list):
        command = " ".join(str(part) for part in command)
    if not isinstance(command, str):
        return None
    words = command.strip().split()
    return words[0] if words else None


def rule_for(tool_name: str, args: dict[str, Any], shell_tools: frozenset[str] = SHELL_TOOLS) -> SessionRule:
    """The rule an approve-for-session of this call adds."""
    if tool_name in shell_tools:
        return SessionRule(tool_name, command_word(args) or "")
    return SessionRule(tool_name, None)


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
    ) -> bool:
        if tool_name in self.ungated:
            return False
        gated = tool_name in self.gated if self.gated is not None else side_effects
        if not gated:
            return False
        return not any(rule.matches(tool_name, args) for rule in rules)
