"""Persistent rules (Claude Code's permission-rule syntax): the rule, its scope and expiry, and the one engine.

Why: operators need rules that settle the obvious calls without ever waiving more than they wrote. The same
engine serves the runtime's gate, the Claude Code and Codex hooks, the MCP proxy and the framework adapters.

Patterns and how they match a call: :mod:`reviewer_app.domain.rule_patterns`; the patterns offered for a call:
:mod:`reviewer_app.domain.rule_choices`; the shared policy file: :mod:`reviewer_app.domain.rules_file`.

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

- ``Rule(effect, pattern, scope="global", expires_at=None, note="", id=new_rule_id(), created_at=None)``
  with ``to_dict()`` / ``Rule.from_dict(data)``; ``Rule.create(effect, pattern, scope=, expires=, note=, now=)``
- ``ToolCall`` (re-exported from ``toolcall``), ``Verdict(effect, rule, risk)``,
  ``Verdict.decided_by`` is ``"rule:<id>"``
- ``evaluate(rules, call, now, *, risk=None) -> Verdict | None``; ``overridden_by_risk(rules, call, now)``: the
  allow rules set aside because the call is high risk (for the window); ``prevailing_verdict``,
  ``wildcard_may_settle``
- ``parse_duration(text) -> int`` (seconds), ``parse_scope(text) -> str``
- ``parse_rule_pattern``, ``RulePattern``, ``RuleError`` (re-exported from ``rule_patterns``)
"""

from __future__ import annotations

import posixpath
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from reviewer_app.domain.risk import Risk, assess
from reviewer_app.domain.rule_patterns import CallFacts, RuleError, RulePattern, parse_rule_pattern
from reviewer_app.domain.shell_effects import command_effects
from reviewer_app.domain.toolcall import ToolCall, context_flags

__all__ = [
    "EFFECTS",
    "Effect",
    "Rule",
    "RuleError",
    "RulePattern",
    "ToolCall",
    "Verdict",
    "evaluate",
    "new_rule_id",
    "overridden_by_risk",
    "parse_duration",
    "parse_rule_pattern",
    "parse_scope",
    "prevailing_verdict",
    "wildcard_may_settle",
]

Effect = Literal["allow", "ask", "deny"]
EFFECTS: tuple[Effect, ...] = ("deny", "ask", "allow")  # in order of precedence

_DURATION = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
_DURATION_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


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

    def applies_to(self, call: ToolCall, now: float, *, facts: CallFacts | None = None) -> bool:
        """In force, in scope, and matching (deny and ask rules match restrictively, see RulePattern.matches)."""
        if not self.parsed.concerns(call.tool_name) or self.expired(now) or not _scope_applies(self.scope, call):
            return False
        facts = facts or CallFacts(call)
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
    facts = CallFacts(call)  # read once for every rule
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
