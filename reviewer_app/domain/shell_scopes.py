"""The scopes a shell waiver grants: one exact command, or every command starting with some words.

Why: approve-for-session and exact rules must cover only what the operator saw (see
:mod:`reviewer_app.domain.shell` for how a command is read). Separate from the parser so that the hook's fast path,
which meets a stored exact scope for the identical command, never loads it: the parser (and bashlex) are imported
only when a command must actually be read.

Public API:

- ``CommandScope``: ``CommandScope.exact(command)``, ``CommandScope.prefix(words, redirections=())``,
  ``CommandScope.prefix_from_text(text)``, ``covers(command: str | ParsedCommand) -> bool``, ``describe()``,
  ``to_dict()/from_dict()``
- ``scope_for_approval(command: str) -> CommandScope | None``: what approve-for-session grants (the exact
  command), or None when the command can never be waived
- ``scope_choices(command) -> list[CommandScope]``: exact first, then shorter prefixes (the widening offered)
- ``why_not_waivable(command) -> tuple[str, ...]``: human reasons (empty when it can be waived)

Coverage rules (``CommandScope.covers``):

- the command parses and carries none of ``BLOCKING_FLAGS`` (substitution ``$(…)``/backticks, process
  substitution ``<(…)``, an expansion in command position, a pipe into an interpreter, ``&``, a subshell or
  compound construct, a heredoc, anything not understood);
- *exact*: the command's structure is identical to the approved one: same simple commands (argv after quote
  removal, so ``'git' status`` is ``git status``), same assignments (``FOO=1 git status`` is a different
  command), same redirections, same connectors. Words with expansions (``$HOME``, ``*.py``, ``~``) must be
  written identically;
- *prefix*: EVERY simple command starts with the prefix words, has no ``NAME=value`` assignment, and all its
  words are literal (no ``$X``, glob, brace or tilde that could expand to ``--force``); a prefix covers any
  further literal arguments (``git push`` covers ``git push --force``: high-risk calls are kept from prefix rules
  by the risk module, see ``reviewer_app.domain.risk``);
- redirections: fd duplications (``2>&1``) and ``/dev/null`` are always allowed; any other redirection must be
  named by the scope (exact scopes name the ones in the approved command).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from reviewer_app.domain.lean_settlement import exact_scope_words

if TYPE_CHECKING:
    from reviewer_app.domain.shell import ParsedCommand, Redirection, SimpleCommand

ScopeKind = Literal["exact", "prefix"]


def _parse(command: str) -> ParsedCommand:
    from reviewer_app.domain.shell import parse_command  # the parser, only once a command must really be read

    return parse_command(command)


@dataclass(frozen=True, slots=True)
class CommandScope:
    """What a waiver allows: one exact command, or every command starting with some words.

    ``text`` is the approved command (exact) or the prefix as typed (prefix); ``words`` the prefix argv (for
    exact scopes: the argv of the first simple command, for display); ``redirections`` the file redirections a
    prefix scope allows (exact scopes allow those of the approved command).
    """

    kind: ScopeKind
    text: str
    words: tuple[str, ...]
    redirections: tuple[Redirection, ...] = ()
    text_waivable: bool = field(default=False, compare=False)
    """Exact scopes: ``text`` itself was parsed and found waivable when the scope was made. Stored with it, so
    the identical command is covered without parsing again (the hook's fast path never loads the parser)."""
    plain: bool = field(default=False, compare=False)
    """Exact scopes: the command does nothing its text hides (``shell_effects``): a session waiver may cover it."""
    exact_settles: bool = field(default=False, compare=False)
    """Exact scopes: an exact rule may settle it (its whole effect is in its literal text)."""

    @classmethod
    def exact(cls, command: str) -> CommandScope:
        from reviewer_app.domain.shell_effects import command_effects  # it builds on this module

        parsed = _parse(command)
        words = parsed.commands[0].argv if parsed.commands else ()
        waivable = parsed.waivable and bool(parsed.commands)
        effects = command_effects(parsed)
        return cls(
            "exact",
            command,
            words,
            (),
            text_waivable=waivable,
            plain=waivable and effects.plain,
            exact_settles=waivable and effects.exact_rule_may_settle,
        )

    @classmethod
    def prefix(cls, words: Iterable[str], redirections: Iterable[Redirection] = ()) -> CommandScope:
        prefix = tuple(words)
        if not prefix or any(not word for word in prefix):
            raise ValueError("a prefix scope needs at least one non-empty word")
        return cls("prefix", shlex.join(prefix), prefix, tuple(redirections))

    @classmethod
    def prefix_from_text(cls, text: str) -> CommandScope:
        """A prefix typed as shell words (``npm run test``); refused unless it is plain literal words."""
        from reviewer_app.domain.shell import ShellFlag

        parsed = _parse(text)
        if (
            not parsed.understood
            or len(parsed.commands) != 1
            or parsed.connectors
            or parsed.flags - {ShellFlag.INTERPRETER}
            or parsed.commands[0].assignments
            or parsed.commands[0].redirections
            or not all(word.literal for word in parsed.commands[0].words)
        ):
            raise ValueError(f"a command prefix must be plain words, got {text!r}")
        scope = cls.prefix(parsed.commands[0].argv)
        return CommandScope("prefix", text.strip(), scope.words, ())

    def covers(self, command: str | ParsedCommand) -> bool:
        """True when every part of ``command`` is allowed by this scope (see the module docstring)."""
        if self.kind == "exact" and self.text_waivable and command == self.text:
            return True  # the very text that was parsed and approved: no need to parse it again
        parsed = command if not isinstance(command, str) else _parse(command)
        if not parsed.waivable or not parsed.commands:
            return False
        if self.kind == "exact":
            approved = _parse(self.text)
            return approved.waivable and bool(approved.commands) and parsed.structure == approved.structure
        return all(self._prefix_covers(simple) for simple in parsed.commands)

    def _prefix_covers(self, simple: SimpleCommand) -> bool:
        if simple.assignments or len(simple.words) < len(self.words):
            return False
        if not all(word.literal for word in simple.words):
            return False
        if simple.argv[: len(self.words)] != self.words:
            return False
        return all(r.harmless or r in self.redirections for r in simple.redirections)

    def describe(self) -> str:
        """One line for the window: what approving with this scope allows."""
        if self.kind == "exact":
            return exact_scope_words(self.text)
        text = f"allow commands starting `{self.text}`"
        if self.redirections:
            text += " with " + ", ".join(f"`{r.render()}`" for r in self.redirections)
        return text

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind, "text": self.text}
        if self.kind == "exact" and self.text_waivable:
            data["words"] = list(self.words)
            data["waivable"] = True
            data["plain"] = self.plain
        if self.kind == "prefix":
            data["words"] = list(self.words)
            if self.redirections:
                data["redirections"] = [r.to_dict() for r in self.redirections]
        return data

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> CommandScope:
        kind = raw.get("kind")
        if kind == "exact":
            words = raw.get("words")
            if (
                raw.get("waivable") is True
                and raw.get("plain") is True
                and isinstance(words, list)
                and all(isinstance(w, str) for w in words)
            ):  # checked when made (a scope stored before effects were judged is judged again below)
                return cls("exact", str(raw["text"]), tuple(words), (), text_waivable=True, plain=True)
            return cls.exact(str(raw["text"]))
        if kind == "prefix":
            words = raw.get("words")
            if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
                raise ValueError("a prefix scope needs a list of words")
            from reviewer_app.domain.shell import Redirection

            redirections = [Redirection.from_dict(r) for r in raw.get("redirections") or ()]
            return cls.prefix(words, redirections)
        raise ValueError(f"unknown command scope kind {kind!r}")


