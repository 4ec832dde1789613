"""The patterns offered for a call: the narrowest exact pattern, and the widening the operator may choose.

Why: "Approve and make a rule…" defaults to a pattern that covers this call only; anything wider is the
operator's explicit choice, and every pattern offered covers the call.

Public API:

- ``narrowest_pattern_for(call) -> str | None``: the exact-match pattern for "Approve and make a rule…"
- ``pattern_choices(call) -> list[str]``: patterns covering the call, narrowest first (the widening offered)
"""

from __future__ import annotations

import re

from reviewer_app.domain.rule_patterns import RuleError, locate, parse_rule_pattern
from reviewer_app.domain.rules import Rule
from reviewer_app.domain.shell_scopes import scope_choices
from reviewer_app.domain.toolcall import (
    FILE_TOOLS,
    NETWORK_TOOLS,
    ToolCall,
    command_of,
    is_shell_tool,
    mcp_parts,
    path_of,
)
from reviewer_app.domain.urls import plain_host

__all__ = ["narrowest_pattern_for", "pattern_choices"]


def _escape_glob(path: str) -> str:
    escaped = re.sub(r"([*?\[\]\\])", r"\\\1", path)
    return "\\" + escaped if escaped.startswith(("!", "#")) else escaped


def narrowest_pattern_for(call: ToolCall) -> str | None:
    """The exact-match pattern that covers this call (the "Approve and make a rule…" default), or None when no
    pattern can (an unparseable or substituting shell command, a path under ``~``)."""
    tool = call.tool_name
    if is_shell_tool(tool):
        command = command_of(tool, call.arguments)
        if command is None or command.rstrip().endswith(":*") or "\n" in command:
            return None
        candidate = f"{tool}({command.strip()})"
    elif tool in FILE_TOOLS:
        path = path_of(tool, call.arguments)
        relative, absolute = locate(path, call.cwd) if path is not None else (None, None)
        if relative is not None:
            candidate = f"{tool}(/{_escape_glob(relative)})"
        elif absolute is not None:
            candidate = f"{tool}(//{_escape_glob(absolute)})"
        else:
            return None
    elif tool in NETWORK_TOOLS and _fetched_url(call) is not None:
        host = plain_host(_fetched_url(call) or "")
        if host is None:
            return None  # where it goes is not plain: approve this call only
        candidate = f"{tool}(domain:{host})"
    else:
        candidate = tool
    try:
        pattern = parse_rule_pattern(candidate)
    except RuleError:
        return None
    return candidate if pattern.matches(call) else None


def _fetched_url(call: ToolCall) -> str | None:
    url = call.arguments.get("url") if isinstance(call.arguments, dict) else None
    return url if isinstance(url, str) else None


def pattern_choices(call: ToolCall) -> list[str]:
    """Patterns covering this call, narrowest first, for the operator to widen by explicit choice.

    Shell: the exact command, then prefixes (``shell.scope_choices``). Files: the exact path, files with the
    same extension in the same directory, the directory tree, then every parent tree. MCP: the tool, then its
    server. The bare tool name comes last. Every pattern returned covers the call.
    """
    tool = call.tool_name
    choices: list[str] = []
    if is_shell_tool(tool):
        command = command_of(tool, call.arguments)
        if command is not None and "\n" not in command:
            for scope in scope_choices(command.strip()):
                choices.append(f"{tool}({scope.text})" if scope.kind == "exact" else f"{tool}({scope.text}:*)")
            exact = narrowest_pattern_for(call)  # a command no session scope covers may still take an exact rule
            if not choices and exact is not None and Rule.may_allow(exact):
                choices.append(exact)
    elif tool in FILE_TOOLS:
        path = path_of(tool, call.arguments)
        relative, absolute = locate(path, call.cwd) if path is not None else (None, None)
        located, lead = (relative, "/") if relative is not None else (absolute, "//")
        if located:
            choices.append(f"{tool}({lead}{_escape_glob(located)})")
            directory, _, name = located.rpartition("/")
            base = f"{lead}{_escape_glob(directory)}/" if directory else lead
            if "." in name.lstrip("."):
                choices.append(f"{tool}({base}*.{_escape_glob(name.rsplit('.', 1)[1])})")
            parts = directory.split("/") if directory else []
            for depth in range(len(parts), 0, -1):
                choices.append(f"{tool}({lead}{_escape_glob('/'.join(parts[:depth]))}/**)")
            if lead == "/":
                choices.append(f"{tool}(**)")
    elif tool in NETWORK_TOOLS:
        host = plain_host(_fetched_url(call) or "")
        labels = host.split(".") if host else []
        choices += [f"{tool}(domain:{'.'.join(labels[i:])})" for i in range(max(len(labels) - 1, 0))]
    else:
        parts_mcp = mcp_parts(tool)
        if parts_mcp is not None:
            choices += [tool, f"mcp__{parts_mcp[0]}__*"]
    if tool not in choices:
        choices.append(tool)
    valid: list[str] = []
    for candidate in choices:
        try:
            if parse_rule_pattern(candidate).matches(call) and candidate not in valid:
                valid.append(candidate)
        except RuleError:
            continue
    return valid
