"""Which programs read directories recursively, and which of their words are those directories.

Why: ``grep -r PRIVATE ~``, ``tar czf x.tgz ~`` and ``cp -r ~ /tmp/x`` read every file under the directory they
are given, keys included, though no word names a key. :func:`recursive_read` tells such a command and the
directories it walks, so the risk module can judge them by what they hold (:mod:`.file_reach`).

Operands are told apart from option values with each program's own options that take a value; a word that may be
either counts as an operand (the safe side: it is only judged). A program that reads the files a list names (``tar
-T -``, ``zip -@``, ``cpio -o``, ``rsync --files-from``) says so in :attr:`RecursiveRead.listed`: the list (its
input or a file) is not in the text, so what it reads cannot be established, as with ``xargs``.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass

from reviewer_app.domain.tar_words import read_tar
from reviewer_app.domain.working_directory import placed


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
    listed: str | None = None
    """The option or word by which it also reads the files a list names (``-T -``, ``-@``), else None."""
    filters: tuple[str, ...] = ()
    """The patterns that choose which files it reads (``rg -g '*.env'``, ``grep --include=.env``)."""


# Per program: the short options that take a value and the long ones (written ``--name value``); the searches
# (grep, rg, ag) take their first operand as the pattern unless -e/-f give it (``_searched``).
_GREP_VALUES = ("efmABCdD", ("--regexp", "--file", "--max-count", "--after-context", "--before-context",
                             "--context", "--directories", "--devices", "--include", "--exclude", "--exclude-dir",
                             "--label", "--exclude-from"))  # fmt: skip
_RG_VALUES = ("efgtTmABCjMErd", ("--regexp", "--file", "--glob", "--iglob", "--type", "--type-not", "--max-count",
                                 "--after-context", "--before-context", "--context", "--threads", "--max-columns",
                                 "--encoding", "--replace", "--max-depth", "--pre", "--pre-glob", "--ignore-file",
                                 "--type-add", "--sort", "--sortr", "--max-filesize", "--path-separator"))  # fmt: skip
_AG_VALUES = ("ABCGgm", ("--after", "--before", "--context", "--file-search-regex", "--max-count", "--ignore",
                         "--depth", "--pager"))  # fmt: skip
_CP_VALUES = ("tS", ("--target-directory", "--suffix"))
_SCP_VALUES = ("iFPocJlS", ())
_RSYNC_VALUES = ("eBfT", ("--rsh", "--exclude", "--include", "--filter", "--exclude-from", "--include-from",
                          "--files-from", "--temp-dir", "--log-file", "--password-file"))  # fmt: skip
_ZIP_VALUES = ("bnOtP", ())
_DIFF_VALUES = ("xXSIF", ("--exclude", "--exclude-from", "--starting-file", "--ignore-matching-lines", "--label"))
_PAX_VALUES = ("fsxbBoGTU", ())
_CPIO_VALUES = ("HFIOMERC", ("--format", "--file", "--owner", "--message", "--pattern-file", "--io-size"))
_GIT_GREP_VALUES = ("efABCmO", ("--regexp", "--file", "--max-depth", "--threads", "--open-files-in-pager",
                                "--after-context", "--before-context", "--context", "--max-count"))  # fmt: skip
# Backup and cloud-copy tools: the global options and the subcommand's, in one table (the subcommand is their
# first operand).
_RCLONE_VALUES = ("", ("--config", "--exclude", "--include", "--filter", "--exclude-from", "--include-from",
                       "--filter-from", "--files-from", "--files-from-raw", "--transfers", "--checkers", "--bwlimit",
                       "--log-file", "--log-level", "--backup-dir", "--max-age", "--min-age", "--max-size",
                       "--min-size", "--max-depth", "--stats", "--suffix", "--compare-dest",
                       "--copy-dest", "--addr", "--user", "--pass", "--htpasswd", "--baseurl"))  # fmt: skip
_AWS_VALUES = ("", ("--profile", "--region", "--endpoint-url", "--output", "--exclude", "--include", "--acl",
                    "--storage-class", "--sse", "--sse-kms-key-id", "--content-type", "--cache-control", "--grants",
                    "--metadata", "--metadata-directive", "--expires", "--page-size", "--source-region",
                    "--request-payer", "--checksum-algorithm", "--content-encoding", "--ca-bundle",
                    "--cli-read-timeout", "--cli-connect-timeout"))  # fmt: skip
_GSUTIL_VALUES = ("ohasxyzj", ())
_BORG_VALUES = ("eCcr", ("--exclude", "--exclude-from", "--pattern", "--patterns-from", "--comment", "--compression",
                         "--chunker-params", "--files-cache", "--stdin-name", "--timestamp", "--checkpoint-interval",
                         "--repo", "--remote-path", "--lock-wait", "--umask", "--paths-delimiter",
                         "--upload-ratelimit"))  # fmt: skip
_RESTIC_VALUES = ("rpoeH", ("--repo", "--repository-file", "--password-file", "--password-command", "--option",
                            "--exclude", "--iexclude", "--exclude-file", "--iexclude-file", "--tag", "--host",
                            "--parent", "--time", "--files-from", "--files-from-raw", "--files-from-verbatim",
                            "--exclude-larger-than", "--cache-dir", "--limit-upload", "--limit-download",
                            "--key-hint", "--stdin-filename", "--compression", "--pack-size",
                            "--cacert", "--tls-client-cert"))  # fmt: skip
_LISTS = {  # per program: the options (short letters, long names) by which it reads the files a list names
    "zip": {"@", "--names-stdin"},
    "rsync": {"--files-from"},
    "rclone": {"--files-from", "--files-from-raw"},
    "gsutil": {"I"},
    "borg": {"--paths-from-stdin", "--paths-from-command"},
    "restic": {"--files-from", "--files-from-raw", "--files-from-verbatim"},
}


def split_options(
    args: tuple[str, ...], values: tuple[str, tuple[str, ...]]
) -> tuple[list[str], list[str], dict[str, list[str]]]:
    """(operands, option letters and long names seen, every value given to each option, by letter or long
    name)."""
    short_values, long_values = values
    operands: list[str] = []
    seen: list[str] = []
    given: dict[str, list[str]] = {}
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
            given.setdefault(name, []).append(value)
        elif word.startswith("-") and len(word) > 1:
            for position, letter in enumerate(word[1:], start=1):
                seen.append(letter)
                if letter in short_values:
                    value = word[position + 1 :]
                    if not value and index < len(args):
                        value = args[index]
                        index += 1
                    given.setdefault(letter, []).append(value)
                    break
        else:
            operands.append(word)
    return operands, seen, given


def recursive_read(program: str, args: tuple[str, ...]) -> RecursiveRead | None:
    """The directories ``program args`` reads recursively (``.`` when it searches the one it runs in), or None
    when it reads none that way."""
    if program in ("grep", "egrep", "fgrep", "rgrep", "ugrep", "ug"):
        operands, seen, given = split_options(args, _GREP_VALUES)
        # ugrep searches a directory it is given, or with none the working directory, recursively.
        recursive = program in ("rgrep", "ugrep", "ug")
        recursive = recursive or bool({"r", "R", "--recursive", "--dereference-recursive"} & set(seen))
        if not recursive and "recurse" not in given.get("d", given.get("--directories", [])):
            return None
        follows = bool({"R", "--dereference-recursive"} & set(seen))
        ugrep_globs = given.get("g", []) if program in ("ugrep", "ug") else []
        filters = (*given.get("--include", []), *ugrep_globs)
        return RecursiveRead(_searched(operands, given), follows_links=follows, filters=tuple(filters))
    if program in ("rg", "ag", "ack", "ack-grep"):
        operands, seen, given = split_options(args, _RG_VALUES if program == "rg" else _AG_VALUES)
        if program == "rg" and "--files" in seen:
            return None  # lists the names it would search, reads none
        configured = program == "rg" and ripgrep_configured() and "--no-config" not in seen
        hidden = program.startswith("ack") or configured or bool({"--hidden", ".", "--unrestricted"} & set(seen))
        hidden = hidden or seen.count("u") >= (2 if program == "rg" else 1)
        unignored = {"--no-ignore", "--no-ignore-vcs", "--skip-vcs-ignores", "--unrestricted", "u", "U"}
        honours = program in ("rg", "ag") and not configured and not unignored & set(seen)
        follows = bool({"L", "--follow"} & set(seen)) or (program == "ag" and "f" in seen)
        filters = (*given.get("g", []), *given.get("--glob", []), *given.get("--iglob", []))
        return RecursiveRead(
            _searched(operands, given),
            hidden=hidden,
            honours_gitignore=honours,
            follows_links=follows,
            filters=filters if program == "rg" else (),
        )
    if program in ("tar", "bsdtar", "gtar", "gnutar"):
        return _tar(program, args)
    if program in ("cp", "scp", "rsync", "diff", "zip"):
        table = {"cp": _CP_VALUES, "scp": _SCP_VALUES, "rsync": _RSYNC_VALUES, "diff": _DIFF_VALUES}
        operands, seen, given = split_options(args, table.get(program, _ZIP_VALUES))
        flags = {"r", "R", "a", "--recursive", "--archive", "--recurse-paths"}
        if program == "zip":
            flags = {"r", "R", "--recurse-paths", "--recurse-patterns"}
        listed = _listed(program, seen)
        if not flags & set(seen) and listed is None:
            return None
        local = [word for word in operands if not remote_path(word)] if flags & set(seen) else []
        targets = (value for name in ("t", "--target-directory") for value in given.get(name, []))
        return RecursiveRead((*local, *targets), follows_links=_follows_links(program, set(seen)), listed=listed)
    if program == "jar":
        return _jar(args)
    if program in ("7z", "7za", "7zr", "7zz"):
        return _seven_zip(args)
    if program == "unzip":
        _, _, given = split_options(args, ("dPOIx", ()))
        return RecursiveRead(tuple(given["d"])) if given.get("d") else None  # extracts into -d DIR (a write)
    if program in ("cpio", "pax"):
        return _cpio_or_pax(program, args)
    if program == "git":
        return _git(args)
    if program == "ln":
        return _link(args)
    if re.fullmatch(r"python[0-9.]*|php[0-9.]*", program):
        return _file_server(program, args)
    return _backup_or_cloud_copy(program, args)


def ripgrep_configured() -> bool:
    """Whether ripgrep reads options from a config file here (``$RIPGREP_CONFIG_PATH``): it may say ``--hidden`` or
    ``--no-ignore``, so hidden and ignored entries count."""
    return bool(os.environ.get("RIPGREP_CONFIG_PATH"))


def _tar(program: str, args: tuple[str, ...]) -> RecursiveRead | None:
    """``tar c``: what it archives, each where the ``-C`` before it leads (:mod:`.tar_words`, which the preview
    reads too); extracting in ``-C DIR``: that directory (a write); comparing (``tar d``): the files there."""
    words = read_tar(args, program)
    if not words.creates:
        judged = words.extracts or "d" in words.modes
        return RecursiveRead(words.directories) if judged and words.directories else None
    lists = " ".join(f"-T {listed.word}" for listed in words.lists)
    return RecursiveRead(
        tuple(path.placed for path in words.reads),
        follows_links=words.follows_links,
        listed=lists or None,
    )


_JAR_VALUES = ("fmeCp", ("--file", "--manifest", "--main-class", "--module-version", "--module-path", "--release",
                        "--date", "--hash-modules"))  # fmt: skip


def _jar(args: tuple[str, ...]) -> RecursiveRead | None:
    """``jar c|u``: reads its operands whole, the operand after ``-C DIR`` in that directory; the first word may
    bundle the letters (``jar cvf x.jar dir``, whose ``f``, ``m`` and ``e`` take the next words in order)."""
    letters: list[str] = []
    words = list(args)
    if words and not words[0].startswith("-"):
        first = words.pop(0)
        letters = list(first)
        words = words[sum(letter in "fme" for letter in first) :]
    paths: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word == "-C" and index + 1 < len(words):
            paths.append(placed(words[index + 1], words[index]))
            index += 2
        elif word.startswith("--"):
            name, equals, _ = word.partition("=")
            letters.append(name)
            index += 1 if not equals and name in _JAR_VALUES[1] else 0
        elif word.startswith("-") and len(word) > 1:
            for position, letter in enumerate(word[1:], start=1):
                letters.append(letter)
                if letter in _JAR_VALUES[0]:
                    index += 1 if position == len(word) - 1 else 0  # its value: the next word
                    break
        else:
            paths.append(word)
    if not {"c", "u", "--create", "--update"} & set(letters):
        return None
    return RecursiveRead(tuple(paths))


_SEVEN_ZIP_INCLUDE = re.compile(r"-i(?:r[-0]?)?([!@])(.*)")


def _seven_zip(args: tuple[str, ...]) -> RecursiveRead | None:
    """``7z a|u ARCHIVE [FILE|@LIST]...``: options are single words (``-tzip``, ``-xr!*.o``); a directory is read
    whole, with no file named the working directory; a link is followed unless ``-snl``."""
    words = [word for word in args if not word.startswith("-")]
    if words[:1] in (["x"], ["e"]):  # extracts into -oDIR (a write)
        into = tuple(word[2:] for word in args if word.startswith("-o") and len(word) > 2)
        return RecursiveRead(into) if into else None
    if not words or words[0] not in ("a", "u"):
        return None
    included = [found.group(1) + found.group(2) for found in map(_SEVEN_ZIP_INCLUDE.match, args) if found]
    files = [*words[2:], *(word.removeprefix("!") for word in included)]  # -ir!DIR, -i@LIST
    listed = next((word for word in files if word.startswith("@")), None)
    paths = tuple(word for word in files if not word.startswith("@"))
    return RecursiveRead(paths or ((".",) if listed is None else ()), follows_links="-snl" not in args, listed=listed)


def _cpio_or_pax(program: str, args: tuple[str, ...]) -> RecursiveRead | None:
    """``cpio -o``/``-p`` read the files named on their input; ``pax -w`` its operands whole, or with none the
    files named on its input."""
    operands, seen, _ = split_options(args, _CPIO_VALUES if program == "cpio" else _PAX_VALUES)
    if program == "cpio":
        creates = {"o", "p", "--create", "--pass-through"} & set(seen)
        return RecursiveRead((), listed=f"{program} -o (names from its input)") if creates else None
    if "w" not in seen:
        return None
    if operands:
        return RecursiveRead(tuple(operands), follows_links=bool({"L", "H"} & set(seen)))
    return RecursiveRead((), listed="pax -w (names from its input)")


def _git(args: tuple[str, ...]) -> RecursiveRead | None:
    """``git grep --no-index``/``--untracked`` searches the files of a directory, not only what git tracks, and
    ``git diff --no-index`` prints two trees' files; both from ``git -C DIR``'s directory."""
    index, directories = 0, []
    while index < len(args) and args[index].startswith("-"):
        if args[index] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") and index + 1 < len(args):
            if args[index] == "-C":
                directories.append(args[index + 1])
            index += 1
        index += 1
    sub, rest = (args[index], args[index + 1 :]) if index < len(args) else ("", ())
    if sub not in ("grep", "diff") or not {"--no-index", "--untracked"} & set(rest):
        return None
    operands, _, given = split_options(rest, _GIT_GREP_VALUES if sub == "grep" else ("", ()))
    paths = _searched(operands, given) if sub == "grep" else tuple(operands)
    moved = tuple(f"{directory.rstrip('/')}/{path}" for directory in directories for path in paths)
    return RecursiveRead(moved or paths)


_BACKUP_OR_CLOUD_COPY = {  # program: (its values table, the subcommands that read local directories whole)
    "rclone": (_RCLONE_VALUES, ("copy", "sync", "move", "copyto", "moveto", "bisync", "serve")),
    "aws": (_AWS_VALUES, ("sync", "cp", "mv")),
    "gsutil": (_GSUTIL_VALUES, ("cp", "rsync", "mv")),
    "borg": (_BORG_VALUES, ("create",)),
    "restic": (_RESTIC_VALUES, ("backup",)),
}


def copy_option_values(program: str) -> tuple[str, tuple[str, ...]]:
    """The options of a backup or cloud-copy program (``aws``, ``gsutil``, ``rclone``…) that take a value, as
    :func:`split_options` reads them."""
    return _BACKUP_OR_CLOUD_COPY[program][0]


def _backup_or_cloud_copy(program: str, args: tuple[str, ...]) -> RecursiveRead | None:
    """``rclone copy``, ``aws s3 sync`` (``cp``/``mv`` with ``--recursive``), ``gsutil cp -r``, ``borg create``,
    ``restic backup``: the local directories they upload or store, read whole."""
    if program not in _BACKUP_OR_CLOUD_COPY:
        return None
    values, subcommands = _BACKUP_OR_CLOUD_COPY[program]
    operands, seen, _ = split_options(args, values)
    if program == "aws":
        operands = operands[1:] if operands[:1] == ["s3"] else []
    if not operands or operands[0] not in subcommands:
        return None
    recursive = bool({"r", "R", "--recursive"} & set(seen)) or program in ("rclone", "borg", "restic")
    recursive = recursive or (program == "aws" and operands[0] == "sync")
    listed = _listed(program, seen)
    if not recursive and listed is None:
        return None
    # borg's first operand is REPO::ARCHIVE, rclone serve's the protocol
    paths = operands[2:] if program == "borg" or operands[0] == "serve" else operands[1:]
    follows = (program == "aws" and "--no-follow-symlinks" not in seen) or (program == "gsutil" and "e" not in seen)
    follows = follows or bool({"L", "--copy-links"} & set(seen))
    local = tuple(word for word in paths if not remote_path(word)) if recursive else ()
    return RecursiveRead(local, follows_links=follows, listed=listed)


def _link(args: tuple[str, ...]) -> RecursiveRead | None:
    """``ln [-s] TARGET… LINK|DIR`` gives each target another name, which the words after it use (``ln -s .. h &&
    grep -r x h/keys``): a target is judged as a tree read whole, from the working directory and (a symbolic link's
    relative target) from the link's own directory."""
    operands, _, given = split_options(args, ("St", ("--suffix", "--target-directory")))
    directories = [*given.get("t", []), *given.get("--target-directory", [])]
    if not directories and len(operands) > 1:
        link = operands.pop()
        directories = [link if len(operands) > 1 else posixpath.dirname(link)]
    relative = [word for word in operands if not word.startswith(("/", "~", "$"))]
    moved = [posixpath.join(place, word) for place in directories if place for word in relative]
    return RecursiveRead((*operands, *moved)) if operands else None