def scope_for_approval(command: str) -> CommandScope | None:
    """What approve-for-session grants: exactly this command, or None when it must be asked every time."""
    parsed = _parse(command)
    if not parsed.waivable:
        return None
    scope = CommandScope.exact(command)
    return scope if scope.plain else None


def scope_choices(command: str) -> list[CommandScope]:
    """What the operator may choose to grant, narrowest first: the exact command, then ever shorter prefixes
    of its words (``npm run test -- x`` → ``npm run test --``, ``npm run test``, ``npm run``, ``npm``).

    Prefixes are offered only for one simple command whose words are all literal and which has no assignment
    or file redirection; a widening is always the operator's explicit choice, never the default.
    """
    exact = scope_for_approval(command)
    if exact is None:
        return []
    choices = [exact]
    parsed = _parse(command)
    if len(parsed.commands) != 1 or parsed.connectors:
        return choices
    simple = parsed.commands[0]
    if (
        simple.assignments
        or not all(w.literal for w in simple.words)
        or any(not r.harmless for r in simple.redirections)
    ):
        return choices
    argv = simple.argv
    for length in range(len(argv) - (0 if simple.redirections else 1), 0, -1):
        choices.append(CommandScope.prefix(argv[:length]))
    return choices


def why_not_waivable(command: str) -> tuple[str, ...]:
    """Human reasons why approving ``command`` for the session cannot waive it later (empty if it can)."""
    from reviewer_app.domain.shell_effects import command_effects

    parsed = _parse(command)
    return parsed.blocking_reasons() or command_effects(parsed).reasons
