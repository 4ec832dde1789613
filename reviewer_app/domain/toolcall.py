"""A tool call as the policy sees it, and which argument of each known tool holds its command or path.

Why: rules, risk and session waivers must agree on what a call does. Which tools are shell tools and where a
tool keeps its command or file path is fixed here, on the operator's side: request data (``data["shell_tools"]``
or anything else an agent sends) never decides it, so it can never widen a rule.

Public API:

- ``ToolCall(tool_name, arguments, agent=None, session_id=None, cwd=None, metadata={})``; the tables and functions
  below live in :mod:`reviewer_app.domain.tool_args` (standard library only, for the hook's lean path)
- ``SHELL_TOOLS``, ``FILE_TOOLS``: the fixed tool families; ``is_shell_tool(name)``, ``is_file_tool(name)``
- ``COMMAND_ARGUMENTS`` / ``PATH_ARGUMENTS``: tool name → the argument(s) holding its command / path
- ``command_of(tool_name, arguments) -> str | None``: the shell command a shell tool would run
  (Codex's argv lists ``["bash", "-lc", "git status"]`` give ``git status``; other lists are ``shlex.join``-ed)
- ``path_of(tool_name, arguments) -> str | None``: the file path a file tool touches
- ``is_mcp_tool(name)`` and ``mcp_parts(name) -> (server, tool) | None`` for ``mcp__server__tool`` names
- ``context_flags(call) -> frozenset[str]``: the flags that change what a call may do beyond its command or path
  (Claude Code's ``dangerouslyDisableSandbox`` and ``run_in_background``); ``CONTEXT_FLAG_RISKS`` says why each
  matters. A rule never names them, so an allow rule never covers a call that sets one; a session waiver covers
  exactly the flags of the call it was granted for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reviewer_app.domain.tool_args import (
    COMMAND_ARGUMENTS,
    CONTEXT_FLAG_RISKS,
    FILE_TOOLS,
    NETWORK_TOOLS,
    PATH_ARGUMENTS,
    SHELL_TOOLS,
    WRITING_FILE_TOOLS,
    command_of,
    flags_in,
    is_file_tool,
    is_mcp_tool,
    is_shell_tool,
    mcp_parts,
    path_of,
)

__all__ = [
    "COMMAND_ARGUMENTS",
    "CONTEXT_FLAG_RISKS",
    "FILE_TOOLS",
    "NETWORK_TOOLS",
    "PATH_ARGUMENTS",
    "SHELL_TOOLS",
    "WRITING_FILE_TOOLS",
    "ToolCall",
    "command_of",
    "context_flags",
    "is_file_tool",
    "is_mcp_tool",
    "is_shell_tool",
    "mcp_parts",
    "path_of",
]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call an agent wants to make: what, with which arguments, by whom, where.

    ``cwd`` is the workspace the call runs in (relative paths are resolved against it); ``metadata`` carries
    facts from the tool's host, e.g. ``{"annotations": {"destructiveHint": True}}`` for an MCP tool.
    """

    tool_name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    agent: str | None = None
    session_id: str | None = None
    cwd: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def command(self) -> str | None:
        return command_of(self.tool_name, self.arguments)

    @property
    def path(self) -> str | None:
        return path_of(self.tool_name, self.arguments)


def context_flags(call: ToolCall) -> frozenset[str]:
    """The widening flags this call sets (:func:`reviewer_app.domain.tool_args.flags_in`)."""
    return flags_in(call.arguments)
