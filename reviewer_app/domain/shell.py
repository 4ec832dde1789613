"""Shell commands read with a real parser (bashlex): every simple command, connector and redirection.

Why: a waiver ("allow `git status`") must never cover more than the operator saw. Splitting on spaces lets
`git status; touch X`, `git $(touch X)` or `git status | sh` through; a parser sees each simple command,
redirection, substitution and pipe. Anything the parser cannot read, or that we do not model, is marked
*not understood* and is asked every time, never waived.

Public API (plain data, no I/O):

- ``parse_command(command: str) -> ParsedCommand`` (cached; never raises)
- ``ParsedCommand``: ``source``, ``commands: tuple[SimpleCommand, ...]`` (every simple command, including those
  nested in substitutions and compound constructs), ``connectors`` (``;`` ``&&`` ``||`` ``|`` ``&`` in order),
  ``flags: frozenset[ShellFlag]``, ``problems: tuple[str, ...]`` (why it is not understood), ``understood``,
  ``waivable`` (no flag that forbids every waiver), ``pipe_targets`` (programs reading a pipe), ``structure``
  (canonical, hashable: what "the identical command" means)
- ``SimpleCommand``: ``words: tuple[Word, ...]``, ``assignments``, ``redirections``, ``stdin_texts`` (heredoc
  bodies, here-strings), ``argv``, ``program``
- ``Word(value, raw, literal)``; ``Redirection(operator, target, fd)`` with ``harmless``
- ``effective_argv(argv)`` / ``effective_program(argv)``: what really runs behind ``env``/``sudo``/``xargs``…;
  ``runs_interpreter(simple_command)``: it (or a program it wraps) runs code it is given (sh, python, xargs…)
- ``invocations(command) -> Iterator[tuple[str, ...]]``: every argv it may run (wrappers, ``find -exec``,
  ``sh -c``/``eval`` scripts, nested substitutions): what deny and ask rules look for
- ``inline_scripts(program, args, stdin_texts)``, ``find_exec_commands(args)``: the code a command hands on
- ``MAX_COMMAND_CHARS``: longer commands are not understood (parsing costs ~50 us a word)

The scopes a waiver grants are in :mod:`reviewer_app.domain.shell_scopes`.
"""

from __future__ import annotations

import enum
import functools
import posixpath
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from reviewer_app.domain.plain_shell import versionless


class ShellFlag(enum.StrEnum):
    """Constructs found in a command; some of them (``BLOCKING_FLAGS``) forbid every waiver."""

    SUBSTITUTION = "substitution"
    PROCESS_SUBSTITUTION = "process_substitution"
    PARAMETER_EXPANSION = "parameter_expansion"
    EXPANSION_IN_COMMAND_POSITION = "expansion_in_command_position"
    PIPE = "pipe"
    PIPE_INTO_INTERPRETER = "pipe_into_interpreter"
    INTERPRETER = "interpreter"
    BACKGROUND = "background"
    COMPOUND = "compound"
    HEREDOC = "heredoc"
    SEQUENCE = "sequence"
    NOT_UNDERSTOOD = "not_understood"


BLOCKING_FLAGS = frozenset(
    {
        ShellFlag.SUBSTITUTION,
        ShellFlag.PROCESS_SUBSTITUTION,
        ShellFlag.EXPANSION_IN_COMMAND_POSITION,
        ShellFlag.PIPE_INTO_INTERPRETER,
        ShellFlag.BACKGROUND,
        ShellFlag.COMPOUND,
        ShellFlag.HEREDOC,
        ShellFlag.NOT_UNDERSTOOD,
    }
)

# Programs that run code they are given (on stdin, as an argument or as a file).
INTERPRETERS = frozenset(
    {
        "sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash", "busybox",
        "python", "python2", "python3", "pypy", "pypy3", "perl", "ruby", "node", "nodejs", "deno", "bun",
        "php", "lua", "tclsh", "wish", "osascript", "pwsh", "powershell", "Rscript", "julia", "groovy",
        "awk", "gawk", "mawk", "nawk", "eval", "source", ".", "xargs", "parallel", "exec", "ipython", "ipython3",
    }
)  # fmt: skip

