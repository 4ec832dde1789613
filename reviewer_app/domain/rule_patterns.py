"""Rule patterns: parsing ``Tool(specifier)`` and matching one against a call (commands, paths, domains).

Why: a pattern must never match more than the operator wrote; this is where each kind of specifier is read and
judged (:mod:`reviewer_app.domain.rules` puts patterns in rules and decides between them).

Pattern grammar (``parse_rule_pattern``):

- ``Tool``: every call of that tool (``Bash``, ``run_shell``, ``Write``, ``WebFetch``, ``mcp__github__create_issue``)
- ``mcp__server`` or ``mcp__server__*``: every tool of one MCP server
- shell tools (``toolcall.SHELL_TOOLS``): ``Bash(git status)`` is that exact command (parsed: ``'git' status``
  matches, ``git status; rm x`` does not); ``Bash(npm run test:*)`` is every command whose EVERY simple command
  starts with ``npm run test``, with no substitution, pipe into an interpreter, ``&``, subshell or
  unnamed redirection (``reviewer_app.domain.shell``)
- file tools (``toolcall.FILE_TOOLS``): a gitignore-style glob (``pathspec``) relative to the call's workspace
  (``Write(src/**)``, ``Edit(docs/*.md)``, ``Read(*.py)``); ``//abs/path/**`` for absolute paths. A relative glob
  never matches a path outside the workspace (``../x``, an absolute path elsewhere, ``~``). An allow matches only
  when the path as written AND its real path (symlinks followed on the actual tree) match; an unresolvable path
  never does. Deny and ask match either, ``~`` expanded
- ``WebFetch(domain:example.com)``: that host and its subdomains, as WHATWG parses the URL (``domain.urls``); an
  allow matches only a plain URL (no backslash, userinfo, odd port, IP literal, punycode…)

Public API: ``parse_rule_pattern(text) -> RulePattern`` (raises ``RuleError`` with a clear message);
``RulePattern.matches(call, *, restrictive=False, facts=None)``, ``concerns(tool_name)``, ``exact``;
``CallFacts(call)``: what every rule asks of one call, read once; ``locate(path, cwd)``: a call's path as
(workspace-relative, absolute).
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from reviewer_app.domain.sensitive import real_path
from reviewer_app.domain.shell import parse_command
from reviewer_app.domain.shell_effects import command_effects, mentions, readings
from reviewer_app.domain.shell_scopes import CommandScope
from reviewer_app.domain.toolcall import (
    FILE_TOOLS,
    NETWORK_TOOLS,
    ToolCall,
    command_of,
    context_flags,
    is_shell_tool,
    mcp_parts,
    path_of,
)
from reviewer_app.domain.urls import url_in_domain

PatternKind = Literal["tool", "mcp_server", "command_exact", "command_prefix", "path", "domain"]

_TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
_GLOB_SPECIALS = re.compile(r"[*?\[\]\\]")


class CallFacts:
    """What every rule asks of one call, read once per evaluation: its shell command, whether it sets a context
    flag, and the real paths (symlinks followed) resolved so far."""

    __slots__ = ("_real", "command", "flagged")

    def __init__(self, call: ToolCall) -> None:
        self.command = command_of(call.tool_name, call.arguments)
        self.flagged = bool(context_flags(call))
        self._real: dict[str, str | None] = {}

    def real(self, path: str) -> str | None:
        if path not in self._real:
            self._real[path] = real_path(path)
        return self._real[path]


class RuleError(ValueError):
    """A rule, pattern, scope, duration or policy file that cannot be used, with what is wrong."""


@dataclass(frozen=True, slots=True)
class RulePattern:
    """A parsed pattern; ``exact`` is True when it can match only one command or one literal path."""

    text: str
    tool: str
    kind: PatternKind
    command: CommandScope | None = None
    glob: str | None = None
    absolute: bool = False
    domain: str | None = None
    _spec: Any = field(default=None, compare=False, repr=False)
    _folded_spec: Any = field(default=None, compare=False, repr=False)

    @property
    def exact(self) -> bool:
        """True for an exact command, or a literal anchored path (``Write(/src/app.py)``, ``Write(//etc/hosts)``)."""
        if self.kind == "command_exact":
            return True
        if self.kind != "path" or self.glob is None or _GLOB_SPECIALS.search(self.glob) or self.glob.endswith("/"):
            return False
        return self.absolute or "/" in self.glob

    def concerns(self, tool_name: str) -> bool:
        """The cheap first test: could this pattern match a call of ``tool_name`` at all?"""
        if self.kind == "mcp_server":
            parts = mcp_parts(tool_name)
            return parts is not None and parts[0] == self.tool
        return tool_name == self.tool

    def matches(self, call: ToolCall, *, restrictive: bool = False, facts: CallFacts | None = None) -> bool:
        """Whether the pattern matches the call.

        ``restrictive`` is for deny and ask rules, which must catch a command wherever it hides: a shell
        pattern then also matches when ANY command the call may run (after ``&&``, inside ``$(…)``, behind
        ``sudo``/``xargs``, in ``sh -c``…) matches it, an unparseable command that mentions its program, and
        path patterns ignore case (``.ENV`` on a case-insensitive file system). ``facts``: what the caller has
        already read of the call (``evaluate`` reads it once for all rules).
        """
        facts = facts or CallFacts(call)
        if not self.concerns(call.tool_name):
            return False
        if self.kind in ("tool", "mcp_server"):
            return True
        if self.kind in ("command_exact", "command_prefix"):
            command = facts.command
            if command is None or self.command is None:
                return False
            if restrictive:
                return self.command.covers(command) or self._hides_in(command)
            # An allow rule settles only what the operator can read off it (see shell_effects).
            return (self.kind != "command_exact" or self.command.exact_settles) and self.command.covers(command)
        if self.kind == "path":
            return self._path_matches(call, facts, fold_case=restrictive)
        if self.kind == "domain":
            url = call.arguments.get("url") if isinstance(call.arguments, dict) else None
            if not isinstance(url, str) or self.domain is None:
                return False
            return url_in_domain(url, self.domain, plain_only=not restrictive)
        return False

    def _hides_in(self, command: str) -> bool:
        """Does any command that ``command`` may run match this (deny/ask) pattern?"""
        assert self.command is not None
        if self.kind == "command_exact" and len(parse_command(self.command.text).commands) != 1:
            return False  # an exact compound matches only as a whole
        words = self.command.words
        if not words:
            return False
        target = (posixpath.basename(words[0]), *words[1:])
        parsed = parse_command(command)
        # When the engine cannot see everything this runs, a mention of the program anywhere denies or asks.
        if (not parsed.understood or not command_effects(parsed).plain) and mentions(parsed.source, target[0]):
            return True
        prefix = self.kind == "command_prefix"
        return any(form == target or (prefix and form[: len(target)] == target) for form in readings(parsed.source))

    def _path_matches(self, call: ToolCall, facts: CallFacts, *, fold_case: bool = False) -> bool:
        """An allow (``fold_case`` False) matches only when the path as written AND the path the tool will really
        open (symlinks followed, ``realpath`` on the actual tree) both match; a path that cannot be resolved, or
        starts with ``~``, never does. A deny or ask (``fold_case``) matches when either does, ``~`` expanded."""
        path = path_of(call.tool_name, call.arguments)
        if path is None and call.tool_name in _SEARCH_TOOLS and call.cwd:
            path = call.cwd  # Glob and Grep without a path search the workspace
        if path is None or self._spec is None or self.glob is None:
            return False
        if fold_case:
            if path.startswith("~"):
                path = os.path.expanduser(path)
            return any(self._target_matches(target, fold_case=True) for target in _targets(path, call.cwd, self, facts))
        if path.startswith("~") or _escaping_search(call):
            return False
        relative, absolute = locate(path, call.cwd)
        if self.glob == "**" and absolute is not None and call.cwd and _is_root(absolute, call.cwd):
            return facts.real("/" + absolute) == facts.real(call.cwd)  # `**` covers a search of the workspace
        lexical = absolute if self.absolute else relative
        if lexical is None or not self._target_matches(lexical):
            return False
        # The host may normalise `..` before opening (Node's path.resolve) or leave it to the kernel, which
        # follows `src/link/..` through the link: both real paths must match.
        for candidate in (absolute, _joined(path, call.cwd)):
            real = _real_target(candidate, call.cwd, facts, absolute_pattern=self.absolute)
            if real is None or not self._target_matches(real):
                return False
        return True

    def _target_matches(self, target: str, *, fold_case: bool = False) -> bool:
        assert self.glob is not None
        if self.exact:  # a literal path matches itself only (a gitignore pattern would also match beneath it)
            literal = posixpath.normpath(self.glob.lstrip("/"))
            return target.casefold() == literal.casefold() if fold_case else target == literal
        if fold_case:
            return bool(self._folded_spec.match_file(target.casefold()))
        return bool(self._spec.match_file(target))


_SEARCH_TOOLS = frozenset({"Glob", "Grep"})


def _is_root(absolute: str, cwd: str) -> bool:
    return "/" + absolute == posixpath.normpath(cwd.replace("\\", "/"))


def _escaping_search(call: ToolCall) -> bool:
    """A Glob whose pattern (or a Grep whose glob) leaves its directory: absolute, ``~`` or ``..``."""
    if call.tool_name not in _SEARCH_TOOLS or not isinstance(call.arguments, dict):
        return False
    for key in ("pattern", "glob") if call.tool_name == "Glob" else ("glob",):
        value = call.arguments.get(key)
        if isinstance(value, str) and (
            value.startswith(("/", "~", "\\")) or ".." in value.replace("\\", "/").split("/")
        ):
            return True
    return False


def _joined(path: str, cwd: str | None) -> str | None:
    """The path joined to the workspace as the kernel sees it (``..`` not collapsed), without its leading '/'."""
    path = path.replace("\\", "/")
    if not path.startswith("/"):
        if not cwd:
            return None
        path = cwd.replace("\\", "/").rstrip("/") + "/" + path
    return path.lstrip("/")


def _real_target(absolute: str | None, cwd: str | None, facts: CallFacts, *, absolute_pattern: bool) -> str | None:
    """The real path (symlinks followed) in the form a pattern matches: without its leading '/' for an absolute
    pattern, else relative to the real workspace (None when outside it or unresolvable)."""
    if absolute is None:
        return None
    real = facts.real("/" + absolute)
    if real is None:
        return None
    if absolute_pattern:
        return real.lstrip("/")
    root = facts.real(posixpath.normpath(cwd.replace("\\", "/"))) if cwd else None
    if root is None or not real.startswith(root.rstrip("/") + "/"):
        return None
    return real[len(root.rstrip("/")) + 1 :]


def _targets(path: str, cwd: str | None, pattern: RulePattern, facts: CallFacts) -> list[str]:
    """Every form of ``path`` a deny or ask rule should catch: as written and with symlinks followed."""
    relative, absolute = locate(path, cwd)
    found = [absolute if pattern.absolute else relative]
    for candidate in (absolute, _joined(path, cwd)):
        found.append(_real_target(candidate, cwd, facts, absolute_pattern=pattern.absolute))
    return [target for target in found if target is not None]


def locate(path: str, cwd: str | None) -> tuple[str | None, str | None]:
    """A call's path as (workspace-relative path, absolute path without its leading '/').

    The relative form is None when the path is outside the workspace (``../x``, an absolute path elsewhere),
    so a relative glob never matches it; the absolute form is None when it cannot be known (a relative path
    and no workspace). ``~`` (the home directory is not known here), empty paths and NUL bytes give neither.
    """
    path = path.replace("\\", "/")
    if not path or "\x00" in path or path.startswith("~"):
        return None, None
    if re.match(r"^[A-Za-z]:/", path):
        path = "/" + path
    root = posixpath.normpath(cwd.replace("\\", "/")) if cwd else None
    if path.startswith("/"):
        absolute = posixpath.normpath(path)
    elif root is not None and root.startswith("/"):
        absolute = posixpath.normpath(posixpath.join(root, path))
    else:
        absolute = None
    if absolute is not None and root is not None:
        inside = root == "/" or absolute.startswith(root.rstrip("/") + "/")
        relative = absolute[len(root.rstrip("/")) + 1 :] if inside else None
    elif not path.startswith("/"):
        normal = posixpath.normpath(path)
        relative = None if normal == ".." or normal.startswith("../") else normal
    else:
        relative = None
    if relative in (".", ""):
        relative = None
    return relative, absolute.lstrip("/") if absolute is not None else None


def parse_rule_pattern(text: str) -> RulePattern:
    """Parse ``Tool``, ``Tool(specifier)``, ``mcp__server__tool`` or ``mcp__server__*``; RuleError if invalid."""
    if not isinstance(text, str):
        raise RuleError("a rule pattern must be text")
    text = text.strip()
    if not text:
        raise RuleError("empty rule pattern")
    if "(" not in text:
        return _bare_pattern(text)
    if not text.endswith(")"):
        raise RuleError(f"{text!r}: a pattern with a specifier must end with ')', as in Bash(npm run test:*)")
    tool, _, rest = text.partition("(")
    specifier = rest[:-1]
    if not _TOOL_NAME.match(tool):
        raise RuleError(f"{text!r}: {tool!r} is not a tool name")
    if not specifier.strip():
        raise RuleError(f"{text!r}: empty specifier; write {tool} alone to match every {tool} call")
    if is_shell_tool(tool):
        return _command_pattern(text, tool, specifier)
    if tool in FILE_TOOLS:
        return _path_pattern(text, tool, specifier.strip())
    if tool in NETWORK_TOOLS:
        if not specifier.startswith("domain:") or not specifier[len("domain:") :].strip():
            raise RuleError(f"{text!r}: {tool} takes domain:HOST, as in {tool}(domain:example.com)")
        domain = specifier[len("domain:") :].strip().lower().rstrip(".")
        return RulePattern(text, tool, "domain", domain=domain)
    raise RuleError(
        f"{text!r}: {tool} takes no specifier; shell tools take a command, file tools a path glob "
        f"(write {tool} alone to match every call)"
    )


def _bare_pattern(text: str) -> RulePattern:
    if text.startswith("mcp__"):
        body = text[len("mcp__") :]
        server, separator, tool = body.partition("__")
        if not server or not _TOOL_NAME.match(server) or "*" in server:
            raise RuleError(f"{text!r}: expected mcp__server, mcp__server__* or mcp__server__tool")
        if not separator or tool == "*":
            return RulePattern(text, server, "mcp_server")
        if not tool or not _TOOL_NAME.match(tool):
            raise RuleError(f"{text!r}: expected mcp__server__tool or mcp__server__* (no other wildcards)")
        return RulePattern(text, text, "tool")
    if not _TOOL_NAME.match(text):
        raise RuleError(f"{text!r}: not a tool name; patterns look like Bash, Bash(git status), Write(src/**)")
    return RulePattern(text, text, "tool")


def _command_pattern(text: str, tool: str, specifier: str) -> RulePattern:
    if specifier.rstrip().endswith(":*"):
        prefix = specifier.rstrip()[:-2]
        if not prefix.strip():
            raise RuleError(f"{text!r}: empty command prefix; write {tool} alone to match every command")
        try:
            scope = CommandScope.prefix_from_text(prefix)
        except ValueError as exc:
            raise RuleError(f"{text!r}: {exc}") from None
        return RulePattern(text, tool, "command_prefix", command=scope)
    if specifier.strip() == "*":
        raise RuleError(f"{text!r}: write {tool} alone to match every command")
    parsed = parse_command(specifier)
    if not parsed.waivable or not parsed.commands:
        reasons = "; ".join(parsed.blocking_reasons()) or "nothing to run"
        raise RuleError(f"{text!r}: this command can never be matched by a rule ({reasons})")
    return RulePattern(text, tool, "command_exact", command=CommandScope.exact(specifier))


def _path_pattern(text: str, tool: str, glob: str) -> RulePattern:
    if glob.startswith("!"):
        raise RuleError(f"{text!r}: negated globs are not supported; write a deny or ask rule instead")
    if glob.startswith("~"):
        raise RuleError(f"{text!r}: '~' is not supported; write //absolute/path")
    absolute = glob.startswith("//")
    body = glob[2:] if absolute else glob
    if not body or (absolute and body.startswith("/")):
        raise RuleError(f"{text!r}: expected a path glob such as src/** or //etc/hosts")
    segments = body.strip("/").split("/")
    if ".." in segments:
        raise RuleError(f"{text!r}: '..' is not allowed in a path glob")
    # Anchor the glob: `src/*.py` at the workspace root, `//etc/**` at the file-system root. A glob with no
    # slash (`*.md`) matches at any depth, as in .gitignore.
    anchored = ("/" + body.lstrip("/")) if absolute or "/" in body.rstrip("/") else body
    import pathspec  # imported on first use (see risk._sensitive_spec)

    try:
        spec = pathspec.GitIgnoreSpec.from_lines([anchored])
        folded = pathspec.GitIgnoreSpec.from_lines([anchored.casefold()])
    except Exception as exc:  # pathspec raises GitWildMatchPatternError and others
        raise RuleError(f"{text!r}: invalid path glob ({exc})") from None
    return RulePattern(text, tool, "path", glob=glob, absolute=absolute, _spec=spec, _folded_spec=folded)
