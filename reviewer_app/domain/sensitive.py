"""Sensitive targets: the one table of files whose read or write is high risk, and how the operator extends it.

Why: a private key read leaks it to the model; a write to a shell start-up file, a git hook or an agent host's
own settings runs code later or switches Reviewer off. Such a call is never settled by a default or by a
wildcard, prefix or glob rule (``domain.rules.evaluate`` sees it as high risk), only by an exact rule naming that
very path, or by a person.

The table is :data:`SENSITIVE_TARGETS` (gitignore-style patterns, matched with ``pathspec`` against the path as
given, the absolute path and the path with symlinks followed). The operator adds patterns in Reviewer's config
file (``$REVIEWER_CONFIG``, else ``config.toml`` in the user config directory)::

    [sensitive]
    paths = ["vault/", "*.sqlite", "/srv/prod/**"]

Reviewer's own configuration directory, data directory and database (``$REVIEWER_DB``) are always sensitive.

Public API: ``SENSITIVE_TARGETS``, ``is_sensitive_path(path, cwd=None)``, ``operator_patterns()``,
``config_file()``, ``real_path(path)``.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
import stat
import time
from collections.abc import Callable
from pathlib import Path

from reviewer_app.domain.sensitive_targets import CONFIG_ENV, SENSITIVE_TARGETS, read_config_patterns

__all__ = ["CONFIG_ENV", "SENSITIVE_TARGETS", "config_file", "is_sensitive_path", "operator_patterns", "real_path"]


def config_file() -> Path:
    """Reviewer's config file: ``$REVIEWER_CONFIG``, else ``config.toml`` in the user config directory."""
    configured = os.environ.get(CONFIG_ENV)
    if configured:
        return Path(configured)
    return _default_config_file(os.environ.get("HOME"), os.environ.get("XDG_CONFIG_HOME"))


@functools.lru_cache(maxsize=4)
def _default_config_file(home: str | None, xdg_config_home: str | None) -> Path:
    """Computed once per environment: this runs on every path check, and platformdirs is not free."""
    return user_directory("config") / "config.toml"


def user_directory(kind: str) -> Path:
    """Reviewer's user ``config`` or ``data`` directory (``reviewer_app.config``)."""
    from reviewer_app.config import config_dir, data_dir

    return config_dir() if kind == "config" else data_dir()


def operator_patterns() -> tuple[str, ...]:
    """The operator's ``[sensitive] paths`` plus Reviewer's own directories and database (absolute, anchored).

    The config file is looked at (one ``stat``) at most once a second per environment: a shell command checks
    each of its words, and an edit of the file takes effect within a second."""
    return _patterns_this_second(
        int(time.monotonic()),
        os.environ.get(CONFIG_ENV),
        os.environ.get("REVIEWER_DB", ""),
        os.environ.get("HOME"),
        os.environ.get("XDG_CONFIG_HOME"),
        os.environ.get("XDG_DATA_HOME"),
    )


@functools.lru_cache(maxsize=4)
def _patterns_this_second(
    second: int, configured: str | None, database: str, home: str | None, xdg: str | None, xdg_data: str | None
) -> tuple[str, ...]:
    path = Path(configured) if configured else _default_config_file(home, xdg)
    try:
        stamp: int | None = os.stat(path).st_mtime_ns
    except OSError:
        stamp = None
    return _operator_patterns(str(path), stamp, database, home, xdg_data)


@functools.lru_cache(maxsize=8)
def _operator_patterns(
    path: str, stamp: int | None, database: str, home: str | None, xdg_data: str | None
) -> tuple[str, ...]:
    patterns = [_anchored(str(user_directory("config"))) + "/", _anchored(str(user_directory("data"))) + "/"]
    if database and "://" not in database:
        patterns.append(_anchored(os.path.abspath(os.path.expanduser(database))))
        patterns.append(_anchored(os.path.abspath(os.path.expanduser(database))) + "-*")  # -wal, -shm, backups
    if stamp is not None:
        patterns.extend(read_config_patterns(path))
    return tuple(patterns)


def _anchored(absolute: str) -> str:
    escaped = "".join("\\" + c if c in "*?[]\\!#" else c for c in absolute.replace(os.sep, "/"))
    return "/" + escaped.lstrip("/")


