"""What a path in a call reaches on the file system beyond its text: the files a wildcard expands to, and the
secrets a recursive read of a directory takes in.

Why: judged as text, ``cat ~/.s*/id_*`` names no key and ``grep -r PRIVATE ~`` names no file, yet the first prints
the SSH key and the second every key in the home directory (``tar czf x.tgz ~`` packs them all). So a wildcard is
expanded as bash would expand it when the call runs (its defaults, read by ``bracex`` and ``wcmatch``: braces
first, ``*`` does not match a leading dot, POSIX classes), and a directory a program reads recursively is searched
for secrets:

* the root, and every directory on the way to a home directory (``/``, ``/home``, ``~``): it holds the keys;
* else the directory's own entries: a key, a credential store, a browser profile or ``.env``
  (:data:`~reviewer_app.domain.sensitive_targets.READ_SECRETS`), a path the operator marked sensitive, or (for a
  program that follows links) a link to one of these or to a home directory. Deeper entries are not searched (a
  walk of a large tree would cost every call); documented in docs/security.md.

A program that leaves hidden entries alone (ripgrep, ag without ``--hidden``) is judged by the visible ones; one
that honours git's ignore rules (ripgrep, the Grep tool) skips what the directory's own ``.gitignore`` names,
inside a git repository. A wildcard matching more than :data:`MAX_GLOB_MATCHES` files cannot be checked: the
caller asks.
"""

from __future__ import annotations

import fnmatch
import functools
import itertools
import os
import posixpath
import re
from collections.abc import Callable

from reviewer_app.domain.sensitive import operator_patterns
from reviewer_app.domain.sensitive_targets import READ_SECRETS, holds_a_home

GLOB_CHARACTERS = frozenset("*?[")
MAX_GLOB_MATCHES = 1_000
"""More matches than this and a wildcard is not checked file by file: the call is asked."""
MAX_ENTRIES = 10_000
"""A directory with more entries than this is not listed whole; what was listed still counts."""


def has_wildcard(word: str) -> bool:
    """Whether the shell would expand ``word`` against the file system or into several words (``{a,b}``)."""
    return not GLOB_CHARACTERS.isdisjoint(word) or ("{" in word and "}" in word)


def glob_matches(word: str, cwd: str | None) -> list[str] | None:
    """The words bash makes of ``word`` when run in ``cwd``: braces expanded (``~/.{ssh,aws}/config``), then each
    wildcard expanded against the file system (``~`` and ``$HOME`` expanded, POSIX classes and extended patterns
    read as bash reads them), made absolute. A wildcard that matches nothing is dropped (the shell passes it as
    written: the caller judges ``word`` itself too). None when there are more than :data:`MAX_GLOB_MATCHES` or a
    relative wildcard has no ``cwd`` to expand in."""
    import bracex

    try:
        words = bracex.expand(word, limit=MAX_GLOB_MATCHES) if "{" in word else [word]
    except (bracex.ExpansionLimitException, ValueError, RecursionError):
        return None
    found: list[str] = []
    for each in words:
        if GLOB_CHARACTERS.isdisjoint(each):
            found.append(each)
            continue
        pattern = absolute_path(each, cwd)
        if pattern is None:
            return None
        found.extend(_expand_pattern(pattern, MAX_GLOB_MATCHES + 1 - len(found)))
        if len(found) > MAX_GLOB_MATCHES:
            return None
    return found


def _expand_pattern(pattern: str, at_most: int) -> list[str]:
    from wcmatch import glob as wildcard

    try:
        matches = wildcard.iglob(pattern, flags=wildcard.EXTGLOB | wildcard.FORCEUNIX)
        return [posixpath.normpath(path) for path in itertools.islice(matches, at_most)]
    except (OSError, ValueError, RecursionError):
        return [pattern]  # judged as written


def absolute_path(word: str, cwd: str | None) -> str | None:
    """``word`` as an absolute path (``~`` and ``$HOME`` expanded, a relative one joined to ``cwd``), or None when
    it is relative and ``cwd`` is unknown."""
    path = _expand_home(word.replace("\\", "/"))
    if path.startswith("/"):
        return path
    return posixpath.join(cwd, path) if cwd is not None and cwd.startswith("/") else None


_HOME_WITH_OPERATOR = re.compile(r"\$\{HOME(?:[:?=+%#/^,-][^}]*)?\}")
"""``${HOME:?}``, ``${HOME%/}``, ``${HOME:-/tmp}``: judged as the home directory (HOME is set)."""


def _expand_home(word: str) -> str:
    home = os.environ.get("HOME", "")
    operated = _HOME_WITH_OPERATOR.match(word)
    if operated and (operated.end() == len(word) or word[operated.end()] == "/"):
        return home + word[operated.end() :]
    if word == "$HOME" or word.startswith("$HOME/"):
        return home + word[len("$HOME") :]
    return os.path.expanduser(word) if word.startswith("~") else word


