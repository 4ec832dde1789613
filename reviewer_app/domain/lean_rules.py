"""The persistent rules' verdict on a plain shell command, without the rules engine, risk module or shell parser.

Why: with rules in force every hook call used to load the rules engine, the risk module and bashlex (~60 ms in a
storm of hook processes) even when an exact rule for the very command settles it. This module answers the common
case with the standard library: a shell call whose command is *plain* (:mod:`reviewer_app.domain.plain_shell`:
one simple command whose words are its fields) against ``Bash``, ``Bash(exact command)`` and ``Bash(prefix:*)``
rules with plain words. It decides exactly as :func:`reviewer_app.domain.rules.evaluate` would (same precedence:
deny > ask > allow, an exact rule before a wildcard one, the older first) and says :data:`UNSURE` whenever it cannot
be certain, so the caller asks the engine:

- a command or rule that is not plain, a rule it cannot read (a workspace scope, an unknown form), a call that sets
  a context flag (``dangerouslyDisableSandbox``…);
- an exact allow rule for a program the shell-effects module knows something about (``plain_shell.SPECIAL_PROGRAMS``:
  wrappers, interpreters, ``find``, ``git`` beyond its plain subcommands…), whose effect the parser must judge;
- a deny or ask rule whose program the command mentions, unless the command's only reading is its argv
  (``plain_shell.only_reading``: wrappers and global options are the engine's to see through);
- a call only a wildcard (bare tool or prefix) allow would settle: the risk module decides whether it may.

A property test holds :func:`rules_verdict` to the engine over generated commands and rules
(``tests/domain/test_lean_rules.py``): never a verdict the engine would not give, never a different rule.

Standard library only, no dataclasses or ``typing`` at run time.

Public API: ``rules_verdict(tool_name, arguments, rows, *, agent, session_id) -> (effect, rule_id, message) | None
| UNSURE`` (``rows``: ``lean_settlement.RULE_COLUMNS`` tuples in the store's order); ``rule_settlement(effect,
rule_id, pattern, note) -> (decided_by, message)``.
"""

from __future__ import annotations

from reviewer_app.domain.lean_settlement import UNSURE
from reviewer_app.domain.plain_shell import effect_is_argv, only_reading, plain_command, program_name
from reviewer_app.domain.tool_args import command_of, flags_in, is_shell_tool

TYPE_CHECKING = False  # no ``typing`` at run time (see the module docstring)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

_EFFECTS = ("allow", "ask", "deny")
_VERBS = {"allow": "allowed", "deny": "denied", "ask": "asked"}


def rule_settlement(effect: str, rule_id: str, pattern: str, note: str) -> tuple[str, str]:
    """Who the record names and the reason given when a rule decides a call (``Settlement.by_rule``'s words)."""
    text = f"{_VERBS[effect]} by rule {rule_id}: {pattern}"
    if note:
        text += f" ({note})"
    return f"rule:{rule_id}", text


def rules_verdict(
    tool_name: str, arguments: Any, rows: Iterable[tuple[Any, ...]], *, agent: str | None, session_id: str | None
) -> tuple[str, str, str] | str | None:
    """The rules' verdict on the call as ``(effect, rule_id, message)``, None when certainly no rule applies, or
    :data:`UNSURE` (see the module docstring). ``rows``: the rules in force that may concern the tool."""
    if not is_shell_tool(tool_name) or flags_in(arguments):
        return UNSURE
    command = command_of(tool_name, arguments)
    words = plain_command(command) if command is not None else None
    if command is None or words is None:
        return UNSURE
    best: dict[str, tuple[bool, str, str]] = {}  # effect -> (exact, rule id, message)
    wildcard_allow = False
    for row in rows:
        rule = _read_rule(row, tool_name, agent, session_id)
        if rule is None:
            continue
        if rule == UNSURE:
            return UNSURE
        effect, kind, rule_words, rule_id, message = rule
        matched = _matches(effect, kind, rule_words, words, command)
        if matched == UNSURE:
            return UNSURE
        if not matched:
            continue
        exact = kind == "exact"
        if effect == "allow" and not exact:
            wildcard_allow = True
            continue
        current = best.get(effect)
        if current is None or (exact and not current[0]):
            best[effect] = (exact, rule_id, message)
    for effect in ("deny", "ask", "allow"):
        if effect in best:
            _, rule_id, message = best[effect]
            return effect, rule_id, message
    return UNSURE if wildcard_allow else None  # a wildcard never settles a high-risk call: the risk module decides


