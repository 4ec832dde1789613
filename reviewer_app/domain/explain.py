"""What a shell command does, part by part, from a table of the commands agents run (offline, deterministic).

Why: operators approve most of what they are asked; a plain account of each part of a command (its program,
subcommand and the meaning of each flag) makes the dangerous part visible. The meanings come from
``commands.toml`` next to this module, never from the agent; a program the table does not know says so.

Public API:

- ``explain_command(command: str) -> tuple[Segment, ...]``: every part of the command (pipes, ``&&``,
  substitutions, ``find -exec``, scripts given to ``sh -c``), in reading order
- ``Segment``: ``text``, ``program``, ``subcommand``, ``summary``, ``flags`` (``FlagMeaning``), ``operands``,
  ``known``, ``connector`` (how it joins the part before: ``|``, ``&&``…), ``context`` (where it sits),
  ``wrappers`` (``sudo``, ``env``… in front of it), ``redirections``; ``explanation`` (one paragraph), ``to_dict()``
- ``table_programs() -> frozenset[str]``: every program name the table covers (aliases included)
"""

from __future__ import annotations

import dataclasses
import functools
import posixpath
import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

from reviewer_app.domain.recursive_reads import recursive_read
from reviewer_app.domain.shell import (
    EXEC_WRAPPERS,
    MAX_SCRIPT_DEPTH,
    Redirection,
    SimpleCommand,
    effective_argv,
    find_exec_commands,
    inline_scripts,
    parse_command,
)
from reviewer_app.domain.shell_effects import without_global_options
from reviewer_app.domain.tar_words import read_tar

UNKNOWN_PROGRAM = "not in Reviewer's command table: what it does is not known"
_CONNECTOR = re.compile(r"\|\||&&|\|&|\||;|&|\n")
_CONNECTOR_WORDS = {
    "|": "its input is the output of the part before (|)",
    "|&": "its input is the output and errors of the part before (|&)",
    "&&": "runs only if the part before succeeded (&&)",
    "||": "runs only if the part before failed (||)",
    ";": "runs after the part before (;)",
    "\n": "runs after the part before (new line)",
    "&": "the part before runs in the background (&)",
}
_CONTEXT_WORDS = {
    "substitution": "inside a command substitution $(…): runs first, its output becomes words of another part",
    "process substitution": "inside a process substitution <(…): runs alongside, read as a file",
    "compound": "inside a subshell, group, loop, condition or function",
}


@dataclass(frozen=True, slots=True)
class FlagMeaning:
    """One flag as written, the value it took (if any), and its meaning ("" when the table does not know it)."""

    flag: str
    value: str | None
    meaning: str

    def render(self) -> str:
        written = self.flag if self.value is None else f"{self.flag} {self.value}"
        return f"{written}: {self.meaning or 'not in the table'}"


@dataclass(frozen=True, slots=True)
class Wrapper:
    """A program in front of the real one (``sudo -u root``, ``env A=1``, ``timeout 60``)."""

    program: str
    summary: str
    flags: tuple[FlagMeaning, ...]

    def render(self) -> str:
        flags = "; ".join(flag.render() for flag in self.flags)
        return f"{self.program}: {self.summary}" + (f" ({flags})" if flags else "")


