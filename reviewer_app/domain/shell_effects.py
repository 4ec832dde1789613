"""What a shell command may do beyond the argv it shows, and the spellings a deny rule must see through.

Why (issue 23): a rule is read by an operator as text, but bash runs it with semantics. ``allow Bash(find:*)``
reads as "find things", yet ``find -fprintf`` writes files and ``find -exec`` runs programs; ``X=rm; $X -rf /``
hides its program from every rule. An automatic decision may only settle a call whose effect the operator could
read off the rule, so every such construct is a reason here, and each reason makes the command high risk
(``reviewer_app.domain.risk``): no bare, prefix or glob allow rule and no session waiver settles it.

Two kinds of reason:

- *hidden*: the effect depends on something the text does not show: a construct the parser cannot read
  (substitution, ANSI-C quoting, arithmetic, a variable or pattern as the program, ``&``, a function or loop,
  a heredoc with expansions), a script or config read from a file (``sed -f``, ``ssh -F``), commands built from
  stdin (``xargs``), interactive programs (pagers, editors), settings from the environment (``PATH=…``). No
  rule settles these, not even an exact one: the operator cannot read the effect off any text.
- *visible*: the text names the extra program or file (``find -exec rm {} +``, ``python -c 'code'``,
  ``sed -i``, ``git -c core.pager=…``, ``timeout 5 cmd``). An exact allow rule for the identical, fully literal
  command may settle it (the operator wrote the code they allow); wider rules and session waivers may not.

Deny and ask rules (``reviewer_app.domain.rules``) compare their words with every ``deny_forms`` of every
argv the command may run (wrappers peeled, global options dropped: ``git -C . -c k=v push`` is ``git push``),
and when a command has any reason here they also match a mention of their program anywhere (``mentions``).

Public API: ``command_effects(parsed) -> CommandEffects`` (cached), ``CommandEffects.reasons``, ``.hidden``,
``.visible``, ``.plain``, ``.exact_rule_may_settle``; ``deny_forms(argv)``, ``readings(command)`` (cached: every
reading of every argv the command may run); ``mentions(source, name)``;
``WRAPPERS``.
"""

from __future__ import annotations

import codecs
import functools
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass

from reviewer_app.domain.plain_shell import versionless
from reviewer_app.domain.shell import (
    EXEC_WRAPPERS,
    SHELLS,
    ParsedCommand,
    ShellFlag,
    SimpleCommand,
    Word,
    inline_scripts,
    invocations,
    parse_command,
)
from reviewer_app.domain.shell_tools import TOOLS, interpreter_options_end, tool_reasons

# Programs that run another program named in their arguments. The wrapped command is judged too (risk looks
# through them), but a prefix rule naming the wrapper would cover any program, so a wrapper is always a reason.
WRAPPERS = EXEC_WRAPPERS | frozenset(
    {
        "unshare", "nsenter", "busybox", "pkexec", "runuser", "sg", "firejail", "bwrap", "proxychains",
        "proxychains4", "torsocks", "valgrind", "gdb", "catchsegv", "dbus-run-session", "dbus-launch", "xvfb-run",
        "script", "expect", "faketime", "fakeroot", "eatmydata", "nocache", "numactl", "cgexec", "eval",
        "ssh-agent",
    }
)  # fmt: skip

