"""Persistent rules in Claude Code's permission-rule syntax, and the one engine that evaluates them.

Why: operators need rules that settle the obvious calls without ever waiving more than they wrote. The same
engine serves the runtime's gate, the Claude Code and Codex hooks, the MCP proxy and the framework adapters.

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

No allow rule covers a call that sets a context flag (``toolcall.context_flags``: ``dangerouslyDisableSandbox``,
``run_in_background``): no pattern names them. See ``docs/security.md``.

Effects ``allow`` / ``ask`` / ``deny``, precedence deny > ask > allow. Allow rules cover a call only when
EVERY command in it is covered; deny and ask rules catch a command wherever it hides (after ``&&``, in
``$(…)``, behind ``sudo``/``xargs``/``env``, in ``find -exec`` or ``sh -c``; paths case-insensitively).
Scopes ``global``, ``agent:NAME``, ``session:ID``, ``workspace:PATH``. Optional expiry
(``parse_duration("1h"|"2d"|"30s"|"15m"|"1w")``), a note and an id. A HIGH-risk call
(``reviewer_app.domain.risk``) is never allowed by a wildcard, prefix or glob rule, only by an exact-match
rule (an exact command or a literal path); deny and ask rules apply whatever the risk.

Shell semantics (issue 23, ``reviewer_app.domain.shell_effects``): a command that does more than its text shows
(a wrapper, a variable as the program, ``find -exec``, ``sed e``, ``git -c``…) is high risk; an exact allow rule
settles it only when it is fully literal and reads nothing from stdin, files or a terminal, and ``Rule`` refuses
an exact allow rule that never could. Deny and ask rules compare with every reading of each argv (wrappers
peeled, global options dropped: ``git -C . push`` is ``git push``) and, when the engine cannot see everything a
command runs, with a mention of their program anywhere in it.

Public API:

- ``parse_rule_pattern(text) -> RulePattern`` (raises ``RuleError`` with a clear message)
- ``Rule(effect, pattern, scope="global", expires_at=None, note="", id=new_rule_id(), created_at=None)``
  with ``to_dict()`` / ``Rule.from_dict(data)``; ``Rule.create(effect, pattern, scope=, expires=, note=, now=)``
- ``ToolCall`` (re-exported from ``toolcall``), ``Verdict(effect, rule, risk)``,
  ``Verdict.decided_by`` is ``"rule:<id>"``
- ``evaluate(rules, call, now, *, risk=None) -> Verdict | None``; ``overridden_by_risk(rules, call, now)``: the
  allow rules set aside because the call is high risk (for the window)
- ``narrowest_pattern_for(call) -> str | None``: the exact-match pattern for "Approve and make a rule…"
- ``pattern_choices(call) -> list[str]``: patterns covering the call, narrowest first (the widening offered)
- ``parse_duration(text) -> int`` (seconds), ``parse_scope(text) -> str``
- ``rules_to_toml(rules) -> str``, ``rules_from_toml(text) -> list[Rule]`` (all or nothing)
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import tomllib
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from reviewer_app.domain.risk import Risk, assess
from reviewer_app.domain.sensitive import real_path
from reviewer_app.domain.shell import CommandScope, parse_command, scope_choices
from reviewer_app.domain.shell_effects import command_effects, mentions, readings
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
from reviewer_app.domain.urls import plain_host, url_in_domain

__all__ = [
    "EFFECTS",
    "Effect",
    "Rule",
    "RuleError",
    "RulePattern",
    "ToolCall",
    "Verdict",
    "evaluate",
    "narrowest_pattern_for",
    "new_rule_id",
    "overridden_by_risk",
    "parse_duration",
    "parse_rule_pattern",
    "parse_scope",
    "pattern_choices",
    "rules_from_toml",
    "rules_to_toml",
    "wildcard_may_settle",
]

Effect = Literal["allow", "ask", "deny"]
EFFECTS: tuple[Effect, ...] = ("deny", "ask", "allow")  # in order of precedence
PatternKind = Literal["tool", "mcp_server", "command_exact", "command_prefix", "path", "domain"]

_TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
_DURATION = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
_DURATION_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_GLOB_SPECIALS = re.compile(r"[*?\[\]\\]")


class _Facts:
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

    def matches(self, call: ToolCall, *, restrictive: bool = False, facts: _Facts | None = None) -> bool:
        """Whether the pattern matches the call.

        ``restrictive`` is for deny and ask rules, which must catch a command wherever it hides: a shell
        pattern then also matches when ANY command the call may run (after ``&&``, inside ``$(…)``, behind
        ``sudo``/``xargs``, in ``sh -c``…) matches it, an unparseable command that mentions its program, and
        path patterns ignore case (``.ENV`` on a case-insensitive file system). ``facts``: what the caller has
        already read of the call (``evaluate`` reads it once for all rules).
        """
        facts = facts or _Facts(call)
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

    def _path_matches(self, call: ToolCall, facts: _Facts, *, fold_case: bool = False) -> bool:
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
        relative, absolute = _locate(path, call.cwd)
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


def _real_target(absolute: str | None, cwd: str | None, facts: _Facts, *, absolute_pattern: bool) -> str | None:
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


def _targets(path: str, cwd: str | None, pattern: RulePattern, facts: _Facts) -> list[str]:
    """Every form of ``path`` a deny or ask rule should catch: as written and with symlinks followed."""
    relative, absolute = _locate(path, cwd)
    found = [absolute if pattern.absolute else relative]
    for candidate in (absolute, _joined(path, cwd)):
        found.append(_real_target(candidate, cwd, facts, absolute_pattern=pattern.absolute))
    return [target for target in found if target is not None]


def _locate(path: str, cwd: str | None) -> tuple[str | None, str | None]:
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


# -- scopes, durations ---------------------------------------------------------------------------------------


def parse_scope(text: str) -> str:
    """Normalise ``global``, ``agent:NAME``, ``session:ID`` or ``workspace:PATH``; RuleError if invalid."""
    text = (text or "").strip()
    if text == "global":
        return text
    kind, separator, value = text.partition(":")
    value = value.strip()
    if not separator or kind not in ("agent", "session", "workspace") or not value:
        raise RuleError(f"scope {text!r}: expected global, agent:NAME, session:ID or workspace:PATH")
    if kind == "workspace":
        path = value.replace("\\", "/")
        if not path.startswith("/") and not re.match(r"^[A-Za-z]:/", path):
            raise RuleError(f"scope {text!r}: the workspace path must be absolute")
        value = posixpath.normpath(path)
    return f"{kind}:{value}"


def parse_duration(text: str) -> int:
    """``30s``, ``15m``, ``1h``, ``2d``, ``1w`` → seconds; RuleError otherwise."""
    match = _DURATION.match(text or "")
    if not match or int(match.group(1)) <= 0:
        raise RuleError(f"duration {text!r}: expected a positive number followed by s, m, h, d or w (e.g. 1h)")
    return int(match.group(1)) * _DURATION_SECONDS[match.group(2)]


def _scope_applies(scope: str, call: ToolCall) -> bool:
    if scope == "global":
        return True
    kind, _, value = scope.partition(":")
    if kind == "agent":
        return call.agent == value
    if kind == "session":
        return call.session_id == value
    if kind == "workspace" and call.cwd:
        cwd = posixpath.normpath(call.cwd.replace("\\", "/"))
        return cwd == value or cwd.startswith(value.rstrip("/") + "/")
    return False


# -- rules ---------------------------------------------------------------------------------------------------


def new_rule_id() -> str:
    return f"rule_{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True, slots=True)
class Rule:
    """One persistent rule. ``expires_at`` and ``created_at`` are Unix seconds."""

    effect: Effect
    pattern: str
    scope: str = "global"
    expires_at: float | None = None
    note: str = ""
    id: str = field(default_factory=new_rule_id)
    created_at: float | None = None
    parsed: RulePattern = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.effect not in EFFECTS:
            raise RuleError(f"effect {self.effect!r}: expected allow, ask or deny")
        if not isinstance(self.id, str) or not self.id:
            raise RuleError("a rule needs an id")
        object.__setattr__(self, "scope", parse_scope(self.scope))
        object.__setattr__(self, "parsed", parse_rule_pattern(self.pattern))
        object.__setattr__(self, "pattern", self.parsed.text)

    def refusal(self) -> str | None:
        """Why this rule could never settle anything, or None: an exact allow rule for a command that is asked
        every time. New rules (``create``, ``from_dict``, the window's editor) are refused with it; a stored one
        still loads, is listed and can be revoked, and simply never matches (``RulePattern.matches``)."""
        scope = self.parsed.command
        if self.effect == "allow" and scope is not None and scope.kind == "exact" and not scope.exact_settles:
            reasons = "; ".join(command_effects(scope.text).hidden) or "its words are only known when it runs"
            return f"{self.pattern!r}: an allow rule cannot settle this command, it is asked every time ({reasons})"
        return None

    def checked(self) -> Rule:
        """This rule, or RuleError when it could never settle anything (see :meth:`refusal`)."""
        why = self.refusal()
        if why is not None:
            raise RuleError(why)
        return self

    @classmethod
    def create(
        cls,
        effect: str,
        pattern: str,
        *,
        scope: str = "global",
        expires: str | None = None,
        note: str = "",
        now: float,
    ) -> Rule:
        """A new rule as ``rules add`` makes it: ``expires`` is a duration such as ``1h``."""
        expires_at = now + parse_duration(expires) if expires else None
        return cls(effect, pattern, scope, expires_at, note, new_rule_id(), now).checked()  # type: ignore[arg-type]

    @staticmethod
    def may_allow(pattern: str) -> bool:
        """Whether ``allow pattern`` is a rule that can settle anything (see :meth:`refusal`)."""
        try:
            return Rule("allow", pattern).refusal() is None
        except RuleError:
            return False

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    def applies_to(self, call: ToolCall, now: float, *, facts: _Facts | None = None) -> bool:
        """In force, in scope, and matching (deny and ask rules match restrictively, see RulePattern.matches)."""
        if not self.parsed.concerns(call.tool_name) or self.expired(now) or not _scope_applies(self.scope, call):
            return False
        facts = facts or _Facts(call)
        if self.effect == "allow" and facts.flagged:  # no rule names dangerouslyDisableSandbox & co.
            return False
        return self.parsed.matches(call, restrictive=self.effect != "allow", facts=facts)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "effect": self.effect, "pattern": self.pattern, "scope": self.scope}
        if self.expires_at is not None:
            data["expires_at"] = self.expires_at
        if self.note:
            data["note"] = self.note
        if self.created_at is not None:
            data["created_at"] = self.created_at
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Rule:
        if not isinstance(data, dict):
            raise RuleError("a rule must be a table/object")
        unknown = set(data) - {"id", "effect", "pattern", "scope", "expires_at", "note", "created_at"}
        if unknown:
            raise RuleError(f"unknown rule key(s) {sorted(unknown)}")
        for key in ("effect", "pattern"):
            if not isinstance(data.get(key), str):
                raise RuleError(f"a rule needs a text {key!r}")
        expires_at = data.get("expires_at")
        created_at = data.get("created_at")
        for name, value in (("expires_at", expires_at), ("created_at", created_at)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise RuleError(f"{name} must be a number of Unix seconds")
        note = data.get("note", "")
        if not isinstance(note, str):
            raise RuleError("note must be text")
        rule_id = data.get("id") or new_rule_id()
        if not isinstance(rule_id, str):
            raise RuleError("id must be text")
        scope = data.get("scope", "global")
        if not isinstance(scope, str):
            raise RuleError("scope must be text")
        return cls(data["effect"], data["pattern"], scope, expires_at, note, rule_id, created_at).checked()

    def describe(self) -> str:
        text = f"{self.effect} {self.pattern}"
        if self.scope != "global":
            text += f" [{self.scope}]"
        return text


@dataclass(frozen=True, slots=True)
class Verdict:
    """The rule that decided a call and its effect (and the risk, when evaluation had to compute it)."""

    effect: Effect
    rule: Rule
    risk: Risk | None = None

    @property
    def decided_by(self) -> str:
        return f"rule:{self.rule.id}"


def evaluate(rules: Iterable[Rule], call: ToolCall, now: float, *, risk: Risk | None = None) -> Verdict | None:
    """The verdict of the rules for one call, or None when no rule applies (the call is asked as usual).

    deny beats ask beats allow; within an effect an exact-match rule beats a wildcard one, then the older
    rule wins (order given). A wildcard, prefix or glob allow never settles a high-risk call: the risk is
    computed here (without the secret scan) unless the caller passes it.
    """
    best: dict[str, Rule] = {}
    wildcard_allows: list[Rule] = []
    facts = _Facts(call)  # read once for every rule
    for rule in rules:
        if not rule.applies_to(call, now, facts=facts):
            continue
        if rule.effect == "allow" and not rule.parsed.exact:
            wildcard_allows.append(rule)
            continue
        current = best.get(rule.effect)
        if current is None or (rule.parsed.exact and not current.parsed.exact):
            best[rule.effect] = rule
    restrictive: tuple[Effect, ...] = ("deny", "ask")
    for effect in restrictive:
        if effect in best:
            return Verdict(effect, best[effect], risk)
    if "allow" in best:
        return Verdict("allow", best["allow"], risk)
    if not wildcard_allows:
        return None
    if risk is None:
        risk = assess(call, scan_secrets=False, resolve=facts.real)
    if risk.high:
        return None
    return Verdict("allow", wildcard_allows[0], risk)


def wildcard_may_settle(call: ToolCall, *, risk: Risk | None = None) -> bool:
    """Whether a wildcard allow (a bare tool, prefix or glob rule, ``--allow-tools``) may settle this call: not
    when it is high risk (a sensitive target, a destructive command) or sets a context flag no rule names."""
    if context_flags(call):
        return False
    return not (risk or assess(call, scan_secrets=False)).high


def prevailing_verdict(rule: Rule, in_force: Iterable[Rule], call: ToolCall, now: float) -> Verdict | None:
    """The whole policy's verdict on ``call`` when it is not ``rule``'s effect, else None.

    A new rule is judged with every rule in force (``in_force``; ``rule`` itself may be among them): a call another
    deny or ask rule covers is not settled by a new allow rule, and the preview says which rule keeps it.
    """
    whole = evaluate([*(other for other in in_force if other.id != rule.id), rule], call, now)
    return whole if whole is not None and whole.effect != rule.effect else None


def overridden_by_risk(
    rules: Iterable[Rule], call: ToolCall, now: float, *, risk: Risk | None = None
) -> tuple[Rule, ...]:
    """The allow rules that match but were set aside because the call is high risk (for the window)."""
    matching = [r for r in rules if r.effect == "allow" and not r.parsed.exact and r.applies_to(call, now)]
    if not matching:
        return ()
    risk = risk or assess(call, scan_secrets=False)
    return tuple(matching) if risk.high else ()


# -- narrowest pattern ---------------------------------------------------------------------------------------


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
        relative, absolute = _locate(path, call.cwd) if path is not None else (None, None)
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
        relative, absolute = _locate(path, call.cwd) if path is not None else (None, None)
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


# -- TOML ----------------------------------------------------------------------------------------------------


def _toml_string(value: str) -> str:
    # JSON string escapes (\" \\ \n \t \uXXXX) are valid TOML basic-string escapes; DEL must be escaped too.
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def rules_to_toml(rules: Iterable[Rule]) -> str:
    """A policy file teams can share: one ``[[rules]]`` table per rule."""
    lines = ["# Reviewer policy: effect = allow | ask | deny; precedence deny > ask > allow.", ""]
    for rule in rules:
        lines.append("[[rules]]")
        for key, value in rule.to_dict().items():
            rendered = _toml_string(value) if isinstance(value, str) else repr(value)
            lines.append(f"{key} = {rendered}")
        lines.append("")
    return "\n".join(lines)


def rules_from_toml(text: str) -> list[Rule]:
    """Read a policy file; RuleError naming the first bad rule (nothing is returned unless all are valid)."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RuleError(f"not a valid TOML policy file: {exc}") from None
    unknown = set(document) - {"rules"}
    if unknown:
        raise RuleError(f"unknown top-level key(s) {sorted(unknown)}; expected [[rules]] tables")
    raw_rules = document.get("rules", [])
    if not isinstance(raw_rules, list):
        raise RuleError("'rules' must be an array of tables ([[rules]])")
    rules: list[Rule] = []
    for index, raw in enumerate(raw_rules, start=1):
        try:
            rules.append(Rule.from_dict(raw))
        except RuleError as exc:
            raise RuleError(f"rule {index}: {exc}") from None
    ids = [rule.id for rule in rules]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise RuleError(f"duplicate rule id(s) {duplicates}")
    return rules
