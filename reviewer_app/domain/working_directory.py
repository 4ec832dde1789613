"""Where each part of a shell command runs: the call's working directory, as ``cd`` and ``pushd`` change it.

Why: the risk module judges a file where the shell opens it. ``cd ~/.ssh && cat config`` reads the SSH
configuration although neither word names it as text, and ``cd .git && tee config`` rewrites a git configuration
that can run commands. So every simple command is judged in each directory it may run in.

The places only grow: a ``cd`` inside a subshell, a pipeline or a branch not taken is kept as if it lasted, and
``popd`` goes back to a place already held, so a file is judged in every directory it might be opened in (a
superset, never fewer). A change the engine cannot place (``cd "$D"``, ``cd -``, ``pushd +1``) is remembered, and
what follows it is asked: its files cannot be judged.
"""

from __future__ import annotations

import os
import posixpath
import re

from reviewer_app.domain.shell import SimpleCommand, Word, effective_argv

MAX_PLACES = 16
"""More directories than this (a command of many ``cd``) and the engine stops placing them: what follows is asked."""

_CD_OPTIONS = frozenset({"-L", "-P", "-e", "-@", "-LP", "-PL", "-Pe", "-eP"})
_PLAIN_TILDE = re.compile(r"~[A-Za-z0-9._-]*(/[^$`*?\[{]*)?")


class Places:
    """The directories a command may be in, step by step, starting from the call's ``cwd`` (None: not known)."""

    __slots__ = ("_directories", "_sequential", "unplaced")

    def __init__(self, cwd: str | None, *, sequential: bool = False) -> None:
        """``sequential``: the caller knows every part runs only after the ones before succeeded, in this shell
        (a plain ``a && b && c`` chain), so a ``cd`` replaces the place instead of adding one."""
        self._directories: list[str | None] = [_normal(cwd) if cwd else None]
        self._sequential = sequential
        self.unplaced: str | None = None
        """The first directory change (as written) the engine could not place; None while every one was placed."""

    @property
    def directories(self) -> tuple[str | None, ...]:
        """Where the next simple command may run (None: the call's own, unknown, working directory)."""
        return tuple(self._directories)

    def follow(self, simple: SimpleCommand) -> None:
        """Take in ``simple``'s change of directory, if it makes one."""
        target = _change_target(simple)
        if target is None:
            return
        if isinstance(target, _Unplaced):
            self.unplaced = self.unplaced or target.written
            return
        reached: list[str | None] = []
        for base in self._directories:
            reached += [place for place in _resolve(target, base) if place not in reached]
        if self._sequential:
            self._directories = reached
        else:
            self._directories += [place for place in reached if place not in self._directories]
        if len(self._directories) > MAX_PLACES:
            self.unplaced = self.unplaced or "more directory changes than can be followed"
            del self._directories[MAX_PLACES:]


class _Unplaced:
    __slots__ = ("written",)

    def __init__(self, written: str) -> None:
        self.written = written


def _change_target(simple: SimpleCommand) -> str | _Unplaced | None:
    """The directory ``simple`` changes to (``~`` expanded), an :class:`_Unplaced` one, or None for no change."""
    argv = simple.argv
    real = effective_argv(argv)  # ``builtin cd x``, ``command cd x``
    if not real:
        return None
    program = posixpath.basename(real[0])
    if program not in ("cd", "pushd", "chdir"):
        return None
    words: tuple[Word, ...] = simple.words[len(argv) - len(real) + 1 :]
    operands = list(words)
    while operands and (operands[0].value in _CD_OPTIONS or operands[0].value == "--"):
        if operands.pop(0).value == "--":
            break
    written = " ".join(word.raw for word in simple.words)
    if not operands:
        if program == "pushd":
            return _Unplaced(written)  # swaps the top two directories of a stack the engine does not see
        home = os.environ.get("HOME", "")
        return home if home.startswith("/") else _Unplaced(written)
    word = operands[0]
    value = word.value
    if program == "pushd" and value[:1] in ("+", "-") and value[1:].isdigit():
        return _Unplaced(written)
    if value == "-":
        return _Unplaced(written)  # $OLDPWD
    if not word.literal:
        if word.raw != value or not _PLAIN_TILDE.fullmatch(value):
            return _Unplaced(written)
        expanded = os.path.expanduser(value)
        return expanded if expanded.startswith("/") else _Unplaced(written)
    return value if value else _Unplaced(written)


def _resolve(target: str, base: str | None) -> list[str | None]:
    """Where ``cd target`` from ``base`` may land, ``$CDPATH`` included, as the shell resolves it (logically)."""
    if target.startswith("/"):
        return [_normal(target)]
    places: list[str | None] = []
    cdpath = os.environ.get("CDPATH", "")
    if cdpath and not target.startswith(("./", "../")) and target not in (".", ".."):
        for entry in cdpath.split(":"):
            root = entry if entry.startswith("/") else (posixpath.join(base, entry or ".") if base else None)
            places.append(_normal(posixpath.join(root, target)) if root else None)
    places.append(_normal(posixpath.join(base, target)) if base else None)
    return places


def _normal(path: str) -> str:
    return posixpath.normpath(path.replace("\\", "/"))


_CURRENT_DIRECTORY = ("${PWD}", "$PWD", "~+", "/proc/self/cwd", "/proc/thread-self/cwd")
"""Spellings of the directory the shell is in (``grep -r x $PWD/..``; ``/proc/self/cwd`` is the program's): read as
``.``."""


def placed(path: str, here: str | None) -> str:
    """``path`` as opened in ``here``: a relative path made absolute (``$PWD/x`` and ``~+/x`` are relative),
    ``~`` and absolute paths as written."""
    for spelling in _CURRENT_DIRECTORY:
        if path == spelling or path.startswith(spelling + "/"):
            path = "." + path[len(spelling) :]
            break
    if here is None or path.startswith(("/", "~")):
        return path
    return posixpath.join(here, path)


__all__ = ["MAX_PLACES", "Places", "placed"]
