"""Variables a command sets for itself, so a word that uses one is judged with the value it will have.

Why: ``f=~/.ssh/id_ed25519; cat $f`` reads the key, though ``cat``'s word is only ``$f``; so does
``K=~/.s*/*; cat $K`` (an unquoted expansion is globbed). A variable assigned in the command (``NAME=value``, also
after ``export``, ``declare``, ``local``, ``readonly``, ``typeset``) is substituted with every value it is given
there, and a value that uses another of them with that one's values (``f=..; g=$f/keys``); one filled at run time
(``read``, ``mapfile``, ``readarray``, ``getopts``, ``printf -v``, a name reference ``declare -n``) cannot be
judged, and a word that uses it, or names a variable through another (``${!name}``), is reported. Variables from
the environment are the agent host's, not the command's, and are left as they are.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from reviewer_app.domain.shell import ParsedCommand, SimpleCommand

MAX_VARIANTS = 16
"""At most this many substituted forms of one command are judged; past it the command is reported as unjudgeable."""
_DECLARERS = frozenset({"export", "declare", "local", "readonly", "typeset"})
_READERS = frozenset({"read", "mapfile", "readarray", "getopts"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_USE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_]*))")
_INDIRECT = re.compile(r"\$\{!([A-Za-z_][A-Za-z0-9_]*)")
_MAX_ROUNDS = 4
"""A value that uses another variable is substituted again, this many times at most (``f=$f/x`` never ends)."""


@dataclasses.dataclass(frozen=True, slots=True)
class CommandVariables:
    """What the command itself puts in its variables."""

    values: dict[str, tuple[str, ...]]
    filled_at_run_time: frozenset[str]

    def uses(self, word: str) -> set[str]:
        """The command's own variables ``word`` expands."""
        used = {braced or plain for braced, plain in _USE.findall(word)}
        return used & (set(self.values) | self.filled_at_run_time)

    def unknowable(self, word: str) -> list[str]:
        """What in ``word`` has a value no text shows: a variable filled at run time, one named through another
        (``${!name}``)."""
        late = sorted(self.uses(word) & self.filled_at_run_time)
        return late + [f"!{name}" for name in _INDIRECT.findall(word)]


def command_variables(parsed: ParsedCommand) -> CommandVariables:
    values: dict[str, list[str]] = {}
    filled: set[str] = set()
    for simple in parsed.commands:
        program = simple.argv[0] if simple.argv else ""
        declared = simple.argv[1:] if program in _DECLARERS else ()
        references = any(word.startswith("-") and "n" in word for word in declared)  # declare -n r=HOME
        for assignment in (*simple.assignments, *declared):
            name, equals, value = assignment.partition("=")
            name = name.removesuffix("+")  # NAME+=value appends
            if references and _NAME.fullmatch(name):
                filled.add(name)
            elif equals and _NAME.fullmatch(name):
                values.setdefault(name, []).append(_unquoted(value))
        if program in _READERS:
            filled.update(word for word in simple.argv[1:] if _NAME.fullmatch(word))
        if program == "printf":  # printf -v NAME format…
            filled.update(_printf_targets(simple.argv[1:]))
    return CommandVariables({name: tuple(found) for name, found in values.items()}, frozenset(filled))


def _printf_targets(args: tuple[str, ...]) -> list[str]:
    names = [args[index + 1] for index, word in enumerate(args[:-1]) if word == "-v"]
    return [*names, *(word[2:] for word in args if word.startswith("-v") and len(word) > 2)]


def _unquoted(value: str) -> str:
    """An assignment's value as written, one layer of quotes removed (the safe side: ``~`` then counts as home)."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def substituted(simple: SimpleCommand, variables: CommandVariables) -> list[SimpleCommand] | None:
    """``simple`` with the command's own variables in its words and redirection targets replaced by each value
    they are given; ``[]`` when it uses none, None when there are more than :data:`MAX_VARIANTS` forms."""
    slots: list[tuple[Callable[[SimpleCommand, int, str], SimpleCommand], int, str]]
    slots = [(_with_word, index, word.value) for index, word in enumerate(simple.words)]
    slots += [(_with_target, index, redirection.target) for index, redirection in enumerate(simple.redirections)]
    variants = [simple]
    for put, index, text in slots:
        forms = _forms(text, variables)
        if forms:
            variants = [put(variant, index, form) for variant in variants for form in forms]
        if len(variants) > MAX_VARIANTS:
            return None
    return variants[1:] if variants[0] is simple else variants


def _forms(text: str, variables: CommandVariables) -> list[str]:
    """``text`` with each of the command's variables it uses replaced by each of their values, again while a value
    uses another (``g=$f/keys``); [] when it uses none."""
    forms = [text]
    for _ in range(_MAX_ROUNDS):
        names = {name for form in forms for name in variables.uses(form)} - variables.filled_at_run_time
        if not names:
            break
        for name in sorted(names):
            use = re.compile(r"\$\{" + name + r"(?:[^A-Za-z0-9_}][^}]*)?\}|\$" + name + r"(?![A-Za-z0-9_])")
            forms = [use.sub(value.replace("\\", "\\\\"), form) for form in forms for value in variables.values[name]]
            if len(forms) > MAX_VARIANTS:
                return forms
    return forms if forms != [text] else []


def _with_word(simple: SimpleCommand, index: int, value: str) -> SimpleCommand:
    words = list(simple.words)
    words[index] = dataclasses.replace(words[index], value=value)
    return dataclasses.replace(simple, words=tuple(words))


def _with_target(simple: SimpleCommand, index: int, target: str) -> SimpleCommand:
    redirections = list(simple.redirections)
    redirections[index] = dataclasses.replace(redirections[index], target=target)
    return dataclasses.replace(simple, redirections=tuple(redirections))


__all__ = ["MAX_VARIANTS", "CommandVariables", "command_variables", "substituted"]