@dataclass(frozen=True, slots=True)
class Segment:
    """One simple command of a shell command, explained."""

    text: str
    program: str | None
    subcommand: str | None
    summary: str
    flags: tuple[FlagMeaning, ...] = ()
    operands: tuple[str, ...] = ()
    operands_are: str = ""
    known: bool = False
    connector: str = ""
    context: str = ""
    wrappers: tuple[Wrapper, ...] = ()
    redirections: tuple[str, ...] = ()
    assignments: tuple[str, ...] = ()
    whole: frozenset[str] = frozenset()
    """The operands the program reads whole (``tar c``, ``grep -r``): the explanation says every file under them."""

    @property
    def explanation(self) -> str:
        """One paragraph: where it sits, what runs it, what the program does, each flag, operands, redirections."""
        parts: list[str] = []
        if self.context:
            parts.append(_CONTEXT_WORDS.get(self.context, self.context).capitalize() + ".")
        if self.connector:
            parts.append(_CONNECTOR_WORDS.get(self.connector, self.connector).capitalize() + ".")
        for wrapper in self.wrappers:
            parts.append(f"Through {wrapper.render()}.")
        if self.assignments:
            parts.append("Sets " + ", ".join(self.assignments) + " for this command.")
        name = " ".join(word for word in (self.program, self.subcommand) if word) or "(no program)"
        parts.append(f"{name}: {self.summary}.")
        parts.extend(f"{flag.render()}." for flag in self.flags)
        if self.operands:
            label = f"Operands ({self.operands_are})" if self.operands_are else "Operands"
            parts.append(f"{label}: " + " ".join(map(self._operand, self.operands)) + ".")
        parts.extend(f"{redirection}." for redirection in self.redirections)
        return " ".join(parts)

    def _operand(self, word: str) -> str:
        if word not in self.whole:
            return word
        if word in ("~", "~/", "$HOME", "${HOME}"):
            return f"{word} (the home directory: every file under it)"
        if word.rstrip("/") == "":
            return f"{word} (the whole file system: every file on it)"
        return f"{word} (every file under it)"

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "program": self.program,
            "subcommand": self.subcommand,
            "explanation": self.explanation,
            "known": self.known,
            "connector": self.connector,
            "context": self.context,
            "flags": [{"flag": f.flag, "value": f.value, "meaning": f.meaning} for f in self.flags],
            "operands": list(self.operands),
            "wrappers": [w.render() for w in self.wrappers],
            "redirections": list(self.redirections),
        }


# -- the table -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Entry:
    summary: str
    operands: str
    flags: dict[str, tuple[str, str]]  # flag → (the name of its value, "" for none; meaning)
    subs: dict[str, _Entry]
    letters: dict[str, tuple[str, str]]
    """Option letters the first word may bundle without a dash (``tar czf``, ``ps aux``), as ``flags``."""
    settings: dict[str, str]
    """Operands written ``NAME=VALUE`` that are settings (``dd if=…``): NAME → meaning (``VALUE`` replaced)."""


def _entry(raw: dict[str, Any]) -> _Entry:
    flags = _flag_table(raw.get("flags") or {})
    letters = _flag_table(raw.get("letters") or {})
    if raw.get("bundled_first"):  # the first word may be the short flags' letters without their dash
        letters = {name[1:]: meaning for name, meaning in flags.items() if len(name) == 2} | letters
    subs = {str(name): _entry(sub) for name, sub in (raw.get("sub") or {}).items()}
    settings = {str(name): str(meaning) for name, meaning in (raw.get("settings") or {}).items()}
    return _Entry(str(raw.get("summary", "")), str(raw.get("operands", "")), flags, subs, letters, settings)


