"""Whether ``--allow-tools`` may settle a call, told without the shell parser, the risk module or ``pathspec``
where that is certain: the hook's lean path.

Why: ``--allow-tools`` is a wildcard, and a wildcard never settles a high-risk call or one with a context flag
(:func:`reviewer_app.domain.rules.wildcard_may_settle`). Deciding "high" takes bashlex, the sensitive-path matcher
and the command-effects tables, which cost a hook process about three times the interpreter's own start. Most calls
the flag names are plainly harmless: a read-only tool with no path, ``ls -la``, ``echo done``. This module says
"certainly not high" for those alone and "unsure" for everything else, which then goes to the full check. It never
says yes where the full check says high: a parity test holds it to ``wildcard_may_settle`` over commands, words
that name sensitive files and the operator's own patterns.

What counts as certain:

- no context flag (``dangerouslyDisableSandbox``, ``run_in_background``…), not an MCP tool;
- a shell tool whose command is one program of :data:`LOW_RISK_PROGRAMS` followed by options and words made only
  of letters, digits, ``_`` and ``-`` (no path, quoting, expansion, operator or redirection), none of which any
  sensitive pattern (the table, Reviewer's own files, the operator's config) could match as a file name, and none
  of which names a symlink in the workspace (its target is the risk module's to judge);
- another tool that is not a file tool and is given no path (under a path-like name, or any string that names a
  file as it stands, nested ones included) and no command (``command``, ``cmd``, ``script``…), or a file tool
  whose call names no path (for ``Grep``, ``Glob`` and ``LS``,
  which then search the working directory, only where no sensitive pattern could reach: not in ~/.ssh);
- a bare word is a file in the working directory, so a command naming one is certain only where no directory on
  the way to it could make a file sensitive (``cat config`` in ~/.ssh is the risk module's).

Standard library only, no dataclasses or ``typing`` at run time.
"""

from __future__ import annotations

import os
import re
import sys
from fnmatch import fnmatchcase

from reviewer_app.domain.patches import patch_paths
from reviewer_app.domain.plain_shell import plain_words
from reviewer_app.domain.sensitive_targets import (
    CONFIG_ENV,
    READ_SECRETS,
    SENSITIVE_TARGETS,
    holds_a_home,
    place_may_be_sensitive,
    read_config_patterns,
)
from reviewer_app.domain.tool_args import (
    METADATA_HINTS,
    NETWORK_TOOLS,
    READS_DIRECTORIES_WHOLE,
    SEARCH_FILTERS,
    SEARCHES_WORKING_DIRECTORY,
    argument_strings,
    command_of,
    file_url_path,
    flags_in,
    is_command_key,
    is_file_tool,
    is_path_key,
    is_shell_tool,
    looks_like_path,
    path_given,
    path_of,
)

TYPE_CHECKING = False  # no ``typing`` at run time (see the module docstring)
if TYPE_CHECKING:
    from typing import Any

APP_NAME = "reviewer-app"
LOW_RISK_PROGRAMS = frozenset({"echo", "pwd", "ls", "cat", "head", "tail", "wc", "true", "whoami"})
"""Programs the risk module and the command-effects tables name nowhere (a test holds them to that): with inert
words, nothing about them is high risk."""
TABLE = [pattern for pattern, _ in SENSITIVE_TARGETS]
_INERT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def wildcard_surely_settles(tool_name: str, arguments: Any, cwd: str | None) -> bool:
    """True only when ``wildcard_may_settle`` certainly says yes for this call in the workspace ``cwd``; False:
    unsure, ask it."""
    if flags_in(arguments) or tool_name.startswith("mcp__") or not isinstance(arguments, dict):
        return False
    if is_shell_tool(tool_name):
        command = command_of(tool_name, arguments)
        return command is not None and _inert_command(command, cwd)
    if not is_file_tool(tool_name):  # another host's read_many_files, a tool given a path or a command: judged there
        return tool_name not in READS_DIRECTORIES_WHOLE and not any(
            is_path_key(key)
            or is_command_key(key)
            or looks_like_path(value)
            or file_url_path(value) is not None
            or bool(patch_paths(value))
            or (tool_name in NETWORK_TOOLS and "://" in value and not _public_name_url(value))
            for key, value in argument_strings(arguments)
        )
    if path_of(tool_name, arguments) is not None or path_given(tool_name, arguments):
        return False  # a path is the risk module's to judge; disagreeing keys are high there
    if tool_name not in SEARCHES_WORKING_DIRECTORY:
        return True
    if tool_name in READS_DIRECTORIES_WHOLE and any(key in SEARCH_FILTERS for key in arguments):
        return False  # Grep's ``glob`` may name a secret's files below the top (``**/.env``): the risk module's
    patterns = _operator_patterns() if cwd is not None else None  # Grep with no path searches the workspace
    if patterns is None or _place_may_be_sensitive(cwd or "", [*patterns, *TABLE]):
        return False
    return tool_name not in READS_DIRECTORIES_WHOLE or not _may_hold_secrets(cwd or "", [*patterns, *READ_SECRETS])


_PUBLIC_NAME_URL = re.compile(
    r"(?i)https?://((?:[a-z0-9-]+\.)+([a-z][a-z0-9-]*[a-z0-9]))(?::[0-9]{1,5})?(?:[/?#][^\s\\]*)?"
)


