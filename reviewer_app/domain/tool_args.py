"""Which tools are shells and file tools, and which argument of each holds its command, path or context flags; the
one line that says what a call would do.

Why: rules, risk and session waivers must agree on what a call does, and these tables are fixed on the operator's
side (request data never decides them, so it can never widen a rule). Standard library only and no dataclasses:
the hook's lean path reads a call with them (:mod:`reviewer_app.domain.toolcall` re-exports them with
``ToolCall``).
"""

from __future__ import annotations

TYPE_CHECKING = False  # no ``typing`` at run time: the hook's lean path imports this module
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, Literal

# Reviewer's run_shell; Claude Code's Bash; Codex's shell, local_shell and exec_command; the legacy names
# Reviewer's first policy treated as shells. ``mcp__*`` tools are never assumed to be shells by their name.
# Other hosts: Gemini CLI's and Qwen Code's run_shell_command, Factory's Execute, Cursor's shell event (recorded as
# Shell); Copilot's and OpenCode's bash is already here.
SHELL_TOOLS = frozenset(
    {"run_shell", "Bash", "bash", "shell", "local_shell", "exec_command", "exec"}
    | {"run_shell_command", "Execute", "Shell"}
)

COMMAND_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "run_shell": ("command",),
    "Bash": ("command",),
    "bash": ("command",),
    "shell": ("command",),
    "local_shell": ("command",),
    "exec_command": ("cmd", "command"),
    "exec": ("command",),
    "run_shell_command": ("command",),
    "Execute": ("command",),
    "Shell": ("command",),
}

# Reviewer's file tools, Claude Code's file tools, then the other hosts': Gemini CLI / Qwen Code (write_file,
# read_file with file_path; replace, edit), Copilot (create, edit, view with path), Factory (Create), OpenCode
# (write, edit, read with filePath). Writers and readers are told apart for the risk module. A tool with several
# keys is read by whichever is present; two that disagree give no path (see ``path_of``).
PATH_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "write_file": ("path", "file_path"),
    "read_file": ("path", "file_path"),
    "list_dir": ("path",),
    "replace": ("file_path",),
    "edit": ("file_path", "path", "filePath"),
    "create": ("path",),
    "view": ("path",),
    "list_directory": ("path", "dir_path"),
    "Create": ("file_path",),
    "write": ("filePath",),
    "read": ("filePath",),
    "Write": ("file_path",),
    "Edit": ("file_path",),
    "MultiEdit": ("file_path",),
    "Read": ("file_path",),
    "NotebookEdit": ("notebook_path",),
    "NotebookRead": ("notebook_path",),
    "Glob": ("path",),
    "Grep": ("path",),
    "LS": ("path",),
}
FILE_TOOLS = frozenset(PATH_ARGUMENTS)
SEARCHES_WORKING_DIRECTORY = frozenset({"Glob", "Grep", "LS"})
"""File tools that search the working directory when given no path."""
READS_DIRECTORIES_WHOLE = frozenset({"Grep", "grep_search", "search_file_content", "read_many_files", "grep"})
"""Tools that read every file of a directory they are given (Claude Code's Grep, Gemini CLI's and Qwen Code's
grep_search and read_many_files, OpenCode's grep), not just its names."""
SEARCH_FILTERS = frozenset({"glob", "include", "includes", "file_pattern"})
"""Arguments of a search tool whose pattern chooses which files it reads (Claude Code's Grep ``glob``, Gemini CLI's
grep_search and OpenCode's grep ``include``)."""
PATTERNS_READ_AS_PATHS: dict[str, tuple[str, ...]] = {"read_many_files": ("include",)}
"""Arguments whose patterns a tool reads as more paths, though their names do not say so (Gemini CLI's
read_many_files adds ``include`` to ``paths``)."""
_PATH_KEY_PARTS = ("path", "file", "dir", "folder", "source", "destination", "target")


_COMMAND_KEYS = frozenset({"command", "cmd", "script", "shellcommand", "commandline", "bash", "shell"})
METADATA_NAME_HINTS = ("169.254.", "169-254-", "a9fea9fe", "metadata", "instance-data")
"""Parts of a host name that point at a cloud's metadata service (``instance-data`` is AWS's name for it), also
through a DNS name that embeds the address (``169.254.169.254.nip.io``): such a URL is judged as reaching it."""
WILDCARD_DNS = ("nip.io", "sslip.io", "xip.io", "traefik.me", "nip.direct")
"""DNS services whose names resolve to the address written in them (``10-0-0-1.nip.io``, ``fd00-ec2--254.sslip.io``):
the risk module reads the address out of the name."""
METADATA_HINTS = (*METADATA_NAME_HINTS, *WILDCARD_DNS)
"""A host with any of these may be the metadata service: no quick path settles a fetch of it."""
MAX_ARGUMENT_STRINGS = 256
"""How many strings of a call's arguments are judged (nested objects and lists included)."""