# Programs that run another program named in their arguments; the one that really runs is found by
# ``effective_program``.
EXEC_WRAPPERS = frozenset(
    {
        "env", "sudo", "doas", "su", "nohup", "nice", "ionice", "timeout", "time", "command", "builtin", "exec",
        "stdbuf", "setsid", "chroot", "strace", "ltrace", "watch", "xargs", "parallel", "unbuffer", "flock",
        "chrt", "taskset", "caffeinate", "runuser", "systemd-run",
    }
)  # fmt: skip

MAX_COMMAND_CHARS = 10_000
_GLOB_CHARS = frozenset("*?[")
_DEV_NULL = "/dev/null"
_CONTROL_OK = frozenset("\t\n")


@dataclass(frozen=True, slots=True)
class Word:
    """One shell word: its value after quote removal, its text as written, and whether the value is final.

    ``literal`` is False when the shell would still change the word (``$X``, ``~``, ``*.py``, ``{a,b}``).
    """

    value: str
    raw: str
    literal: bool

    @property
    def key(self) -> tuple[str, str]:
        """What "the same word" means: the value when literal, otherwise the text exactly as written."""
        return ("literal", self.value) if self.literal else ("raw", self.raw)


@dataclass(frozen=True, slots=True)
class Redirection:
    """``fd operator target``, e.g. ``2>&1`` is (">&", "1", fd=2), ``>> log`` is (">>", "log", fd=None)."""

    operator: str
    target: str
    fd: int | None = None

    @property
    def harmless(self) -> bool:
        """fd duplications and closing (``2>&1``, ``<&-``) and ``/dev/null`` touch no file."""
        if self.operator in (">&", "<&") and (self.target.isdigit() or self.target == "-"):
            return True
        return self.target == _DEV_NULL and self.operator in (">", ">>", "<", "&>", ">|", "&>>")

    @property
    def writes(self) -> bool:
        return self.operator not in ("<", "<<", "<<<", "<&", "<<-")

    def render(self) -> str:
        return f"{self.fd if self.fd is not None else ''}{self.operator}{shlex.quote(self.target)}"

    def to_dict(self) -> dict[str, Any]:
        return {"operator": self.operator, "target": self.target, "fd": self.fd}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Redirection:
        fd = raw.get("fd")
        return cls(str(raw["operator"]), str(raw["target"]), int(fd) if fd is not None else None)


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """A command with its words, ``NAME=value`` prefixes (as written) and redirections."""

    words: tuple[Word, ...]
    assignments: tuple[str, ...] = ()
    redirections: tuple[Redirection, ...] = ()
    stdin_texts: tuple[str, ...] = ()  # heredoc bodies and here-strings fed to the command (for risk)
    span: tuple[int, int] | None = field(default=None, compare=False)  # where it is written in the source
    context: str = field(default="", compare=False)  # "", "substitution", "process substitution", "compound"

    @property
    def argv(self) -> tuple[str, ...]:
        return tuple(word.value for word in self.words)

    @property
    def program(self) -> str | None:
        """Base name of the program that really runs (looking through ``env``, ``sudo``, ``xargs``…)."""
        return effective_program(self.argv)

    @property
    def key(self) -> tuple[object, ...]:
        return ("cmd", self.assignments, tuple(w.key for w in self.words), self.redirections)


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    """What a command string does, as far as the parser and this module understand it."""

    source: str
    commands: tuple[SimpleCommand, ...]
    connectors: tuple[str, ...]
    flags: frozenset[ShellFlag]
    problems: tuple[str, ...] = ()
    structure: tuple[object, ...] = ()
    pipe_targets: tuple[str, ...] = ()  # the programs that read another command's output through a pipe

    @property
    def understood(self) -> bool:
        return ShellFlag.NOT_UNDERSTOOD not in self.flags

    @property
    def waivable(self) -> bool:
        """False when some construct forbids every waiver (the command is asked every time)."""
        return not (self.flags & BLOCKING_FLAGS)

    def blocking_reasons(self) -> tuple[str, ...]:
        """Human reasons why no scope can cover this command (empty when it is waivable)."""
        reasons = list(self.problems)
        reasons += [_FLAG_REASONS[flag] for flag in sorted(self.flags & BLOCKING_FLAGS) if flag in _FLAG_REASONS]
        return tuple(reasons)