# Variables whose value decides which program runs or what it loads (``PATH=/tmp/x ls`` runs /tmp/x/ls).
_EXEC_VARIABLES = frozenset(
    {
        "PATH", "BASH_ENV", "ENV", "IFS", "PS4", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "GLOBIGNORE", "CDPATH",
        "HOME", "XDG_CONFIG_HOME", "ZDOTDIR", "INPUTRC", "EDITOR", "VISUAL", "PAGER", "MANPAGER", "BROWSER",
        "SHELL", "LESSOPEN", "LESSCLOSE", "SSH_ASKPASS", "SUDO_ASKPASS", "NODE_OPTIONS", "PERL5OPT", "PERL5LIB",
        "PERLLIB", "RUBYOPT", "RUBYLIB", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONINSPECT", "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS", "RSYNC_RSH", "RSYNC_CONNECT_PROG", "TAR_OPTIONS", "MAKEFLAGS", "CC", "CXX", "LDSHARED",
        "PIP_CONFIG_FILE", "NPM_CONFIG_USERCONFIG", "CARGO_HOME", "RUSTC_WRAPPER", "PYTHONPATH", "PYTHONUSERBASE",
        "PYTHONWARNINGS", "PYTHONBREAKPOINT", "NODE_PATH", "CLASSPATH", "GEM_PATH", "GEM_HOME", "GOFLAGS", "GOROOT",
        "RUSTFLAGS", "RUSTC", "RUSTDOC", "RUSTC_WORKSPACE_WRAPPER", "CURL_HOME", "WGETRC", "GCONV_PATH",
        "OPENSSL_CONF", "OPENSSL_ENGINES", "DOCKER_HOST", "JAVA_HOME", "MAVEN_OPTS", "GRADLE_OPTS", "PYTEST_ADDOPTS",
        "PYTEST_PLUGINS",
    }
)  # fmt: skip
_EXEC_VARIABLE_PREFIXES = ("LD_", "DYLD_", "BASH_FUNC_", "npm_config_", "NPM_CONFIG_", "CARGO_", "PIP_")
_OPTION_VARIABLES = frozenset({"RIPGREP_CONFIG_PATH", "ZIPOPT", "GREP_OPTIONS"})
"""Variables that give a program options (``--hidden``, ``-r``) no word of the command shows."""
_GIT_SAFE_VARIABLES = re.compile(r"^GIT_(AUTHOR|COMMITTER)_(NAME|EMAIL|DATE)$|^GIT_TRACE\w*$")
# Builtins that change how later commands in the same shell are read or run.
_SHELL_STATE = frozenset({"alias", "shopt", "enable", "trap", "hash", "source", ".", "set", "unalias", "function"})
_HARMLESS_SET = re.compile(r"[-+][euxvo]+|pipefail|errexit|nounset|xtrace|verbose")  # `set -euo pipefail`
_DECLARERS = frozenset({"export", "declare", "typeset", "local", "readonly"})
_ANSI_C = re.compile(r"\$'((?:[^'\\]|\\.)*)'")

_HIDDEN_FLAGS = {
    ShellFlag.SUBSTITUTION: "contains a command substitution: what it runs is only known when it runs",
    ShellFlag.PROCESS_SUBSTITUTION: "contains a process substitution: what it runs is only known when it runs",
    ShellFlag.EXPANSION_IN_COMMAND_POSITION: "the program name comes from a variable",
    ShellFlag.PIPE_INTO_INTERPRETER: "pipes data into an interpreter, which runs it as code",
    ShellFlag.BACKGROUND: "runs something in the background (&)",
    ShellFlag.COMPOUND: "contains a subshell, function, loop or condition: what runs depends on values at run time",
}


@dataclass(frozen=True, slots=True)
class CommandEffects:
    """Why a command does more than a rule's text shows (see the module docstring); empty when it does not."""

    hidden: tuple[str, ...] = ()
    visible: tuple[str, ...] = ()
    literal: bool = True
    """Every word and redirection target is literal: the text is exactly what runs."""

    @property
    def reasons(self) -> tuple[str, ...]:
        return self.hidden + self.visible

    @property
    def plain(self) -> bool:
        """Nothing beyond the argv shown: any rule that covers the text may settle it."""
        return not self.hidden and not self.visible

    @property
    def exact_rule_may_settle(self) -> bool:
        """An exact allow rule for this very command may settle it: the operator can read its whole effect."""
        return self.plain or (not self.hidden and self.literal)


def command_effects(command: str | ParsedCommand) -> CommandEffects:
    """The reasons ``command`` does more than its text shows (cached by source text)."""
    source = command.source if isinstance(command, ParsedCommand) else command
    return _effects(source)


@functools.lru_cache(maxsize=4096)
def _effects(source: str) -> CommandEffects:
    parsed = parse_command(source)
    found = _Found()
    if not parsed.understood:
        found.hidden("the command could not be fully parsed: " + "; ".join(parsed.problems))
    for flag, reason in _HIDDEN_FLAGS.items():
        if flag in parsed.flags:
            found.hidden(reason)
    literal = True
    for simple in parsed.commands:
        literal = literal and all(word.literal for word in simple.words) and not simple.assignments
        _simple_effects(simple, found)
    return CommandEffects(tuple(found.hidden_reasons), tuple(found.visible_reasons), literal)


class _Found:
    def __init__(self) -> None:
        self.hidden_reasons: list[str] = []
        self.visible_reasons: list[str] = []

    def hidden(self, reason: str) -> None:
        if reason not in self.hidden_reasons:
            self.hidden_reasons.append(reason)

    def visible(self, reason: str) -> None:
        if reason not in self.visible_reasons:
            self.visible_reasons.append(reason)