def _file_server(program: str, args: tuple[str, ...]) -> RecursiveRead | None:
    """``python -m http.server`` and ``php -S`` serve every file of a directory (``-d``/``-t``, else the one they
    run in) to whoever connects."""
    if program.startswith("php"):
        if "-S" not in args:
            return None
        _, _, given = split_options(args, ("StcdfrBRFEz", ()))
        return RecursiveRead(tuple(given.get("t", [])) or (".",))
    module = [word for position, word in enumerate(args) if position and args[position - 1] == "-m"]
    if "-mhttp.server" not in args and module[:1] != ["http.server"]:
        return None
    start = args.index("-mhttp.server" if "-mhttp.server" in args else "http.server") + 1
    _, _, given = split_options(args[start:], ("db", ("--directory", "--bind", "--protocol")))
    return RecursiveRead(tuple([*given.get("d", []), *given.get("--directory", [])]) or (".",))


def _listed(program: str, seen: list[str]) -> str | None:
    """The option by which ``program`` reads the files a list names, when it is given."""
    options = _LISTS.get(program, set()) & set(seen)
    return min(options) if options else None


def _follows_links(program: str, seen: set[str]) -> bool:
    """cp and rsync copy a link as a link unless told; zip, scp and diff follow it unless told."""
    if program in ("cp", "rsync"):
        return bool({"L", "--dereference", "--copy-links", "k", "--copy-dirlinks", "--copy-unsafe-links"} & seen)
    return not {"y", "--symlinks", "--no-dereference"} & seen


def _searched(operands: list[str], given: dict[str, list[str]]) -> tuple[str, ...]:
    """A search's paths: the operands after its pattern (when -e/-f do not give it), else the directory it runs
    in."""
    pattern_given = bool({"e", "f", "--regexp", "--file"} & set(given))
    paths = operands if pattern_given else operands[1:]
    return tuple(paths) or (".",)


def remote_path(word: str) -> bool:
    """``host:path`` (scp, rsync): a file on another machine, not read here."""
    head, colon, _ = word.partition(":")
    return bool(colon) and "/" not in head and bool(head)


__all__ = [
    "RecursiveRead",
    "copy_option_values",
    "recursive_read",
    "remote_path",
    "ripgrep_configured",
    "split_options",
]
