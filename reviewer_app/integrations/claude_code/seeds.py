"""The rules ``hook install --event PreToolUse`` seeds: what used to be a hidden default, now visible.

Why: under PreToolUse every tool call reaches Reviewer, so reading a file in the project would be asked unless
something allows it. That something is a real rule in the rules table (listed by ``rules list`` and the Rules
tab, attributed by its note, revocable; ``hook uninstall`` revokes it), scoped to the project, never a default
nobody sees. Each is a path glob over the workspace or a tool that only touches Claude's own state, and as a
wildcard none of them settles a high-risk call (a private key, a credentials file, an agent host's settings).
Under PermissionRequest nothing is seeded: Claude Code already asked, and answered itself what it allows.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from reviewer_app.integrations.claude_code.events import Host

SEEDED_PATTERNS = (
    "Read(**)",
    "Glob(**)",
    "Grep(**)",
    "LS(**)",
    "NotebookRead(**)",
    "TodoWrite",
    "TodoRead",
    "BashOutput",
)
NOTE = "installed by hook install"


AGENT_STATE_TOOLS = frozenset({"TodoWrite", "TodoRead", "BashOutput", "todo_write", "todoread", "todowrite"})
"""Tools that only touch the agent's own state (its to-do list, output it already has): seeded as bare tools."""


def seeded_patterns(host: Host) -> tuple[str, ...]:
    """What ``hook install`` seeds for ``host``: Claude Code's list; for other hosts, each read-only tool the
    policy knows as a file tool as ``tool(**)`` (inside the workspace only) and its agent-state tools. A read-only
    tool the policy cannot read a path from (a search over many files) is not seeded: it is asked."""
    if host is Host.CLAUDE_CODE:
        return SEEDED_PATTERNS
    from reviewer_app.domain.toolcall import FILE_TOOLS
    from reviewer_app.integrations.hosts.registry import profile_for

    tools = profile_for(host).read_only_tools
    return tuple(
        f"{tool}(**)" if tool in FILE_TOOLS else tool
        for tool in tools
        if tool in FILE_TOOLS or tool in AGENT_STATE_TOOLS
    )


def seeded_scope(host: Host, scope: str | None, project: Path) -> str:
    """Claude Code: ``workspace:<project>`` for a project or local install, ``global`` for a user install. Other
    hosts (installed per user): ``agent:<host>``, so their tool names never widen another agent's rules."""
    if host is not Host.CLAUDE_CODE:
        return f"agent:{host.value}"
    return "global" if scope == "user" else f"workspace:{project}"


def seed_rules(
    database: str, scope: str, settings: Path, patterns: tuple[str, ...] = SEEDED_PATTERNS, event: str = "PreToolUse"
) -> list[str]:
    """Add the seeded allow rules not already in force with this scope; the lines to print about them."""
    return asyncio.run(_seed(database, scope, settings, patterns, event))


def revoke_seeded(database: str, scope: str) -> list[str]:
    """Revoke the rules an install seeded with this scope; the ids revoked."""
    return asyncio.run(_revoke(database, scope))


async def _seed(database: str, scope: str, settings: Path, patterns: tuple[str, ...], event: str) -> list[str]:
    from reviewer_app.domain.rules import Rule
    from reviewer_app.hitl import SQLHITLBackend

    backend = SQLHITLBackend(database)
    try:
        present = {(entry.rule.effect, entry.rule.pattern, entry.rule.scope) for entry in await backend.list_rules()}
        lines = []
        for pattern in patterns:
            rule = Rule.create("allow", pattern, scope=scope, note=f"{NOTE} ({event}, {settings})", now=time.time())
            if ("allow", rule.pattern, rule.scope) in present:
                continue
            stored = await backend.add_rule(rule, created_by="hook install")
            lines.append(f"rule {stored.rule.id}: {stored.rule.describe()}")
        return lines
    finally:
        await backend.aclose()


async def _revoke(database: str, scope: str) -> list[str]:
    from reviewer_app.hitl import SQLHITLBackend

    backend = SQLHITLBackend(database)
    try:
        revoked = []
        for entry in await backend.list_rules():
            if (
                entry.rule.note.startswith(NOTE)
                and entry.rule.scope == scope
                and await backend.revoke_rule(entry.rule.id)
            ):
                revoked.append(entry.rule.id)
        return revoked
    finally:
        await backend.aclose()