def secrets_within(
    directory: str, cwd: str | None, *, hidden: bool = True, honours_gitignore: bool = False, follows_links: bool = True
) -> str | None:
    """What secret a recursive read of ``directory`` (as given, relative to ``cwd``) takes in, for the reason
    shown; None when none is found (or ``directory`` is no directory). ``hidden``: whether the program reads
    hidden entries; ``honours_gitignore``: whether it skips what git ignores (ripgrep's default);
    ``follows_links``: whether it follows a link among the entries to its target."""
    path = absolute_path(directory, cwd)
    if path is None:
        return None
    try:
        real = os.path.realpath(path)
        if not os.path.isdir(real):
            return None
    except (OSError, ValueError):
        return None
    if holds_a_home(real):
        return "the home directories (keys, credentials)"
    ignored = _git_ignored(real) if honours_gitignore else None
    secret = _secret_matcher(operator_patterns())
    try:
        with os.scandir(real) as entries:
            for entry in itertools.islice(entries, MAX_ENTRIES):
                name = entry.name
                if not hidden and name.startswith("."):
                    continue
                try:
                    is_directory = entry.is_dir()
                except OSError:
                    is_directory = False
                if ignored is not None and ignored(name, is_directory):
                    continue
                full = posixpath.join(real, name)
                linked = follows_links and entry.is_symlink()
                if secret(full, is_directory) or (linked and _points_at_a_secret(full, secret)):
                    return posixpath.join(directory.rstrip("/") or "/", name)
    except OSError:
        return None
    return None


def _points_at_a_secret(link: str, secret: Callable[[str, bool], bool]) -> bool:
    """Whether a link among the entries leads to a secret or a home directory (``grep -R`` and ``cp -L`` follow
    it)."""
    try:
        target = os.path.realpath(link)
        return secret(target, os.path.isdir(target)) or holds_a_home(target)
    except (OSError, ValueError):
        return True


def secret_a_filter_names(pattern: str) -> str | None:
    """The form of a search's file filter (Grep's ``glob``, ``rg -g``, ``grep --include``) that names a secret's
    file or directory (``**/.env``, ``*.pem``, ``**/.ssh/**``), else None: the search then reads such files wherever
    they lie below, which the directory's own entries do not show. A part made only of wildcards (``*``, ``**``,
    ``*.*``) names nothing in particular and is left to the directory check."""
    import bracex

    try:
        forms = bracex.expand(pattern, limit=256)
    except Exception:
        return pattern
    samples = _secret_samples(operator_patterns())
    for form in forms:
        for written in form.replace("\\", "/").split("/"):
            part = written.lstrip("!").casefold()
            if any(character.isalnum() for character in re.sub(r"\[[^\]]*\]|[*?]", "", part)) and any(
                fnmatch.fnmatchcase(sample, part) for sample in samples
            ):
                return form
    return None


@functools.lru_cache(maxsize=8)
def _secret_samples(extra: tuple[str, ...]) -> tuple[str, ...]:
    """A name each secret pattern matches (its last part, wildcards as ``x``): ``.ssh``, ``id_rsax``, ``x.pem``."""
    names = []
    for pattern in (*READ_SECRETS, *extra):
        core = pattern.strip().lstrip("!/").removeprefix("**/").rstrip("/")
        names.append(core.rsplit("/", 1)[-1].replace("*", "x").casefold())
    return tuple(names)


@functools.lru_cache(maxsize=8)
def _secret_matcher(extra: tuple[str, ...]) -> Callable[[str, bool], bool]:
    """A test of an absolute path (a directory when the flag says so) against the secrets to read and the
    operator's patterns (gitignore syntax, as :mod:`.sensitive` matches them)."""
    import pathspec

    spec = pathspec.GitIgnoreSpec.from_lines([pattern.casefold() for pattern in (*READ_SECRETS, *extra)])

    def matches(path: str, is_directory: bool) -> bool:
        folded = path.casefold().lstrip("/")
        return bool(spec.match_file(folded) or (is_directory and spec.match_file(folded + "/")))

    return matches


def _git_ignored(directory: str) -> Callable[[str, bool], bool] | None:
    """What ``directory``'s own ``.gitignore`` ignores among its entries, when it lies in a git repository (as
    ripgrep reads it); None otherwise. Parent directories' and global ignore files are not read: an entry only
    they ignore counts (the safe side)."""
    if not _in_git_repository(directory):
        return None
    from reviewer_app.domain.safe_fs import read_regular

    try:  # a FIFO or device made there is refused, never waited on
        data, _ = read_regular(posixpath.join(directory, ".gitignore"), 1_000_000)
    except OSError:
        return None
    lines = data.decode("utf-8", errors="replace").splitlines()
    import pathspec

    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    return lambda name, is_directory: bool(spec.match_file(name + "/" if is_directory else name))


def _in_git_repository(directory: str) -> bool:
    place = directory
    for _ in range(64):
        if os.path.exists(posixpath.join(place, ".git")):
            return True
        parent = posixpath.dirname(place)
        if parent == place:
            return False
        place = parent
    return False


__all__ = [
    "GLOB_CHARACTERS",
    "MAX_GLOB_MATCHES",
    "absolute_path",
    "glob_matches",
    "has_wildcard",
    "secret_a_filter_names",
    "secrets_within",
]
