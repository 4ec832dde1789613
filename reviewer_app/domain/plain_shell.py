"""Shell commands so plain that their words are their whitespace-split fields, told without the shell parser.

Why: the hook's lean path (:mod:`reviewer_app.domain.lean_settlement`, :mod:`reviewer_app.domain.lean_rules`)
settles calls without loading bashlex. It may read a command itself only when no shell could read it any other
way: ASCII letters, digits and ``_./:@%+,=-`` separated by spaces, no reserved word. Such a text has no quoting,
expansion (``$``, backquote, glob, ``~``, braces), operator (``;&|<>()``), comment, history ``!`` or second line,
so it is one simple command whose argv is its fields. Everything else is the parser's (:mod:`.shell`); tests hold
these functions to it over generated commands (``tests/domain/test_lean_rules.py``).

Standard library only, no dataclasses or ``typing`` at run time.
"""

from __future__ import annotations

PLAIN_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:@%+,=-")
RESERVED_WORDS = frozenset(
    {"if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do", "done", "in"}
    | {"function", "time", "coproc", "{", "}", "!", "[[", "]]"}
)
MAX_PLAIN_CHARS = 4096
"""Longer commands are the parser's to read (it gives up at ``shell.MAX_COMMAND_CHARS``, 10,000)."""

SPECIAL_PROGRAMS = frozenset(
    # shell.EXEC_WRAPPERS and shell_effects.WRAPPERS: they run another program named in their arguments
    {"env", "sudo", "doas", "su", "nohup", "nice", "ionice", "timeout", "time", "command", "builtin", "exec"}
    | {"stdbuf", "setsid", "chroot", "strace", "ltrace", "watch", "xargs", "parallel", "unbuffer", "flock"}
    | {"chrt", "taskset", "caffeinate", "runuser", "systemd-run", "unshare", "nsenter", "busybox", "pkexec", "sg"}
    | {"firejail", "bwrap", "proxychains", "proxychains4", "torsocks", "valgrind", "gdb", "catchsegv", "script"}
    | {"dbus-run-session", "dbus-launch", "xvfb-run", "expect", "faketime", "fakeroot", "eatmydata", "nocache"}
    | {"numactl", "cgexec", "eval", "ssh-agent"}
    # shell.INTERPRETERS and shell.SHELLS: they run code they are given
    | {"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash", "python", "python2", "python3"}
    | {"pypy", "pypy3", "perl", "ruby", "node", "nodejs", "deno", "bun", "php", "lua", "tclsh", "wish"}
    | {"osascript", "pwsh", "powershell", "Rscript", "julia", "groovy", "awk", "gawk", "mawk", "nawk", "source", "."}
    # shell_effects: builtins that change the shell's state, and declarers
    | {"alias", "shopt", "enable", "trap", "hash", "set", "unalias", "export", "declare", "typeset", "local"}
    | {"readonly", "function"}
    # shell_tools.TOOLS: programs whose options can run programs or write files
    | {"find", "sed", "gsed", "git", "tar", "gtar", "bsdtar", "rsync", "ssh", "scp", "sftp", "zip", "sort", "wget"}
    | {"socat", "nc", "ncat", "netcat", "tcpdump", "at", "batch", "psql", "mysql", "mariadb", "sqlite3"}
    | {"less", "more", "most", "pg", "man", "vi", "vim", "nvim", "view", "vimdiff", "nano", "pico", "emacs", "ed"}
    | {"ex", "joe", "micro", "kak", "hx", "curl", "make", "gmake", "ipython", "ipython3"}
    | {"ssh-add", "ssh-keygen"}
)
"""Every program the shell-effects module (:mod:`.shell_effects`, :mod:`.shell_tools`, :mod:`.shell`) knows
something about: a command that runs one of them is the parser's to judge. A test holds this set to be a superset
of theirs, so a program added there is handed to the full path until it is added here."""


GIT_PLAIN_SUBCOMMANDS = frozenset(
    {"status", "log", "diff", "show", "branch", "add", "commit", "fetch", "pull", "push", "checkout", "switch"}
    | {"restore", "stash", "tag", "remote", "rev-parse", "ls-files", "blame", "merge", "reset", "describe"}
    | {"shortlog", "reflog", "mv", "rm", "init"}
)
"""git subcommands the shell-effects module finds nothing in unless a long option (``--ext-diff``, ``--output``…)
or a global option (``-c``, ``--exec-path``) is given (``shell_tools._git``); ``config``, ``rebase``, ``grep``,
``clone``, ``bisect``, ``submodule`` and the tools that run programs are not among them."""


def effect_is_argv(argv: list[str]) -> bool:
    """Whether the shell-effects module finds nothing in this plain command (``command_effects(...).plain``): an
    ordinary program, or ``git`` running one of :data:`GIT_PLAIN_SUBCOMMANDS` with no long option. False says
    "the parser must judge", not "it has effects"."""
    program = versionless(program_name(argv[0]))
    if program == "git":
        return len(argv) > 1 and argv[1] in GIT_PLAIN_SUBCOMMANDS and not any(w.startswith("--") for w in argv[1:])
    return program not in SPECIAL_PROGRAMS


def only_reading(argv: list[str]) -> bool:
    """Whether a deny or ask rule reads this plain command as its argv alone (``shell_effects.readings``): nothing
    to see through (:func:`effect_is_argv`) and no leading option the engine would drop (``git -C . push``)."""
    return effect_is_argv(argv) and (len(argv) < 2 or not argv[1].startswith("-") or argv[1] == "-")


def plain_words(command: str) -> list[str] | None:
    """The words of a command made only of plain literal words (no quoting, expansion, operator or reserved
    word), which every shell reads as that list alone; None for anything else."""
    words = [word for word in command.split(" ") if word]
    if not words or any(not PLAIN_WORD_CHARS.issuperset(word) or word in RESERVED_WORDS for word in words):
        return None
    return words


def plain_command(command: str) -> list[str] | None:
    """The argv of a plain command (:func:`plain_words`) that sets no variable (``A=b cmd`` is the parser's) and is
    short enough to read here; None for anything else."""
    if len(command) > MAX_PLAIN_CHARS:
        return None
    words = plain_words(command)
    if words is None or "=" in words[0]:
        return None
    return words


VERSIONED_INTERPRETERS = frozenset(
    {"python", "python2", "python3", "pypy", "pypy3", "perl", "ruby", "php", "lua", "node", "tclsh", "wish"}
    | {"julia", "ipython", "ipython3", "bash", "zsh", "ksh"}
)
"""Interpreters also installed under a versioned name (``python3.12``, ``perl5.36``, ``php8.2``, ``lua5.4``)."""


def versionless(name: str) -> str:
    """An interpreter's name without the version it is installed under (``python3.12`` is ``python3``,
    ``perl5.36`` is ``perl``); any other name as it is."""
    stem = name.rstrip("0123456789.")
    if stem == name or stem not in VERSIONED_INTERPRETERS:
        return name
    with_major = name[: len(stem) + 1]  # python3.12 -> python3
    return with_major if with_major in VERSIONED_INTERPRETERS else stem


def program_name(word: str) -> str:
    """The program a command word runs, as the parser names it (``posixpath.basename``: ``/usr/bin/git`` is
    ``git``)."""
    return word.rpartition("/")[2]


__all__ = [
    "GIT_PLAIN_SUBCOMMANDS",
    "MAX_PLAIN_CHARS",
    "RESERVED_WORDS",
    "SPECIAL_PROGRAMS",
    "effect_is_argv",
    "only_reading",
    "plain_command",
    "plain_words",
    "program_name",
    "versionless",
]