@functools.lru_cache(maxsize=8)
def _matcher(extra: tuple[str, ...]) -> Callable[[str], bool]:
    """One test for the whole table: its gitignore patterns (``pathspec``) folded into a single regular expression
    (~80 patterns against several forms of every path add up), or ``pathspec`` itself when a pattern negates."""
    import pathspec  # imported on first use, to keep the engine's import cheap for short-lived hook processes

    patterns = [pattern for pattern, _ in SENSITIVE_TARGETS] + list(extra)
    spec = pathspec.GitIgnoreSpec.from_lines([pattern.casefold() for pattern in patterns])  # case-insensitive FS
    active = [pattern for pattern in spec.patterns if pattern.include is not None]
    if any(not pattern.include or pattern.regex is None for pattern in active):
        return lambda path: bool(spec.match_file(path))
    regexes = [pattern.regex.pattern for pattern in active if pattern.regex is not None]
    alternatives = "|".join(f"(?:{regex})".replace("(?P<ps_d>", "(?:") for regex in regexes)
    if not alternatives:
        return lambda path: False
    full = re.compile(alternatives).match
    # Most paths name no sensitive word at all: a search for the patterns' literal cores settles those at once.
    cores = [max(re.split(r"[*?\[\]/\\]+", pattern.casefold()), key=len) for pattern in patterns]
    if any(len(core) < 2 for core in cores):
        return lambda path: full(path) is not None
    hint = re.compile("|".join(re.escape(core) for core in sorted(set(cores), key=len, reverse=True))).search
    return lambda path: hint(path) is not None and full(path) is not None


def real_path(path: str) -> str | None:
    """``path`` (absolute) with every symlink followed, as the kernel would open it: a missing tail is kept as
    written and a dangling link is followed to where it points. None when it cannot be resolved (a loop, a
    component that is not a directory, a NUL byte)."""
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return None
    try:
        mode = os.lstat(real).st_mode
    except FileNotFoundError:
        return real  # a file still to be created
    except (OSError, ValueError):
        return None  # ELOOP, ENOTDIR…: a link realpath could not resolve lies on the way
    return None if stat.S_ISLNK(mode) else real


def _forms(path: str, cwd: str | None, resolve: Callable[[str], str | None]) -> set[str]:
    """The path as given, absolute (against ``cwd``, ``~`` expanded) and with symlinks followed."""
    path = path.replace("\\", "/")
    forms = {posixpath.normpath(path)}
    if path.startswith("~"):
        path = os.path.expanduser(path)
    joined: str | None = None
    if path.startswith("/"):
        joined = path
    elif cwd and cwd.replace("\\", "/").startswith("/"):
        joined = posixpath.join(cwd.replace("\\", "/"), path)
    if joined is not None:
        forms.add(posixpath.normpath(joined))
        # `..` collapsed first (as Node's path.resolve does) and as the kernel walks it (through symlinks)
        for candidate in {posixpath.normpath(joined), joined}:
            real = resolve(candidate)
            if real is not None:
                forms.add(real)
    return forms


def is_sensitive_path(path: str, cwd: str | None = None, *, resolve: Callable[[str], str | None] = real_path) -> bool:
    """A key, credential store, browser profile, start-up file, agent host setting, Reviewer's own file or git
    hook/config, or a pattern the operator added: by the path as given, its absolute form or its real target.
    ``resolve``: a memoised :func:`real_path`, when the caller resolves the same paths for other checks."""
    patterns = operator_patterns()
    matches = _matcher(patterns)
    workspaces = _workspaces_prefix(os.environ.get("HOME"), os.environ.get("XDG_DATA_HOME"))
    for form in _forms(path, cwd, resolve):
        relative = form.lstrip("~").lstrip("/")
        while relative.startswith("../"):
            relative = relative[3:]
        folded = relative.casefold()
        # A directory named whole is as sensitive as the files in it (``grep -r . ~/.ssh``, ``cp -r x/. ~/.claude``):
        # a directory pattern (``.ssh/``) matches the path as a directory too.
        if relative in ("", ".", "..") or not (matches(folded) or matches(folded.rstrip("/") + "/")):
            continue
        # The runtime's workspaces are the agents' ground inside the data directory: there only the table and the
        # operator's own patterns count (a symlink out of a workspace is judged by its target, another form).
        if form.startswith("/") and folded.startswith(workspaces) and not _matcher(patterns[2:])(folded):
            continue
        return True
    return False


@functools.lru_cache(maxsize=4)
def _workspaces_prefix(home: str | None, xdg_data: str | None) -> str:
    """The runtime's default workspaces directory (``reviewer_app.config.default_workspaces_dir``), as matched."""
    return (str(user_directory("data") / "workspaces").lstrip("/") + "/").casefold()
