"""Which tool calls wait for a reviewer: the one decision point of the proxy.

The default follows the tool's own annotations: only a tool the upstream marks ``readOnlyHint: true`` and not
``destructiveHint: true`` runs without review (the more dangerous hint wins). ``--allow`` and ``--gate``
patterns (fnmatch, on the bare tool name or on Claude Code's ``mcp__SERVER__TOOL`` name) refine it;
a pattern in both lists gates. The persistent rules engine plugs in here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any


def qualified_name(server: str, tool: str) -> str:
    """Claude Code's name for an MCP tool, so one rule syntax serves both."""
    return f"mcp__{server}__{tool}"


def annotations_of(tool: Mapping[str, Any] | None) -> dict[str, Any]:
    annotations = (tool or {}).get("annotations")
    return dict(annotations) if isinstance(annotations, Mapping) else {}


def is_read_only(tool: Mapping[str, Any] | None) -> bool:
    """True only for an explicit JSON ``true`` (a string "true" or a missing hint gates), and never for a tool
    that also says it is destructive: ``destructiveHint`` outranks ``readOnlyHint``."""
    annotations = annotations_of(tool)
    return annotations.get("readOnlyHint") is True and annotations.get("destructiveHint") not in (True, "true")


def risk_of(tool: Mapping[str, Any] | None) -> list[str]:
    """The annotations a reviewer should weigh, in words (MCP's defaults apply to missing hints)."""
    annotations = annotations_of(tool)
    if is_read_only(tool):
        return ["read-only"]
    risks = []
    if annotations.get("destructiveHint", True) is not False:
        risks.append("destructive")
    if annotations.get("idempotentHint") is not True:
        risks.append("not idempotent")
    if annotations.get("openWorldHint", True) is not False:
        risks.append("open world")
    return risks


@dataclass(frozen=True, slots=True)
class GatePolicy:
    """``--gate`` and ``--allow`` patterns over one server's tools."""

    server: str
    gate: Sequence[str] = ()
    allow: Sequence[str] = ()

    def _matches(self, patterns: Sequence[str], tool_name: str) -> bool:
        full = qualified_name(self.server, tool_name)
        return any(fnmatchcase(tool_name, p) or fnmatchcase(full, p) for p in patterns)

    def needs_review(self, tool_name: str, tool: Mapping[str, Any] | None, *, rule_effect: str | None = None) -> bool:
        """Whether a call of ``tool_name`` (described by ``tool`` from tools/list, None if unknown) waits.

        ``rule_effect``: the effect of the persistent rule that applies to this call, if any
        (:func:`reviewer_app.integrations.rules.rule_effect`). Any rule sends the call through review, where an
        allow or deny is settled on the record without a human and an ask waits for one, whatever ``--allow``
        or the tool's annotations say.
        """
        if rule_effect is not None:
            return True
        if self._matches(self.gate, tool_name):
            return True
        if self._matches(self.allow, tool_name):
            return False
        return not is_read_only(tool)