def file_url_path(value: object) -> str | None:
    """The local path a ``file:`` URL argument names (``url``, ``uri`` of a fetch tool), else None: ``file:///x``,
    ``file://localhost/x`` and, as the WHATWG parser reads them, ``file:/x`` and ``file:x``."""
    if not isinstance(value, str) or value[:5].lower() != "file:":
        return None
    rest = value[5:].replace("\\", "/")
    if rest.startswith("//"):
        rest = rest[2:]
        return rest if rest.startswith("/") else "/" + rest.partition("/")[2]  # file://localhost/x
    return "/" + rest.lstrip("/")


def is_command_key(key: str) -> bool:
    """Whether an argument's name says it holds a shell command (``command``, ``cmd``, ``script``…): a tool outside
    the shell table given one is judged as running it."""
    return key.replace("_", "").replace("-", "").casefold() in _COMMAND_KEYS


def looks_like_path(value: str) -> bool:
    """Whether a string names a file as it stands (absolute, ``~``, ``./``, a dotfile, a ``file:`` URL), whatever
    the argument's name."""
    return 0 < len(value) <= 4096 and "\n" not in value and value.startswith(("/", "~", ".", "file:", "FILE:"))


def argument_strings(arguments: Any, key: str = "", depth: int = 0) -> Iterator[tuple[str, str]]:
    """Every string in a call's arguments as (the name of the argument that holds it, the string), nested objects
    and lists included (at most :data:`MAX_ARGUMENT_STRINGS`, five levels deep)."""
    found = 0
    stack: list[tuple[str, Any, int]] = [(key, arguments, depth)]
    while stack and found < MAX_ARGUMENT_STRINGS:
        name, value, level = stack.pop()
        if isinstance(value, str):
            found += 1
            yield name, value
        elif isinstance(value, dict) and level < 5:
            stack.extend((str(inner), item, level + 1) for inner, item in reversed(list(value.items())[:256]))
        elif isinstance(value, list) and level < 5:
            stack.extend((name, item, level + 1) for item in reversed(value[:256]))


def turns_off_git_ignore(arguments: Any) -> bool:
    """Whether a search tool's arguments tell it to read what git ignores (read_many_files'
    ``respect_git_ignore: false``, also inside ``file_filtering_options``)."""
    if not isinstance(arguments, dict):
        return False
    for key, value in arguments.items():
        folded = str(key).replace("_", "").casefold()
        if "gitignore" in folded and value is False:
            return True
        if isinstance(value, dict) and turns_off_git_ignore(value):
            return True
    return False


def is_path_key(key: str) -> bool:
    """Whether an argument's name says it holds a path (``path``, ``paths``, ``dir_path``, ``src``…)."""
    folded = key.casefold()
    return folded in ("src", "dest", "from", "to") or any(part in folded for part in _PATH_KEY_PARTS)


WRITING_FILE_TOOLS = frozenset(
    {"write_file", "Write", "Edit", "MultiEdit", "NotebookEdit", "replace", "edit", "create", "Create", "write"}
)
NETWORK_TOOLS = frozenset(
    {"WebFetch", "WebSearch", "web_fetch", "fetch_url", "webfetch", "FetchUrl", "google_web_search"}
)

CONTEXT_FLAG_RISKS: dict[str, tuple[Literal["medium", "high"], str]] = {
    "dangerouslyDisableSandbox": ("high", "runs outside the sandbox (dangerouslyDisableSandbox)"),
    "run_in_background": ("medium", "keeps running in the background (run_in_background)"),
}
"""Boolean arguments that widen what a call may do, with the risk level and the reason the window shows."""

_SHELLS_WITH_SCRIPT = frozenset({"bash", "sh", "zsh", "dash", "/bin/bash", "/bin/sh", "/bin/zsh", "/usr/bin/bash"})
_SCRIPT_FLAGS = frozenset({"-c", "-lc", "-ic", "-lic", "-ilc"})


def is_shell_tool(tool_name: str) -> bool:
    """Whether a tool runs shell commands, from the fixed operator-side set (never from request data)."""
    return tool_name in SHELL_TOOLS


def is_file_tool(tool_name: str) -> bool:
    return tool_name in FILE_TOOLS


def command_of(tool_name: str, arguments: Any) -> str | None:
    """The shell command a shell tool would run, or None (not a shell tool, or no readable command)."""
    if tool_name not in COMMAND_ARGUMENTS or not isinstance(arguments, dict):
        return None
    present = [key for key in COMMAND_ARGUMENTS[tool_name] if arguments.get(key) is not None]
    if len(present) > 1:  # `cmd` and `command` both given: which one runs is not ours to guess
        return None
    for key in present:
        value = arguments[key]
        if isinstance(value, str):
            return value
        if isinstance(value, list) and value and all(isinstance(part, str) for part in value):
            if len(value) == 3 and value[0] in _SHELLS_WITH_SCRIPT and value[1] in _SCRIPT_FLAGS:
                return str(value[2])
            import shlex  # only for an argv list (Codex): a hook call with a command string does not load it

            return shlex.join(value)
    return None