_FLAG_REASONS = {
    ShellFlag.SUBSTITUTION: "contains a command substitution ($(…) or backticks)",
    ShellFlag.PROCESS_SUBSTITUTION: "contains a process substitution (<(…) or >(…))",
    ShellFlag.EXPANSION_IN_COMMAND_POSITION: "the program name comes from an expansion",
    ShellFlag.PIPE_INTO_INTERPRETER: "pipes into an interpreter",
    ShellFlag.BACKGROUND: "runs something in the background (&)",
    ShellFlag.COMPOUND: "contains a subshell, group, loop, condition or function",
    ShellFlag.HEREDOC: "contains a heredoc",
}


# Wrapper options that take a value in the next word (``sudo -u root``, ``timeout -s KILL``).
_WRAPPER_OPTIONS_WITH_VALUE = {
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "-C", "--unset", "--chdir"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "-p", "--class", "--classdata"}),
    "xargs": frozenset({"-I", "-L", "-n", "-P", "-s", "-d", "-E", "-a", "--arg-file", "--delimiter"}),
    "su": frozenset({"-c", "-s", "--command", "--shell", "-g", "-G"}),
    "watch": frozenset({"-n", "--interval", "-d"}),
    "flock": frozenset({"-w", "--timeout", "-E", "-c"}),
    "strace": frozenset({"-e", "-o", "-p", "-s", "-u"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "taskset": frozenset({"-p"}),
}


def effective_argv(argv: Iterable[str]) -> tuple[str, ...]:
    """The argv of the program that really runs, looking through wrappers: ``sudo -u x env A=1 rm -rf /``
    gives ``rm -rf /``. When the wrapped program cannot be found, the wrapper's own argv is returned."""
    words = tuple(argv)
    index = 0
    while index < len(words):
        name = posixpath.basename(words[index])
        if name not in EXEC_WRAPPERS:
            return words[index:]
        with_value = _WRAPPER_OPTIONS_WITH_VALUE.get(name, frozenset())
        rest = index + 1
        while rest < len(words):
            word = words[rest]
            if word in with_value:
                rest += 2
            elif word.startswith("-") or (name == "env" and "=" in word) or word.replace(".", "").isdigit():
                rest += 1
            elif name in ("timeout", "chrt", "taskset", "flock", "chroot", "sg") and rest == index + 1:
                rest += 1  # the duration, priority, mask, lock file, root directory or group
            else:
                break
        if rest >= len(words):
            return words[index:]
        index = rest
    return words


def effective_program(argv: Iterable[str]) -> str | None:
    """Base name of the program that really runs (``sudo env A=1 bash -c x`` is ``bash``); None for no argv."""
    words = effective_argv(argv)
    return posixpath.basename(words[0]) if words else None


def runs_interpreter(command: SimpleCommand) -> bool:
    """True when the command (or a program it wraps) runs code it is given: ``sh``, ``python``, ``xargs``…

    Conservative: a wrapper (``sudo``, ``env``, ``timeout``…) with an interpreter's name anywhere in its
    arguments counts.
    """
    argv = command.argv
    if not argv:
        return False
    first = versionless(posixpath.basename(argv[0]))
    if first in INTERPRETERS:
        return True
    if first in EXEC_WRAPPERS:
        return any(versionless(posixpath.basename(word)) in INTERPRETERS for word in argv[1:])
    return False


SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash"})
MAX_SCRIPT_DEPTH = 3


def inline_scripts(program: str, args: tuple[str, ...], stdin_texts: tuple[str, ...] = ()) -> list[str]:
    """Shell code a command runs: ``sh -c CODE``, ``eval CODE``, a heredoc or here-string fed to a shell."""
    if program == "eval":
        return [" ".join(args)] if args else []
    if program not in SHELLS:
        return []
    for index, word in enumerate(args):
        if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
            return [args[index + 1]] if index + 1 < len(args) else []
        if not word.startswith("-"):
            return []  # `bash script.sh`: a file we cannot see
    return list(stdin_texts)


def find_exec_commands(args: tuple[str, ...]) -> list[SimpleCommand]:
    """The commands ``find -exec … ;`` runs, so ``find -exec rm -rf {} +`` can be judged as ``rm -rf``."""
    commands: list[SimpleCommand] = []
    index = 0
    while index < len(args):
        if args[index] in ("-exec", "-execdir", "-ok", "-okdir"):
            end = index + 1
            while end < len(args) and args[end] not in (";", "+"):
                end += 1
            words = tuple(Word(word, word, True) for word in args[index + 1 : end])
            if words:
                commands.append(SimpleCommand(words))
            index = end
        index += 1
    return commands


def invocations(command: str | ParsedCommand, *, depth: int = 0) -> Iterator[tuple[str, ...]]:
    """Every argv the command may run, program names reduced to base names: each simple command (also inside
    substitutions and compound constructs), the program behind wrappers (``sudo env rm`` → ``rm``), the
    commands of ``find -exec``, and the commands of scripts given to ``sh -c``, ``eval`` or a shell's heredoc.

    For deny and ask rules, which must catch a command wherever it hides. Not-understood commands yield only
    what the parser read (nothing): callers treat them conservatively themselves.
    """
    parsed = command if isinstance(command, ParsedCommand) else parse_command(command)
    for simple in parsed.commands:
        argv = simple.argv
        if not argv:
            continue
        yield (posixpath.basename(argv[0]), *argv[1:])
        real = effective_argv(argv)
        if real and real != argv:
            yield (posixpath.basename(real[0]), *real[1:])
        if not real:
            continue
        program, args = posixpath.basename(real[0]), real[1:]
        if program == "find":
            for nested in find_exec_commands(args):
                yield from invocations_of_simple(nested)
        if depth < MAX_SCRIPT_DEPTH:
            for script in inline_scripts(program, args, simple.stdin_texts):
                yield from invocations(script, depth=depth + 1)


def invocations_of_simple(simple: SimpleCommand) -> Iterator[tuple[str, ...]]:
    argv = simple.argv
    if argv:
        yield (posixpath.basename(argv[0]), *argv[1:])
        real = effective_argv(argv)
        if real and real != argv:
            yield (posixpath.basename(real[0]), *real[1:])


# -- parsing -------------------------------------------------------------------------------------------------


class _NotUnderstood(Exception):
    """A construct this module does not model; the command is asked, never waived."""


class _Reader:
    """Walks bashlex's tree and collects simple commands, connectors, flags and the canonical structure."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.commands: list[SimpleCommand] = []
        self.connectors: list[str] = []
        self.flags: set[ShellFlag] = set()
        self.problems: list[str] = []
        self.pipe_targets: list[str] = []
        self.context = ""  # where the commands being read sit (for the explanation's segments)

    # The canonical structure covers lists, pipelines and simple commands; anything else carries a
    # blocking flag, so its structure never needs to be compared.
    def node(self, node: Any, *, nested: bool = False) -> tuple[object, ...]:
        kind = node.kind
        if kind == "list":
            parts: list[object] = []
            for part in node.parts:
                if part.kind == "operator":
                    op = "\n" if part.op == "\n" else part.op
                    self.connectors.append(op)
                    if op == "&":
                        self.flags.add(ShellFlag.BACKGROUND)
                    else:
                        self.flags.add(ShellFlag.SEQUENCE)
                    parts.append(("op", ";" if op in ("\n", ";") else op))
                else:
                    parts.append(self.node(part, nested=nested))
            while parts and parts[-1] == ("op", ";"):  # `ls;` is `ls`
                parts.pop()
            return parts[0] if len(parts) == 1 else ("list", *parts)  # type: ignore[return-value]
        if kind == "pipeline":
            parts = []
            after_pipe = False
            for part in node.parts:
                if part.kind == "pipe":
                    self.connectors.append(part.pipe)
                    self.flags.add(ShellFlag.PIPE)
                    parts.append(("pipe", part.pipe))
                    after_pipe = True
                elif part.kind == "reservedword" and part.word == "!":
                    parts.append(("not",))
                else:
                    parts.append(self.node(part, nested=nested))
                    if after_pipe and part.kind == "command" and self.commands:
                        self.pipe_targets.append(self.commands[-1].program or "")
                        if runs_interpreter(self.commands[-1]):
                            self.flags.add(ShellFlag.PIPE_INTO_INTERPRETER)
                    elif after_pipe and part.kind != "command":
                        self.flags.add(ShellFlag.COMPOUND)
            return ("pipeline", *parts)
        if kind == "command":
            return self.command(node)
        if kind in ("compound", "if", "for", "while", "until", "function"):
            self.flags.add(ShellFlag.COMPOUND)
            outer, self.context = self.context, self.context or "compound"
            for child in _children(node):
                self.node(child, nested=True)
            self.context = outer
            return ("compound",)
        if kind in ("reservedword", "operator", "pipe"):
            return (kind,)
        if kind == "word":
            self.word(node, command_position=False)
            return ("word",)
        if kind == "redirect":
            self.redirect(node)
            return ("redirect",)
        raise _NotUnderstood(f"unsupported shell construct: {kind}")

    def command(self, node: Any) -> tuple[object, ...]:
        words: list[Word] = []
        assignments: list[str] = []
        redirections: list[Redirection] = []
        stdin_texts: list[str] = []
        for part in node.parts:
            if part.kind == "assignment":
                self.expansions(part)
                assignments.append(self.raw(part))
            elif part.kind == "word":
                words.append(self.word(part, command_position=not words))
            elif part.kind == "redirect":
                redirection = self.redirect(part)
                redirections.append(redirection)
                text = _stdin_text(part, redirection)
                if text is not None:
                    stdin_texts.append(text)
            else:
                raise _NotUnderstood(f"unsupported part of a command: {part.kind}")
        command = SimpleCommand(
            tuple(words), tuple(assignments), tuple(redirections), tuple(stdin_texts), tuple(node.pos), self.context
        )
        self.commands.append(command)
        if runs_interpreter(command):
            self.flags.add(ShellFlag.INTERPRETER)
        return command.key

    def raw(self, node: Any) -> str:
        start, end = node.pos
        return self.source[start:end]

    def expansions(self, node: Any) -> bool:
        """Record the expansions inside a word or assignment; True when there is any."""
        found = False
        for part in getattr(node, "parts", None) or ():
            found = True
            if part.kind in ("commandsubstitution", "processsubstitution"):
                substitution = part.kind == "commandsubstitution"
                self.flags.add(ShellFlag.SUBSTITUTION if substitution else ShellFlag.PROCESS_SUBSTITUTION)
                outer, self.context = self.context, "substitution" if substitution else "process substitution"
                self.node(part.command, nested=True)
                self.context = outer
            elif part.kind == "parameter":
                value = getattr(part, "value", None)
                if not value:  # bashlex reads $'…' and $"…" this way
                    raise _NotUnderstood("ANSI-C or locale quoting ($'…', $\"…\") is not understood")
                self.flags.add(ShellFlag.PARAMETER_EXPANSION)
                if any(marker in value for marker in ("$(", "`", "<(", ">(")):
                    self.flags.add(ShellFlag.SUBSTITUTION)
            elif part.kind == "tilde":
                pass
            else:
                raise _NotUnderstood(f"unsupported expansion: {part.kind}")
        return found

    def word(self, node: Any, *, command_position: bool) -> Word:
        raw = self.raw(node)
        value = str(node.word)
        expanded = self.expansions(node)
        if expanded and command_position:
            self.flags.add(ShellFlag.EXPANSION_IN_COMMAND_POSITION)
        if not expanded:
            _check_quote_removal(raw, value)
        literal = not expanded and not _has_unquoted_pattern(raw)
        return Word(value, raw, literal)

    def redirect(self, node: Any) -> Redirection:
        operator = str(node.type)
        fd = node.input if isinstance(getattr(node, "input", None), int) else None
        if getattr(node, "heredoc", None) is not None or operator in ("<<", "<<-"):
            self.flags.add(ShellFlag.HEREDOC)
        output = node.output
        if isinstance(output, int | str):
            return Redirection(operator, str(output), fd)
        word = self.word(output, command_position=False)
        if not word.literal:  # `> $FILE` or `> ~/x`: the target is only known when it runs
            target = word.raw
            self.flags.add(ShellFlag.PARAMETER_EXPANSION)
            return Redirection(operator, target, fd)
        return Redirection(operator, word.value, fd)


def _stdin_text(node: Any, redirection: Redirection) -> str | None:
    """The text a heredoc (without its closing delimiter line) or a here-string feeds the command."""
    if redirection.operator == "<<<":
        return redirection.target
    heredoc = getattr(node, "heredoc", None)
    value = getattr(heredoc, "value", None)
    if not isinstance(value, str):
        return None
    lines = value.split("\n")
    delimiter = redirection.target.strip("'\"")
    if lines and lines[-1].strip() == delimiter:
        lines = lines[:-1]
    return "\n".join(lines)


def _children(node: Any) -> Iterator[Any]:
    for attribute in ("list", "parts"):
        yield from getattr(node, attribute, None) or ()


def _check_quote_removal(raw: str, value: str) -> None:
    """Cross-check bashlex's quote removal with shlex's; a disagreement means we cannot trust the argv."""
    try:
        tokens = shlex.split(raw, comments=False, posix=True)
    except ValueError as exc:
        raise _NotUnderstood(f"quoting not understood in {raw!r}") from exc
    if tokens != [value] and not (value == "" and tokens == [""]):
        raise _NotUnderstood(f"quoting not understood in {raw!r}")


def _has_unquoted_pattern(raw: str) -> bool:
    """True when the word has an unquoted glob (``*?[``), brace (``{a,b}``) or leading tilde."""
    if raw.startswith("~"):
        return True
    quote: str | None = None
    escaped = False
    for char in raw:
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote is not None:
            if char == quote:
                quote = None
        elif char in ("'", '"'):
            quote = char
        elif char in _GLOB_CHARS or char == "{":
            return True
    return False


@functools.lru_cache(maxsize=4096)
def parse_command(command: str) -> ParsedCommand:
    """Parse a command string; never raises (what cannot be read is marked not understood)."""
    if not isinstance(command, str):
        return _not_understood(str(command), "the command is not text")
    bad = [char for char in command if (ord(char) < 32 and char not in _CONTROL_OK) or ord(char) == 127]
    if bad:
        return _not_understood(command, "the command contains control characters")
    if not command.strip():
        return _not_understood(command, "the command is empty")
    if len(command) > MAX_COMMAND_CHARS:  # parsing is linear but slow (~50 us a word): bound what an agent can cost
        return _not_understood(command, f"the command is longer than {MAX_COMMAND_CHARS} characters")
    reader = _Reader(command)
    try:
        from reviewer_app.domain.shell_grammar import load_bashlex  # on first use, with its stored tables

        trees = load_bashlex().parse(command)
        parts: list[object] = []
        for index, tree in enumerate(trees):
            if index:  # separate lines of the command
                reader.connectors.append("\n")
                reader.flags.add(ShellFlag.SEQUENCE)
                parts.append(("op", ";"))
            parts.append(reader.node(tree))
    except _NotUnderstood as exc:
        return _not_understood(command, str(exc))
    except NotImplementedError as exc:
        return _not_understood(command, f"the parser does not support this construct ({exc})")
    except Exception as exc:  # bashlex raises ParsingError, MatchedPairError, and plain errors on odd input
        return _not_understood(command, f"the command could not be parsed: {exc}")
    if not reader.commands:
        return _not_understood(command, "the command contains no simple command")
    return ParsedCommand(
        source=command,
        commands=tuple(reader.commands),
        connectors=tuple(reader.connectors),
        flags=frozenset(reader.flags),
        problems=(),
        structure=tuple(parts),
        pipe_targets=tuple(reader.pipe_targets),
    )


def _not_understood(source: str, problem: str) -> ParsedCommand:
    return ParsedCommand(source, (), (), frozenset({ShellFlag.NOT_UNDERSTOOD}), (problem,), ())