def _simple_effects(simple: SimpleCommand, found: _Found) -> None:
    for assignment in simple.assignments:
        _assignment_effects(assignment.split("=", 1)[0].lstrip("+"), found)
    for redirection in simple.redirections:
        quoted = any(q in redirection.target for q in "'\"\\")
        expands = any("$" in text or "`" in text for text in simple.stdin_texts)
        if redirection.operator in ("<<", "<<-") and not quoted and expands:
            found.hidden("a heredoc with expansions ($… or `…` in its text) runs them when it is read")
    words = simple.words
    if not words:
        return
    if not words[0].literal:
        found.hidden(f"the program name is a pattern the shell expands ({words[0].raw})")
    program = posixpath.basename(words[0].value)
    args = simple.argv[1:]
    if program in _SHELL_STATE and not (program == "set" and all(_HARMLESS_SET.fullmatch(arg) for arg in args)):
        found.hidden(f"{program} changes how later commands in the shell are read or run")
    if program in _DECLARERS:
        for arg in args:
            if arg.startswith("-") and "f" in arg:
                found.hidden(f"{program} -f defines or exports shell functions")
            elif "=" in arg:
                _assignment_effects(arg.split("=", 1)[0], found)
    if program == "command" and args[:1] in (("-v",), ("-V",)):
        return  # `command -v git` only tells where git is
    if program in WRAPPERS:
        _wrapper_effects(program, simple, found)
        return
    _program_effects(program, args, words[1:], simple.stdin_texts, found)


def _assignment_effects(name: str, found: _Found) -> None:
    if (
        name in _EXEC_VARIABLES
        or name.startswith(_EXEC_VARIABLE_PREFIXES)
        or (name.startswith("GIT_") and not _GIT_SAFE_VARIABLES.match(name))
    ):
        found.hidden(f"sets {name}, which decides what programs run or load")
    elif name in _OPTION_VARIABLES:
        found.hidden(f"sets {name}, which gives a program options the command does not show")


def _wrapper_effects(program: str, simple: SimpleCommand, found: _Found) -> None:
    """A wrapper: itself a reason; the wrapped command is judged as well where it can be found."""
    argv = simple.argv
    if any(not word.literal for word in simple.words):
        found.hidden(f"{program} runs a command built from expansions")
    if program == "env":
        rest = _env_effects(argv[1:], found)
        if rest is None:
            return
        if rest:
            found.visible(f"runs {posixpath.basename(rest[0])} through env")
            _judge_wrapped(rest, simple, found)
        return
    if not _wrapper_hides(program, argv[1:], found):
        found.visible(f"runs another program through {program}")
    scripts = inline_scripts(program, argv[1:]) if program == "eval" else []
    for script in scripts:
        _nested(script, program, found)
    for start in range(1, len(argv)):  # the wrapped command may start at any later word: judge each candidate
        word = argv[start]
        if word and not word.startswith("-") and "=" not in word:
            inner = posixpath.basename(word)
            if inner in WRAPPERS:
                _wrapper_hides(inner, argv[start + 1 :], found)
            if inner in _PROGRAM_NAMES_WITH_EFFECTS:
                _program_effects(inner, argv[start + 1 :], simple.words[start + 1 :], simple.stdin_texts, found)


def _wrapper_hides(program: str, args: tuple[str, ...], found: _Found) -> bool:
    """Record why a wrapper runs something no text shows (stdin, a command line as text); True if it does."""
    if program in ("xargs", "parallel"):
        found.hidden(f"{program} runs commands built from its input")
        return True
    if program in ("watch", "su", "flock", "script", "expect", "runuser", "sg") and any(
        word in ("-c", "--command") or (program == "watch" and not word.startswith("-")) for word in args
    ):
        found.hidden(f"{program} runs a command line given as text")
        return True
    return program == "env" and _env_effects(args, found) is None


def _env_effects(args: tuple[str, ...], found: _Found) -> tuple[str, ...] | None:
    """``env [-i] [-u NAME] [NAME=value]… cmd``: the wrapped argv, or None when env does what we cannot read."""
    index = 0
    while index < len(args):
        word = args[index]
        if word in ("-i", "--ignore-environment", "-0", "--null", "-"):
            index += 1
        elif word in ("-u", "--unset"):
            index += 2
        elif word.startswith("--unset="):
            index += 1
        elif (
            word.startswith("-S")
            or word.startswith("--split-string")
            or (word.startswith("-") and not word.startswith("--") and "S" in word)
        ):
            found.hidden("env -S splits a string into a command line the rule cannot show")
            return None
        elif word.startswith("-"):
            found.hidden(f"env option {word} is not understood")
            return None
        elif "=" in word:
            _assignment_effects(word.split("=", 1)[0], found)
            index += 1
        else:
            return args[index:]
    return ()


def _judge_wrapped(argv: tuple[str, ...], simple: SimpleCommand, found: _Found) -> None:
    offset = len(simple.argv) - len(argv)
    words = simple.words[offset + 1 :]
    _program_effects(posixpath.basename(argv[0]), argv[1:], words, simple.stdin_texts, found)


