"""Risk signals: how dangerous a tool call looks, and why, so the dangerous ones stand out.

Why: an operator triaging hundreds of calls needs the few destructive ones flagged, and rules must not let
them through wholesale: a HIGH call is never settled by a prefix or glob rule, only by an exact-match rule
(``reviewer_app.domain.rules.evaluate`` enforces it; so does ``policy.SessionRule``).

The parts live in their own modules, re-exported here: :mod:`.risk_level` (the verdict), :mod:`.path_risk` (one
path), :mod:`.shell_risk` (a shell command), :mod:`.secret_scan` (secret-looking values); this module judges a
whole call.

Public API:

- ``assess(call: ToolCall, *, scan_secrets: bool = True) -> Risk``
- ``assess_command(command: str, cwd: str | None = None) -> Risk`` (a shell command alone)
- ``assess_path(path: str, cwd: str | None, *, writes: bool) -> Risk`` (a file tool's path)
- ``Risk(level, reasons)`` with ``level`` one of ``"low" | "medium" | "high"`` and ``Risk.high``
- ``is_sensitive_path(path) -> bool``, ``outside_workspace(path, cwd) -> bool``
- ``secret_kinds(arguments) -> tuple[str, ...]``: the kinds of secret-looking values found
- ``with_secrets(risk, kinds) -> Risk``: a risk assessed without the scan, completed with its result

Signals: destructive shell commands (``rm -r``, ``git push --force``, ``git reset --hard``, ``dd``, ``mkfs``,
``chmod -R``, ``curl … | sh``, ``DROP TABLE``, ``kubectl delete``, ``terraform destroy``/``apply``, ``sudo``, fork
bombs…, read with ``reviewer_app.domain.shell``; a command that cannot be parsed is at least medium, and one
that does more than its text shows is high: ``reviewer_app.domain.shell_effects``), writes
outside the workspace or to dotfiles and credentials (``.env``, ``id_rsa``, ``*.pem``, ``.aws/``, ``.ssh/``,
``.bashrc``…, matched with gitignore semantics by ``pathspec``), network egress (curl, wget, ssh, WebFetch…),
secret-looking values (detect-secrets' regex detectors; its entropy and keyword detectors are left out, they
flag ordinary hashes and words), and an MCP tool's ``destructiveHint`` annotation.

A file tool's path is judged as the tool will open it: ``~`` and absolute paths outside ``cwd`` are outside the
workspace, and so is any ``..`` that climbs out of it or a symlink whose target lies outside. Sensitive targets
(``domain.sensitive``) are high risk for reads and writes alike. Context flags a call carries
(``dangerouslyDisableSandbox``, ``run_in_background``, see ``toolcall.context_flags``) are reasons too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from reviewer_app.domain.file_reach import secret_a_filter_names, secrets_within
from reviewer_app.domain.patches import patch_paths
from reviewer_app.domain.path_risk import assess_path, is_sensitive_path, outside_workspace
from reviewer_app.domain.recursive_reads import ripgrep_configured
from reviewer_app.domain.risk_level import Findings, Risk, RiskLevel
from reviewer_app.domain.secret_reads import reaches_instance_metadata
from reviewer_app.domain.secret_scan import scanned_lines, secret_detectors, secret_kinds, secret_reason, with_secrets
from reviewer_app.domain.sensitive import is_sensitive_path as sensitive_target
from reviewer_app.domain.shell_risk import NETWORK_PROGRAMS, SQL_CLIENTS, assess_command, expanded_words
from reviewer_app.domain.tool_args import (
    PATTERNS_READ_AS_PATHS,
    READS_DIRECTORIES_WHOLE,
    SEARCH_FILTERS,
    SEARCHES_WORKING_DIRECTORY,
    argument_strings,
    file_url_path,
    is_command_key,
    is_path_key,
    looks_like_path,
    path_given,
    turns_off_git_ignore,
)
from reviewer_app.domain.toolcall import (
    CONTEXT_FLAG_RISKS,
    NETWORK_TOOLS,
    WRITING_FILE_TOOLS,
    ToolCall,
    command_of,
    context_flags,
    is_file_tool,
    is_shell_tool,
    path_of,
)

_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")


def _annotation(call: ToolCall, name: str) -> bool:
    metadata = call.metadata or {}
    annotations = metadata.get("annotations")
    if isinstance(annotations, dict) and annotations.get(name) is True:
        return True
    return metadata.get(name) is True


def _path_arguments(tool: str, arguments: Any) -> Iterator[str]:
    """The strings a tool's arguments give under path-like keys (``path``, ``paths``, ``dir_path``…), under the keys
    whose patterns it reads as paths (read_many_files' ``include``), any string that names a file as it stands
    (``location: ~/.ssh/id_rsa``, nested objects and lists included), and the path of any ``file:`` URL."""
    if not isinstance(arguments, dict):
        return
    for key, value in argument_strings(arguments):
        url_path = file_url_path(value)
        if url_path is not None:
            yield url_path  # ``url: file:///home/me/.ssh/id_rsa``
        if 0 < len(value) <= 4096 and (
            is_path_key(key) or key in PATTERNS_READ_AS_PATHS.get(tool, ()) or looks_like_path(value)
        ):
            yield value


def _named_paths_risk(call: ToolCall, findings: Findings) -> None:
    """A tool outside the file-tool table (an MCP tool, another host's ``read_many_files`` or ``grep_search``): the
    files its path-like arguments name, wildcards expanded; a directory it reads whole is judged by its contents:
    each directory a pattern matches, and for ``**`` the directory the walk starts from."""
    for key, value in argument_strings(call.arguments):
        if is_command_key(key) and value.strip():  # an MCP shell server's ``command``: judged as one
            judged = assess_command(value, call.cwd)
            for reason in judged.reasons:
                findings.add(judged.level, f"{reason} (in its {key} argument)")
        for path in patch_paths(value):  # ``*** Add File: ~/.bashrc``: a patch writes the files it names
            findings.merge(assess_path(path, call.cwd, writes=True))
    values = list(_path_arguments(call.tool_name, call.arguments))
    for value in values:
        for form in expanded_words(value, call.cwd, findings):
            if sensitive_target(form, call.cwd):
                findings.add("high", f"the tool is given a sensitive file: key, credentials, agent settings ({value})")
                break
    if call.tool_name in READS_DIRECTORIES_WHOLE:
        _filter_risk(call, findings)
        honours_gitignore = not turns_off_git_ignore(call.arguments)
        for value in values or ["."]:  # given no path, it searches the working directory
            walked = [value.split("**", 1)[0] or "."] if "**" in value else []
            for directory in [*walked, *expanded_words(value, call.cwd, findings)]:
                _directory_read_risk(call.tool_name, directory, call.cwd, findings, honours_gitignore)


def _filter_risk(call: ToolCall, findings: Findings) -> None:
    """A search told to read only some files (Grep's ``glob``, grep_search's ``include``) reads those wherever they
    lie below: one that names a secret's file (``**/.env``) is high, ignored by git or not (below its own entries
    the tree is not walked)."""
    if not isinstance(call.arguments, dict):
        return
    for key, value in argument_strings(call.arguments):
        named = secret_a_filter_names(value) if key in SEARCH_FILTERS else None
        if named is not None:
            findings.add("high", f"{call.tool_name} reads only the files {value} names, secrets among them ({named})")


def _directory_read_risk(
    tool: str, directory: str, cwd: str | None, findings: Findings, honours_gitignore: bool = True
) -> None:
    """A search tool reads the files of the directory it is given: Claude Code's Grep runs ripgrep with hidden files,
    git's ignores kept and links not followed; the other hosts' tools are judged as following them."""
    honours_gitignore = honours_gitignore and not (tool == "Grep" and ripgrep_configured())  # ripgrep's own config
    found = secrets_within(
        directory, cwd, hidden=True, honours_gitignore=honours_gitignore, follows_links=tool != "Grep"
    )
    if found is not None:
        findings.add("high", f"{tool} reads {directory} recursively, secrets included: {found}")


def assess(call: ToolCall, *, scan_secrets: bool = True, resolve: Callable[[str], str | None] | None = None) -> Risk:
    """The risk level and reasons for one tool call.

    ``scan_secrets=False`` skips the secret scan (which only ever raises a call to medium), for paths that
    need just the high/not-high answer quickly, such as rule evaluation in a hook.
    ``resolve``: a memoised ``sensitive.real_path`` the caller shares (rule evaluation resolves the same paths).
    """
    findings = Findings()
    if is_shell_tool(call.tool_name):
        command = command_of(call.tool_name, call.arguments)
        if command is None:
            findings.add("medium", "the shell command could not be read from the arguments")
        else:
            findings.merge(assess_command(command, call.cwd))
    elif is_file_tool(call.tool_name):
        path = path_of(call.tool_name, call.arguments)
        if path is None and path_given(call.tool_name, call.arguments):
            findings.add("high", "which file the tool opens cannot be told (its path arguments disagree)")
        elif path is None and call.tool_name in SEARCHES_WORKING_DIRECTORY:
            path = "."  # Grep, Glob and LS search the working directory when given no path
        if path is not None:
            writes = call.tool_name in WRITING_FILE_TOOLS
            findings.merge(assess_path(path, call.cwd, writes=writes, resolve=resolve))
        if path is not None and call.tool_name in READS_DIRECTORIES_WHOLE:
            _filter_risk(call, findings)
            _directory_read_risk(call.tool_name, path, call.cwd, findings)
    else:
        _named_paths_risk(call, findings)
    if call.tool_name in NETWORK_TOOLS:
        findings.add("medium", f"network egress ({call.tool_name})")
        for _, value in argument_strings(call.arguments):  # a URL argument, or URLs in a prompt (Gemini's web_fetch)
            for url in _URL_IN_TEXT.findall(value) if "://" in value else ():
                if reaches_instance_metadata(url):
                    findings.add("high", f"asks the cloud's instance metadata service for credentials ({url})")
    for flag in context_flags(call):
        level, reason = CONTEXT_FLAG_RISKS[flag]
        findings.add(level, reason)
    if _annotation(call, "destructiveHint"):
        findings.add("high", "the tool declares itself destructive (destructiveHint)")
    elif _annotation(call, "openWorldHint") and call.tool_name.startswith("mcp__"):
        findings.add("medium", "the tool reaches outside systems (openWorldHint)")
    risk = findings.risk()
    return with_secrets(risk, secret_kinds(call.arguments)) if scan_secrets else risk


__all__ = [
    "NETWORK_PROGRAMS",
    "SQL_CLIENTS",
    "Risk",
    "RiskLevel",
    "assess",
    "assess_command",
    "assess_path",
    "is_sensitive_path",
    "outside_workspace",
    "scanned_lines",
    "secret_detectors",
    "secret_kinds",
    "secret_reason",
    "with_secrets",
]