def path_of(tool_name: str, arguments: Any) -> str | None:
    """The file path a file tool touches, or None."""
    if tool_name not in PATH_ARGUMENTS or not isinstance(arguments, dict):
        return None
    values: set[str] = {arguments[key] for key in PATH_ARGUMENTS[tool_name] if isinstance(arguments.get(key), str)}
    if len(values) != 1:  # none, or two keys naming different files: which one the host opens is not ours to guess
        return None
    return values.pop()


def path_given(tool_name: str, arguments: Any) -> bool:
    """Whether the call gives any of its tool's path arguments (with :func:`path_of` None: they disagree, or one
    is not a string, and which file the host opens cannot be told)."""
    if tool_name not in PATH_ARGUMENTS or not isinstance(arguments, dict):
        return False
    return any(arguments.get(key) is not None for key in PATH_ARGUMENTS[tool_name])


def is_mcp_tool(tool_name: str) -> bool:
    return mcp_parts(tool_name) is not None


def mcp_parts(tool_name: str) -> tuple[str, str] | None:
    """``mcp__server__tool`` → ("server", "tool"); None for other names."""
    if not tool_name.startswith("mcp__"):
        return None
    server, separator, tool = tool_name[len("mcp__") :].partition("__")
    if not server or not separator or not tool:
        return None
    return server, tool


def flags_in(arguments: Any) -> frozenset[str]:
    """The widening flags a call with these arguments sets (any value but an explicit ``false`` counts: the host
    may coerce it)."""
    arguments = arguments if isinstance(arguments, dict) else {}
    return frozenset(flag for flag in CONTEXT_FLAG_RISKS if arguments.get(flag) not in (None, False, "false", 0))


_SUMMARY_COMMAND_KEYS = ("command", "cmd")
"""Where a call's command is, for its one-line summary (the first of these that holds one)."""
_PATH_KEYS = ("file_path", "notebook_path", "filePath", "path", "dir_path", "absolute_path")
"""Where the agent CLIs' tools keep the one path a call is about (Claude Code's Write, Edit, Read, NotebookEdit,
Glob, Grep; Gemini CLI's and Qwen Code's file tools; OpenCode's ``filePath``)."""
_LABELLED_KEYS = ("question", "query")
"""Texts shown after their key's name: an agent's question, a search's query."""
_TASK_KEYS = ("url", "description", "prompt")
"""What a fetch (WebFetch's ``url``) or a sub-agent (Task's ``description``, else its ``prompt``) is about."""


def summarize_arguments(args: Any, limit: int = 160) -> str:
    """One line that says what a tool call would do, for inbox rows, the search and ``pending``: the command, the
    path (after the pattern a search looks for), the URL, the question; else the arguments in short. A long line
    loses its middle, never its end: the end of a command (``| sh``, ``&& rm -rf /``) and a path's file name are
    what tell calls apart."""
    if not isinstance(args, dict):
        return elide_middle(" ".join(_short(args, limit).split()), limit)
    command = next((_command_text(args[key]) for key in _SUMMARY_COMMAND_KEYS if args.get(key)), None)
    if command:
        return elide_middle(" ".join(command.split()), limit)
    path = next((args[key] for key in _PATH_KEYS if isinstance(args.get(key), str) and args[key]), None)
    pattern = args.get("pattern")
    if isinstance(pattern, str) and pattern:
        where = f" in {elide_path(path, limit // 2)}" if path else ""
        return elide_middle(" ".join(pattern.split()), limit - len(where)) + where
    if path:
        return elide_path(" ".join(path.split()), limit)
    for key in _LABELLED_KEYS + _TASK_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value:
            text = f"{key}: {value}" if key in _LABELLED_KEYS else value
            return elide_middle(" ".join(text.split()), limit)
    text = ", ".join(f"{key}={_short(value, 40)}" for key, value in list(args.items())[:4])
    return elide_middle(" ".join(text.split()), limit)


def _command_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(part, str) for part in value):
        if len(value) == 3 and value[0] in _SHELLS_WITH_SCRIPT and value[1] in _SCRIPT_FLAGS:
            return str(value[2])
        return " ".join(value)
    return None


def elide_middle(text: str, keep: int) -> str:
    """``text`` cut in the middle to at most ``keep`` characters, keeping its tail: the end of a command
    (``… | sh``, ``&& rm -rf …``) is often the part that matters."""
    if len(text) <= keep:
        return text
    if keep < 2:
        return "…"[:keep]
    tail = max(1, keep * 2 // 5)
    return text[: keep - 1 - tail] + "…" + text[-tail:]


def elide_path(path: str, keep: int) -> str:
    """``path`` cut to at most ``keep`` characters, keeping its last part whole (the file name) where it fits."""
    if len(path) <= keep:
        return path
    name = path[path.rstrip("/").rfind("/") :]
    if len(name) >= keep * 3 // 4:
        return elide_middle(path, keep)
    return path[: keep - 1 - len(name)] + "…" + name


def _short(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else repr(value)
    return elide_middle(text, limit)