def _public_name_url(value: str) -> bool:
    """Whether a fetch tool's URL plainly names a public host (a dotted name ending in letters, no userinfo): not an
    address (``2852039166`` is ``169.254.169.254``) nor the metadata service, which the risk module judges."""
    found = _PUBLIC_NAME_URL.fullmatch(value)
    if found is None or found.group(2).casefold() in ("internal", "goog", "local", "localhost"):
        return False
    return not any(hint in found.group(1).casefold() for hint in METADATA_HINTS)


def _may_hold_secrets(cwd: str, patterns: list[str]) -> bool:
    """Whether a search reading every file under ``cwd`` may take in a secret (``file_reach.secrets_within`` says
    which): ``cwd`` holds a home directory, or one of its entries could be named by a pattern's first part."""
    try:
        real = os.path.realpath(cwd)
        names = os.listdir(real)
    except (OSError, ValueError):
        return True
    if holds_a_home(real):
        return True
    firsts = {
        pattern.strip().lstrip("!").removeprefix("**/").lstrip("/").split("/")[0].casefold() for pattern in patterns
    }
    return any(fnmatchcase(name.casefold(), first) for name in names for first in firsts if first)


def _inert_command(command: str, cwd: str | None) -> bool:
    words = plain_words(command)
    if words is None or words[0] not in LOW_RISK_PROGRAMS:
        return False
    arguments = words[1:]
    if not all(_INERT_CHARS.issuperset(word) for word in arguments):
        return False
    names = [word for word in arguments if not word.startswith("-")]  # options are never read as paths
    if not names:
        return True
    if cwd is None or any(_names_a_link(cwd, word) for word in names):
        return False  # a name may be a symlink, whose target the risk module judges (``cat notes`` -> a key)
    patterns = _operator_patterns()
    if patterns is None:
        return False
    patterns += TABLE
    if _place_may_be_sensitive(cwd, patterns):
        return False  # a bare word is a file there: ``cat config`` in ~/.ssh (the risk module judges the path)
    return not any(_may_name(pattern, word) for word in names for pattern in patterns)


def _place_may_be_sensitive(cwd: str, patterns: list[str]) -> bool:
    """Whether a file named in ``cwd`` (as given or with symlinks followed) may be sensitive for where it is."""
    try:
        places = {os.path.normpath(cwd), os.path.realpath(cwd)}
    except (OSError, ValueError):
        return True
    return any(place_may_be_sensitive(place, patterns) for place in places)


def _names_a_link(cwd: str, word: str) -> bool:
    try:
        return os.path.islink(os.path.join(cwd, word))
    except (OSError, ValueError):
        return True


def _may_name(pattern: str, word: str) -> bool:
    """Whether a gitignore-style ``pattern`` could match ``word`` (letters, digits, ``_``, ``-``) taken as a path
    relative to nowhere; True when that cannot be told simply (an escape). A negation only takes matches away."""
    if pattern.startswith("!"):
        return False
    if "\\" in pattern:
        return True
    core = pattern.strip()
    if core.startswith("**/"):
        core = core[3:]
    core = core.strip("/")
    if not core:
        return True
    if "/" in core:  # a pattern with a directory in it never matches a bare name
        return False
    core, word = core.casefold(), word.casefold()
    if "[" in core:  # a character class: fnmatch reads it (compiling a regular expression: rare, so kept for last)
        return fnmatchcase(word, core)
    if not _INERT_CHARS.issuperset(core.replace("*", "").replace("?", "")):
        return False  # it needs a character no inert word has (``*.pem``, ``.env``)
    if "?" not in core and "*" not in core[:-1]:  # a name, or a name's start: no regular expression needed
        return word.startswith(core[:-1]) if core.endswith("*") else word == core
    return fnmatchcase(word, core)


def _operator_patterns() -> list[str] | None:
    """What ``sensitive.operator_patterns`` adds to the table, as far as a bare name goes: the config file's
    patterns, Reviewer's directories (their last part) and ``$REVIEWER_DB``; None when the config file's place
    cannot be worked out here (platformdirs would be needed)."""
    path = config_file()
    if path is None:
        return None
    patterns = [APP_NAME]  # the config and data directories end with it (anchored: only at the root a name)
    database = os.environ.get("REVIEWER_DB", "")
    if database and "://" not in database:
        name = os.path.basename(os.path.abspath(os.path.expanduser(database)))
        patterns += [name, name + "-*"]
    if os.path.exists(path):
        patterns += read_config_patterns(path)
    return patterns


def config_file() -> str | None:
    """``sensitive.config_file()``: ``$REVIEWER_CONFIG``, else platformdirs' user config directory on Linux with
    an absolute ``$XDG_CONFIG_HOME`` or ``$HOME`` (a test holds the two to each other); None elsewhere."""
    configured = os.environ.get(CONFIG_ENV)
    if configured:
        return configured
    if sys.platform != "linux":
        return None
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    home = os.environ.get("HOME", "")
    if os.path.isabs(xdg):
        return os.path.join(xdg, APP_NAME, "config.toml")
    if not xdg and os.path.isabs(home):
        return os.path.join(home, ".config", APP_NAME, "config.toml")
    return None
