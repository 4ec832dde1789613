"""OpenAI Codex CLI asks Reviewer through its ``PermissionRequest`` hook.

Codex's hook shares Claude Code's machinery (:mod:`reviewer_app.integrations.claude_code`); what differs is
here: the event carries ``turn_id`` (the run) and ``model``; the answer is allow, or deny with a message —
Codex accepts no edited input, so requests from Codex offer no "edit" — and its hooks live in
``~/.codex/hooks.json`` (``$CODEX_HOME``). Codex fires the hook only where it would ask (its approval policy),
for shell commands, unified exec and network approvals, all named ``Bash``.
"""

from __future__ import annotations

from pathlib import Path

from reviewer_app.integrations.claude_code.events import Host
from reviewer_app.integrations.claude_code.install import InstallResult, codex_hooks_path, hook_command, install

EVENT = "PermissionRequest"
HOST = Host.CODEX


def install_codex(
    base_command: list[str],
    database: str,
    *,
    hook_timeout: int,
    extra: list[str] | None = None,
    home: Path | None = None,
) -> InstallResult:
    """Merge the PermissionRequest hook into Codex's ``hooks.json`` (every other hook kept, a backup made)."""
    command = hook_command(base_command, HOST, database, hook_timeout, extra)
    return install(codex_hooks_path(home), EVENT, command, matcher=None, timeout=hook_timeout)
