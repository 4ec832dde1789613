"""Which programs read directories recursively, and which of their words are those directories.

Why: ``grep -r PRIVATE ~``, ``tar czf x.tgz ~`` and ``cp -r ~ /tmp/x`` read every file under the directory they
are given, keys included, though no word names a key. :func:`recursive_read` tells such a command and the
directories it walks, so the risk module can judge them by what they hold (:mod:`.file_reach`).

Operands are told apart from option values with each program's own options that take a value; a word that may be
either counts as an operand (the safe side: it is only judged).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RecursiveRead:
    """The directories a command reads recursively, and how it walks them."""

    operands: tuple[str, ...]
    hidden: bool = True
    """Whether hidden entries are read (ripgrep and ag skip them unless told)."""
    honours_gitignore: bool = False
    """Whether what git ignores is skipped (ripgrep's default)."""
    follows_links: bool = True
    """Whether a link among the entries is followed (``grep -R``, ``zip -r``; not ``grep -r`` or ``tar``)."""


# Per program: the short options that take a value, the long ones (written ``--name value``), and whether the
# first operand is a pattern rather than a path (unless -e/-f give the pattern).
_GREP_VALUES = ("efmABCdD", ("--regexp", "--file", "--max-count", "--after-context", "--before-context",
                             "--context", "--directories", "--devices", "--include", "--exclude", "--exclude-dir",
                             "--label", "--exclude-from"))  # fmt: skip
_RG_VALUES = ("efgtTmABCjMErd", ("--regexp", "--file", "--glob", "--iglob", "--type", "--type-not", "--max-count",
                                 "--after-context", "--before-context", "--context", "--threads", "--max-columns",
                                 "--encoding", "--replace", "--max-depth", "--pre", "--pre-glob", "--ignore-file",
                                 "--type-add", "--sort", "--sortr", "--max-filesize", "--path-separator"))  # fmt: skip
_AG_VALUES = ("ABCGgm", ("--after", "--before", "--context", "--file-search-regex", "--max-count", "--ignore",
                         "--depth", "--pager"))  # fmt: skip
_TAR_VALUES = ("fCTXbLVNgK", ("--file", "--directory", "--files-from", "--exclude-from", "--exclude", "--newer",
                              "--blocking-factor", "--listed-incremental", "--label", "--transform"))  # fmt: skip
_CP_VALUES = ("tS", ("--target-directory", "--suffix"))
_SCP_VALUES = ("iFPocJlS", ())
_RSYNC_VALUES = ("eBfT", ("--rsh", "--exclude", "--include", "--filter", "--exclude-from", "--include-from",
                          "--files-from", "--temp-dir", "--log-file", "--password-file"))  # fmt: skip
_ZIP_VALUES = ("bnOtP", ())
_DIFF_VALUES = ("xXSIF", ("--exclude", "--exclude-from", "--starting-file", "--ignore-matching-lines", "--label"))


def _split(args: tuple[str, ...], values: tuple[str, tuple[str, ...]]) -> tuple[list[str], list[str], dict[str, str]]:
    """(operands, option letters and long names seen, option values by letter or long name)."""
    short_values, long_values = values
    operands: list[str] = []
    seen: list[str] = []
    given: dict[str, str] = {}
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        if word == "--":
            operands.extend(args[index:])
            break
        if word.startswith("--"):
            name, equals, value = word.partition("=")
            seen.append(name)
            if not equals and name in long_values and index < len(args):
                value = args[index]
                index += 1
            given[name] = value
        elif word.startswith("-") and len(word) > 1:
            for position, letter in enumerate(word[1:], start=1):
                seen.append(letter)
                if letter in short_values:
                    value = word[position + 1 :]
                    if not value and index < len(args):
                        value = args[index]
                        index += 1
                    given[letter] = value
                    break
        else:
            operands.append(word)
    return operands, seen, given


def recursive_read(program: str, args: tuple[str, ...]) -> RecursiveRead | None:
    """The directories ``program args`` reads recursively (``.`` when it searches the one it runs in), or None
    when it reads none that way."""
    if program in ("grep", "egrep", "fgrep", "rgrep"):
        operands, seen, given = _split(args, _GREP_VALUES)
        recursive = program == "rgrep" or bool({"r", "R", "--recursive", "--dereference-recursive"} & set(seen))
        if not recursive and given.get("d", given.get("--directories")) != "recurse":
            return None
        follows = bool({"R", "--dereference-recursive"} & set(seen))
        return RecursiveRead(_searched(operands, given), follows_links=follows)
    if program in ("rg", "ag", "ack", "ack-grep"):
        operands, seen, given = _split(args, _RG_VALUES if program == "rg" else _AG_VALUES)
        if program == "rg" and "--files" in seen:
            return None  # lists the names it would search, reads none
        hidden = program.startswith("ack") or bool({"--hidden", ".", "--unrestricted"} & set(seen))
        hidden = hidden or seen.count("u") >= (2 if program == "rg" else 1)
        unignored = {"--no-ignore", "--no-ignore-vcs", "--skip-vcs-ignores", "--unrestricted", "u", "U"}
        honours = program in ("rg", "ag") and not unignored & set(seen)
        follows = bool({"L", "--follow"} & set(seen)) or (program == "ag" and "f" in seen)
        return RecursiveRead(
            _searched(operands, given), hidden=hidden, honours_gitignore=honours, follows_links=follows
        )
    if program in ("tar", "bsdtar", "gtar"):
        # The first word may hold the mode letters without a dash (``tar czf out.tgz dir``).
        words = args if not args or args[0].startswith("-") else ("-" + args[0], *args[1:])
        operands, seen, given = _split(words, _TAR_VALUES)
        creates = bool({"c", "r", "u", "--create", "--append", "--update"} & set(seen))
        directory = given.get("C", given.get("--directory"))
        if not creates:
            return None if directory is None else RecursiveRead((directory,))  # extracting into it: a write
        follows = bool({"h", "--dereference"} & set(seen))
        return RecursiveRead((*operands, *(() if directory is None else (directory,))), follows_links=follows)
    if program in ("cp", "scp", "rsync", "diff", "zip"):
        table = {"cp": _CP_VALUES, "scp": _SCP_VALUES, "rsync": _RSYNC_VALUES, "diff": _DIFF_VALUES}
        operands, seen, given = _split(args, table.get(program, _ZIP_VALUES))
        flags = {"r", "R", "a", "--recursive", "--archive", "--recurse-paths"}
        if program == "zip":
            flags = {"r", "R", "--recurse-paths", "--recurse-patterns"}
        if not flags & set(seen):
            return None
        local = [word for word in operands if not _remote(word)]
        targets = (value for name, value in given.items() if name in ("t", "--target-directory"))
        return RecursiveRead((*local, *targets), follows_links=_follows_links(program, set(seen)))
    return None


def _follows_links(program: str, seen: set[str]) -> bool:
    """cp and rsync copy a link as a link unless told; zip, scp and diff follow it unless told."""
    if program in ("cp", "rsync"):
        return bool({"L", "--dereference", "--copy-links", "k", "--copy-dirlinks"} & seen)
    return not {"y", "--symlinks", "--no-dereference"} & seen


def _searched(operands: list[str], given: dict[str, str]) -> tuple[str, ...]:
    """A search's paths: the operands after its pattern (when -e/-f do not give it), else the directory it runs
    in."""
    pattern_given = bool({"e", "f", "--regexp", "--file"} & set(given))
    paths = operands if pattern_given else operands[1:]
    return tuple(paths) or (".",)


def _remote(word: str) -> bool:
    """``host:path`` (scp, rsync): a file on another machine, not read here."""
    head, colon, _ = word.partition(":")
    return bool(colon) and "/" not in head and bool(head)


__all__ = ["RecursiveRead", "recursive_read"]