def _flag_table(raw: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """``{"-f ARCHIVE": "the archive file"}`` → ``{"-f": ("ARCHIVE", "the archive file")}``."""
    table: dict[str, tuple[str, str]] = {}
    for key, meaning in raw.items():
        name, _, value = str(key).partition(" ")
        table[name] = (value, str(meaning))
    return table


@functools.cache
def _table() -> dict[str, _Entry]:
    text = resources.files("reviewer_app.domain").joinpath("commands.toml").read_text(encoding="utf-8")
    table: dict[str, _Entry] = {}
    for name, raw in tomllib.loads(text).items():
        entry = _entry(raw)
        table[name] = entry
        for alias in raw.get("aliases") or ():
            table[str(alias)] = entry
    return table


def table_programs() -> frozenset[str]:
    """Every program (and alias) the command table explains."""
    return frozenset(_table())


# -- reading one argv ----------------------------------------------------------------------------------------


def _lookup(chain: list[_Entry], flag: str) -> tuple[str, str] | None:
    for entry in reversed(chain):  # the subcommand's own flags first, then its parents'
        if flag in entry.flags:
            return entry.flags[flag]
    return None


def _meaning(placeholder: str, meaning: str, value: str | None) -> str:
    """The table's meaning with its placeholder (``DIR`` in "run in DIR") replaced by the value written."""
    if not placeholder or value is None:
        return meaning
    return re.sub(rf"\b{re.escape(placeholder)}\b", lambda _: value, meaning)


def _read_flag(chain: list[_Entry], argv: tuple[str, ...], index: int) -> tuple[list[FlagMeaning], int]:
    """The flag(s) at ``argv[index]`` and the index after them (a value in the next word is consumed)."""
    word = argv[index]
    name, equals, inline = word.partition("=")
    if not word.startswith("--") and _lookup(chain, name) is None:  # `-chdir=DIR` (terraform, go) is one word
        name, equals, inline = word, "", ""
    found = _lookup(chain, name)
    if found is not None:
        placeholder, meaning = found
        if placeholder and not equals:
            value = argv[index + 1] if index + 1 < len(argv) else None
            return [FlagMeaning(word, value, _meaning(placeholder, meaning, value))], index + (2 if value else 1)
        value = inline if equals else None
        return [FlagMeaning(name, value, _meaning(placeholder, meaning, value))], index + 1
    if not word.startswith("--") and len(word) > 2:
        letters = word[1:]
        first = _lookup(chain, "-" + letters[0])
        if first is not None and first[0]:  # `-n5`, `-C/tmp`: the value written against the flag
            flag_meaning = _meaning(first[0], first[1], letters[1:])
            return [FlagMeaning("-" + letters[0], letters[1:], flag_meaning)], index + 1
        meanings: list[FlagMeaning] = []
        for position, letter in enumerate(letters):
            known = _lookup(chain, "-" + letter)
            if known is None:
                break
            placeholder, meaning = known
            if placeholder:
                if position != len(letters) - 1:
                    break
                value = argv[index + 1] if index + 1 < len(argv) else None
                meanings.append(FlagMeaning("-" + letter, value, _meaning(placeholder, meaning, value)))
                return meanings, index + (2 if value is not None else 1)
            meanings.append(FlagMeaning("-" + letter, None, meaning))
        else:
            return meanings, index + 1
    return [FlagMeaning(word, None, "")], index + 1


def _read_argv(argv: tuple[str, ...], entry: _Entry) -> tuple[list[str], list[FlagMeaning], list[str], _Entry]:
    """Subcommand path, flags and operands of ``argv`` (``argv[0]`` is the program)."""
    chain = [entry]
    subs: list[str] = []
    flags: list[FlagMeaning] = []
    operands: list[str] = []
    index = 1
    if len(argv) > 1 and entry.letters and argv[1] and all(letter in entry.letters for letter in argv[1]):
        flags, index = _bundled_letters(entry, argv)
    while index < len(argv):
        word = argv[index]
        setting, equals, value = word.partition("=")
        if equals and setting in chain[-1].settings:
            flags.append(FlagMeaning(word, None, _meaning("VALUE", chain[-1].settings[setting], value)))
            index += 1
            continue
        if word == "--":
            operands.extend(argv[index + 1 :])
            break
        if word in ("-exec", "-execdir", "-ok", "-okdir"):  # find: the command runs up to `;` or `+`
            end = index + 1
            while end < len(argv) and argv[end] not in (";", "+"):
                end += 1
            placeholder, meaning = _lookup(chain, word) or ("", "")
            value = " ".join(argv[index + 1 : end + 1])
            flags.append(FlagMeaning(word, value, _meaning(placeholder, meaning, value)))
            index = end + 1
            continue
        if word.startswith("-") and len(word) > 1:
            found, index = _read_flag(chain, argv, index)
            flags.extend(found)
            continue
        current = chain[-1]
        if not operands and word in current.subs:
            chain.append(current.subs[word])
            subs.append(word)
        else:
            operands.append(word)
        index += 1
    return subs, flags, operands, chain[-1]


def _past_global_options(
    argv: tuple[str, ...], entry: _Entry
) -> tuple[list[str], list[FlagMeaning], list[str], _Entry] | None:
    """``prog -opt [value]… sub …`` with options the table does not know, any of which may take the next word: the
    subcommand found where the risk engine finds it (:func:`without_global_options`), the options before it each
    with the word it may take (``-chdir envs/prod``). None when no reading starts with a known subcommand."""
    for form in without_global_options(argv):
        if len(form) > 1 and form[1] in entry.subs:
            leading = argv[1 : len(argv) - len(form) + 1]
            subs, flags, operands, last = _read_argv(form, entry)
            return subs, _leading_options(entry, leading) + flags, operands, last
    return None


def _leading_options(entry: _Entry, words: tuple[str, ...]) -> list[FlagMeaning]:
    """The global options before a subcommand: as the table reads them, an unknown one with the word after it."""
    options: list[FlagMeaning] = []
    index = 0
    while index < len(words):
        found, after = _read_flag([entry], words, index)
        if found[0].meaning or after > index + 1 or index + 1 >= len(words) or words[index + 1].startswith("-"):
            options.extend(found)
            index = after
        else:
            options.append(FlagMeaning(words[index], words[index + 1], ""))
            index += 2
    return options


def _bundled_letters(entry: _Entry, argv: tuple[str, ...]) -> tuple[list[FlagMeaning], int]:
    """``tar czf x.tgz dir``: each letter of the first word is an option; those that take a value take the next
    words in the letters' order. Returns the options and the index of the first word after their values."""
    flags: list[FlagMeaning] = []
    index = 2
    for letter in argv[1]:
        placeholder, meaning = entry.letters[letter]
        value = None
        if placeholder and index < len(argv):
            value, index = argv[index], index + 1
        flags.append(FlagMeaning(letter, value, _meaning(placeholder, meaning, value)))
    return flags, index


def _read_whole(program: str, args: tuple[str, ...]) -> frozenset[str]:
    """The operands ``program`` reads whole, as written (tar's as placed by ``-C`` are matched by their word)."""
    if program in ("tar", "gtar", "bsdtar", "gnutar"):
        words = read_tar(args, program)
        return frozenset(path.word for path in words.reads) if words.creates else frozenset()
    found = recursive_read(program, args)
    return frozenset(found.operands) if found is not None else frozenset()


def _wrappers(prefix: tuple[str, ...]) -> tuple[Wrapper, ...]:
    """``sudo -u root env A=1`` → sudo (-u root), env (A=1): split where a wrapper's name starts."""
    starts = [i for i, word in enumerate(prefix) if posixpath.basename(word) in EXEC_WRAPPERS] or [0]
    if starts[0] != 0:
        starts.insert(0, 0)
    wrappers: list[Wrapper] = []
    for number, start in enumerate(starts):
        words = prefix[start : starts[number + 1] if number + 1 < len(starts) else len(prefix)]
        name = posixpath.basename(words[0])
        entry = _table().get(name)
        if entry is None:
            wrappers.append(Wrapper(name, UNKNOWN_PROGRAM, ()))
            continue
        _subs, flags, operands, _ = _read_argv(words, entry)
        flags += [FlagMeaning(word, None, "sets this environment variable") for word in operands if "=" in word]
        wrappers.append(Wrapper(name, entry.summary, tuple(flags)))
    return tuple(wrappers)


def describe_redirection(redirection: Redirection) -> str:
    """``> out.txt`` → "> out.txt: writes standard output to out.txt (replacing its content)"."""
    fd = "" if redirection.fd is None else str(redirection.fd)
    space = "" if redirection.operator.endswith("&") else " "
    written = f"{fd}{redirection.operator}{space}{redirection.target}"
    target, operator = redirection.target, redirection.operator
    stream = "errors" if redirection.fd == 2 else "standard output"
    if operator in (">&", "<&") and (target.isdigit() or target == "-"):
        what = "sends errors where the output goes" if (fd, target) == ("2", "1") else "duplicates a stream"
    elif target == "/dev/null":
        what = f"discards {stream}" if redirection.writes else "reads nothing"
    elif operator in (">", ">|"):
        what = f"writes {stream} to {target} (replacing its content)"
    elif operator == ">>":
        what = f"appends {stream} to {target}"
    elif operator in ("&>", ">&"):
        what = f"writes output and errors to {target} (replacing its content)"
    elif operator == "&>>":
        what = f"appends output and errors to {target}"
    elif operator == "<":
        what = f"reads standard input from {target}"
    elif operator in ("<<", "<<-"):
        what = "feeds the following lines (a heredoc) as standard input"
    elif operator == "<<<":
        what = "feeds this string as standard input"
    else:
        what = "a redirection"
    return f"{written}: {what}"


def _segment(simple: SimpleCommand, text: str, context: str, connector: str = "") -> Segment:
    argv = simple.argv
    redirections = tuple(describe_redirection(r) for r in simple.redirections)
    if not argv:
        return Segment(text, None, None, "no program: only redirections", (), (), "", True, connector, context,
                       (), redirections, simple.assignments)  # fmt: skip
    real = effective_argv(argv)
    wrappers = _wrappers(argv[: len(argv) - len(real)]) if len(real) < len(argv) else ()
    program = posixpath.basename(real[0])
    entry = _table().get(program)
    if entry is None:
        return Segment(text, program, None, UNKNOWN_PROGRAM, (), tuple(real[1:]), "", False, connector, context,
                       wrappers, redirections, simple.assignments)  # fmt: skip
    subs, flags, operands, last = _read_argv(real, entry)
    if entry.subs and not subs and (past := _past_global_options(real, entry)) is not None:
        subs, flags, operands, last = past
    summary = last.summary or entry.summary
    operands_are = last.operands if subs else entry.operands
    return Segment(
        text, program, " ".join(subs) or None, summary, tuple(flags), tuple(operands), operands_are, True,
        connector, context, wrappers, redirections, simple.assignments, _read_whole(program, tuple(real[1:])),
    )  # fmt: skip


def _nested(simple: SimpleCommand, depth: int) -> list[Segment]:
    """The commands a part hands on: ``find -exec CMD``, ``sh -c SCRIPT``, ``eval CODE``, a heredoc to a shell."""
    real = effective_argv(simple.argv)
    if not real:
        return []
    program, args = posixpath.basename(real[0]), real[1:]
    found: list[Segment] = []
    if program == "find":
        for command in find_exec_commands(args):
            found.append(_segment(command, " ".join(command.argv), "run by find -exec on every match"))
    if depth < MAX_SCRIPT_DEPTH:
        for script in inline_scripts(program, args, simple.stdin_texts):
            for segment in _explain(script, depth + 1):
                context = f"in the script run by {program}" + (f"; {segment.context}" if segment.context else "")
                found.append(dataclasses.replace(segment, context=context))
    return found


def _explain(command: str, depth: int) -> list[Segment]:
    parsed = parse_command(command)
    if not parsed.understood:
        problem = "; ".join(parsed.problems) or "not understood"
        return [Segment(command, None, None, f"the command could not be read ({problem}): no explanation")]
    ordered = sorted(parsed.commands, key=lambda c: c.span[0] if c.span else len(command))
    segments: list[Segment] = []
    previous_end: int | None = None
    for simple in ordered:
        start, end = simple.span or (0, 0)
        text = command[start:end] if simple.span else " ".join(simple.argv)
        connector = ""
        if not simple.context:
            if previous_end is not None:
                operators = _CONNECTOR.findall(command[previous_end:start])
                connector = operators[-1] if operators else ""
            previous_end = end
        segments.append(_segment(simple, text, simple.context, connector))
        segments.extend(_nested(simple, depth))
    return segments


@functools.lru_cache(maxsize=1024)
def explain_command(command: str) -> tuple[Segment, ...]:
    """Every part of ``command`` explained, in reading order (never raises)."""
    return tuple(_explain(command, 0))
