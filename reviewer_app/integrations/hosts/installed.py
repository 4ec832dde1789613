"""Which of the hosts' files hold a Reviewer hook, and whether each was installed before the interpreter's ``-P``.

Why: the host runs the hook in the project, where the agent writes files. ``python -m reviewer_app`` without
``-P`` (or ``-I``) puts that directory first on the module path, so a ``reviewer_app`` package the agent planted
there would run as the hook and answer every later call. Hooks installed before ``-P`` keep their command until
something rewrites it: ``hook status`` names them, ``hook upgrade`` puts ``-P`` into each such command in place
(every option kept, a backup made), and ``hook install`` again replaces the entry.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reviewer_app.integrations.claude_code.install import (
    SettingsError,
    claude_settings_path,
    codex_hooks_path,
    is_ours,
    load_settings,
    write_settings,
)
from reviewer_app.integrations.hosts.install import PLUGIN_MARK, settings_path

_OTHER_HOSTS = ("gemini", "qwen", "factory", "copilot", "cursor", "opencode")
_PLUGIN_COMMAND = re.compile(r"^const COMMAND = (\".*\");$", re.MULTILINE)


@dataclass(frozen=True)
class InstalledHook:
    """A file that holds Reviewer's hook: for which host and scope, and its commands that lack ``-P``."""

    host: str
    scope: str
    path: Path
    stale: tuple[str, ...]


def hook_files(project: Path, home: Path | None = None) -> list[tuple[str, str, Path]]:
    """Every file ``hook install`` may have written, as (host, scope, path)."""
    files = [
        ("claude-code", scope, claude_settings_path(scope, project, home)) for scope in ("project", "local", "user")
    ]
    files.append(("codex", "user", codex_hooks_path(home)))
    for host in _OTHER_HOSTS:
        files += [(host, scope, settings_path(host, scope, project, home)) for scope in ("user", "project")]
    return files


def runs_without_safe_path(command: str) -> bool:
    """Whether ``command`` runs ``python -m reviewer_app`` with the working directory on the module path."""
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    module = _module_flag(words)
    if module is None:
        return False  # a console script or a frozen bundle: its own directory is on the path, not the project
    flags = [word[1:] for word in words[1:module] if word.startswith("-") and not word.startswith("--")]
    return not any("P" in flag or "I" in flag for flag in flags)


def _module_flag(words: list[str]) -> int | None:
    """The index of ``-m`` in ``… -m reviewer_app …``, None when the command does not run it that way."""
    for index, word in enumerate(words[:-1]):
        if word == "-m" and words[index + 1] == "reviewer_app":
            return index
    return None


def with_safe_path(command: str) -> str:
    """``command`` with ``-P`` before ``-m reviewer_app``, every other word as it was."""
    words = shlex.split(command)
    module = _module_flag(words)
    if module is None:
        return command
    return shlex.join([*words[:module], "-P", *words[module:]])


def installed_hooks(project: Path, home: Path | None = None) -> list[InstalledHook]:
    """The files that hold Reviewer's hook, each with its commands that lack ``-P``; unreadable files are left
    out (``hook install`` says what is wrong with them)."""
    found = []
    for host, scope, path in hook_files(project, home):
        commands = _our_commands(path)
        if commands:
            stale = tuple(command for command in commands if runs_without_safe_path(command))
            found.append(InstalledHook(host, scope, path, stale))
    return found


def _our_commands(path: Path) -> list[str]:
    try:
        if not path.is_file():
            return []
        if path.suffix == ".js":
            text = path.read_text(encoding="utf-8")
            found = _PLUGIN_COMMAND.search(text) if PLUGIN_MARK in text else None
            return [json.loads(found.group(1))] if found else []
        return [entry[key] for entry in _entries(load_settings(path)) for key in ("command", "bash") if key in entry]
    except (OSError, ValueError, SettingsError):
        return []


def _entries(value: Any) -> list[dict[str, Any]]:
    """Reviewer's hook entries anywhere in a settings object (nested groups and flat lists alike)."""
    if isinstance(value, dict):
        if is_ours(value):
            return [value]
        return [entry for inner in value.values() for entry in _entries(inner)]
    if isinstance(value, list):
        return [entry for inner in value for entry in _entries(inner)]
    return []


def upgrade(hook: InstalledHook) -> bool:
    """Put ``-P`` into each of ``hook``'s stale commands in place (a backup kept); whether the file changed."""
    if not hook.stale:
        return False
    original = hook.path.read_text(encoding="utf-8")
    if hook.path.suffix == ".js":
        text = original
        for command in hook.stale:
            text = text.replace(json.dumps(command), json.dumps(with_safe_path(command)))
        temp = hook.path.with_name(f".{hook.path.name}.tmp")
        temp.write_text(text, encoding="utf-8")
        os.replace(temp, hook.path)
        return text != original
    settings = load_settings(hook.path)
    for entry in _entries(settings):
        for key in ("command", "bash"):
            if isinstance(entry.get(key), str) and runs_without_safe_path(entry[key]):
                entry[key] = with_safe_path(entry[key])
    changed, _ = write_settings(hook.path, settings, original)
    return changed


def stale_in(path: Path) -> bool:
    """Whether ``path`` holds a Reviewer hook command that lacks ``-P`` (before ``hook install`` rewrites it)."""
    return any(runs_without_safe_path(command) for command in _our_commands(path))


__all__ = [
    "InstalledHook",
    "hook_files",
    "installed_hooks",
    "runs_without_safe_path",
    "stale_in",
    "upgrade",
    "with_safe_path",
]