def _read_rule(row: tuple[Any, ...], tool_name: str, agent: str | None, session_id: str | None) -> Any:
    """``(effect, kind, words, id, message)`` of a rule in scope for the call, None when out of its scope,
    :data:`UNSURE` for anything not read exactly as ``rule_outcome.rule_from_row`` and ``Rule`` read it."""
    rule_id, effect, pattern, scope, expires_at, note, _ = row
    if not isinstance(rule_id, str) or not rule_id or effect not in _EFFECTS or not isinstance(pattern, str):
        return UNSURE
    if note is not None and not isinstance(note, str):
        return UNSURE
    if expires_at is not None and (isinstance(expires_at, bool) or not isinstance(expires_at, int | float)):
        return UNSURE  # the query compared it; the engine compares it again, as a number
    applies = _scope_applies(scope, agent, session_id)
    if applies is not True:
        return None if applies is False else UNSURE
    read = _read_pattern(pattern.strip(), tool_name)
    if isinstance(read, str):
        return UNSURE
    kind, words = read
    _, message = rule_settlement(effect, rule_id, pattern.strip(), note or "")
    return effect, kind, words, rule_id, message


def _scope_applies(scope: Any, agent: str | None, session_id: str | None) -> bool | str:
    """``rules._scope_applies`` of ``parse_scope(scope)`` for the global, agent and session scopes; :data:`UNSURE`
    for a workspace scope (paths are normalised by the engine) or one the engine would refuse."""
    if not isinstance(scope, str):
        return UNSURE
    text = scope.strip()
    if text == "global":
        return True
    kind, separator, value = text.partition(":")
    value = value.strip()
    if not separator or kind not in ("agent", "session") or not value:
        return UNSURE
    return (agent if kind == "agent" else session_id) == value


def _read_pattern(text: str, tool_name: str) -> tuple[str, tuple[str, ...]] | str:
    """``("tool", ())``, ``("exact", words)`` or ``("prefix", words)`` as ``parse_rule_pattern`` reads a shell
    tool's pattern with plain words; :data:`UNSURE` otherwise."""
    if "(" not in text:
        return ("tool", ()) if text == tool_name else UNSURE
    head, _, rest = text.partition("(")
    if head != tool_name or not text.endswith(")"):
        return UNSURE
    specifier = rest[:-1].rstrip()
    kind = "prefix" if specifier.endswith(":*") else "exact"
    words = plain_command(specifier[:-2] if kind == "prefix" else specifier)
    return UNSURE if words is None else (kind, tuple(words))


def _matches(effect: str, kind: str, rule_words: tuple[str, ...], words: list[str], command: str) -> bool | str:
    """``RulePattern.matches`` for a plain command (``restrictive`` for deny and ask), or :data:`UNSURE`."""
    if kind == "tool":
        return True
    argv = tuple(words)
    covered = argv[: len(rule_words)] == rule_words if kind == "prefix" else argv == rule_words
    if effect == "allow":
        # An exact allow settles only a command whose whole effect is in its text (``exact_settles``): for a
        # program the shell-effects module judges, that is the parser's to say.
        return UNSURE if covered and kind == "exact" and not effect_is_argv(words) else covered
    if covered:
        return True
    # Deny and ask also catch every reading of the command (``shell_effects.readings``): a command that never
    # mentions the rule's program has none that could match.
    target = (program_name(rule_words[0]), *rule_words[1:])
    if target[0] and target[0] not in command:
        return False
    if not only_reading(words):
        return UNSURE  # a wrapper's inner command, global options the engine drops (``git -C . push``), effects
    reading = (program_name(argv[0]), *argv[1:])  # an ordinary program's only reading
    return reading[: len(target)] == target if kind == "prefix" else reading == target


__all__ = ["UNSURE", "rule_settlement", "rules_verdict"]