def _nested(script: str, runner: str, found: _Found) -> None:
    inner = _effects(script) if len(script) < 10_000 else CommandEffects(("the script is too long to read",))
    for reason in inner.hidden:
        found.hidden(f"{reason} (in a script run by {runner})")
    for reason in inner.visible:
        found.visible(f"{reason} (in a script run by {runner})")
    if not inner.literal:
        found.hidden(f"the script run by {runner} has words only known when it runs")


_PROGRAM_NAMES_WITH_EFFECTS = TOOLS | SHELLS


def _could_be_option(word: Word) -> bool:
    """Might this non-literal word expand to an option (``$X`` → ``-exec``, ``*`` → a file named ``-delete``)?"""
    if word.literal:
        return False
    raw = word.raw
    if "$" in raw or "`" in raw:
        return True
    return raw[:1] in ("*", "?", "[", "{", "-", "'", '"', "\\")


def _program_effects(
    program: str, args: tuple[str, ...], words: tuple[Word, ...], stdin_texts: tuple[str, ...], found: _Found
) -> None:
    program = versionless(program)  # python3.12 is python3
    if program in SHELLS:
        scripts = inline_scripts(program, args, stdin_texts)
        for index, arg in enumerate(args):
            if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
                if index + 1 < len(words) and not words[index + 1].literal:
                    found.hidden(f"{program} -c runs a script that is only known when it runs")
                    return
                break
        if scripts:
            found.visible(f"{program} runs a shell script given as text")
            for script in scripts:
                _nested(script, program, found)
        return
    named = program in _PROGRAM_NAMES_WITH_EFFECTS
    # An interpreter's script gets the words after it; a word only known at run time may still be an option.
    own = words[: interpreter_options_end(program, tuple(w.value if w.literal else "-?" for w in words))]
    if named and any(_could_be_option(word) for word in own):
        found.hidden(
            f"an argument of {program} is only known when it runs and could turn on an option that runs commands"
        )
    hidden, visible = tool_reasons(program, args, stdin_texts)
    for reason in hidden:
        found.hidden(reason)
    for reason in visible:
        found.visible(reason)


# -- deny and ask matching -----------------------------------------------------------------------------------


def deny_forms(argv: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    """Every reading of ``argv`` a deny or ask rule must compare with (fail closed: some may not be what runs).

    The argv itself; behind a wrapper, every later word taken as the program (``sudo -u x cmd``, ``flock F
    cmd``, ``timeout 5 cmd``, ``env A=B cmd``, ``nice -n 5 cmd`` all give ``cmd``); and each of those with its
    leading global options dropped, where an option may or may not take the next word as its value
    (``git -C . push`` and ``git -c k=v push`` give ``git push``, ``kubectl -n ns delete`` gives
    ``kubectl delete``, ``npm --prefix x publish`` gives ``npm publish``).
    """
    if not argv:
        return
    starts = [0]
    if posixpath.basename(argv[0]) in WRAPPERS:
        starts += [i for i in range(1, len(argv)) if argv[i] and not argv[i].startswith("-") and "=" not in argv[i]]
    seen: set[tuple[str, ...]] = set()
    for start in starts:
        base = (posixpath.basename(argv[start]), *argv[start + 1 :])
        for form in (base, *without_global_options(base)):
            if form not in seen:
                seen.add(form)
                yield form


@functools.lru_cache(maxsize=4096)
def readings(command: str) -> tuple[tuple[str, ...], ...]:
    """Every ``deny_forms`` reading of every argv ``command`` may run (``invocations``), once per command text."""
    seen: dict[tuple[str, ...], None] = {}
    for argv in invocations(command):
        seen.update(dict.fromkeys(deny_forms(argv)))
    return tuple(seen)


def without_global_options(argv: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    """``prog [-opt [value]]… sub …`` as ``prog sub …``, for each place the subcommand may start."""
    index = 1
    while index < len(argv) and argv[index].startswith("-") and argv[index] != "-":
        index += 1
        if index < len(argv) and "=" not in argv[index - 1] and not argv[index].startswith("-"):
            yield (argv[0], *argv[index:])  # the word after the option taken as the subcommand
            index += 1  # … or as the option's value
    if index > 1 and index < len(argv):
        yield (argv[0], *argv[index:])


def mentions(source: str, name: str) -> bool:
    """Does ``name`` appear as a word anywhere in ``source``, also once quotes and ANSI-C escapes are undone?"""
    pattern = re.compile(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])")
    unquoted = re.sub(r"['\"\\]", "", source)
    decoded = _ANSI_C.sub(lambda match: _decode_ansi_c(match.group(1)), source)
    return any(pattern.search(text) for text in (source, unquoted, decoded, re.sub(r"['\"\\]", "", decoded)))


def _decode_ansi_c(body: str) -> str:
    try:
        return codecs.decode(body.encode("latin-1", "backslashreplace"), "unicode_escape")
    except (UnicodeDecodeError, ValueError):
        return body
