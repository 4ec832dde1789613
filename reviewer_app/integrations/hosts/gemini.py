"""Gemini CLI's ``BeforeTool`` hook (``~/.gemini/settings.json``).

The event: ``{session_id, transcript_path, cwd, hook_event_name: "BeforeTool", timestamp, tool_name, tool_input,
mcp_context?}``. The answer is JSON on stdout: ``decision`` allow / deny / ask with a ``reason`` (a deny reaches the
model as ``Tool execution blocked: <reason>``; ask forces Gemini's own confirmation), and
``hookSpecificOutput.tool_input`` replaces the call's arguments (Gemini validates them again), so edits work.

An allow does not bypass Gemini's own policy check that follows: with its default approval mode a non-interactive
run still refuses the call, so Reviewer is the gate only with ``--approval-mode yolo``; installed, it is never more
permissive than Gemini without it. MCP calls (``mcp_context`` present) are named ``mcp__<server>__<tool>``.
"""

from __future__ import annotations

from reviewer_app.integrations.claude_code.events import Host
from reviewer_app.integrations.hosts.profile import HostProfile, tables_of

GEMINI = HostProfile(Host.GEMINI, **tables_of(Host.GEMINI))
