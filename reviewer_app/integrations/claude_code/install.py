"""``hook install`` / ``hook uninstall``: merge Reviewer's hook into Claude Code's or Codex's settings.

Everything already in the file stays as it was (other hooks, other settings, key order); Reviewer's own entry
is recognised by its command (``… hook claude-code`` / ``… hook codex``), replaced on a second install and
removed on uninstall. Before a file changes a copy is kept next to it, and the new text replaces it atomically.
A file that is not valid JSON is never overwritten.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reviewer_app.integrations.claude_code.events import Host

DEFAULT_HOOK_TIMEOUT_S = 600
"""Claude Code kills a hook after its ``timeout`` (default 60 s); a reviewer needs longer."""
TIMEOUT_MARGIN_S = 30
"""Seconds the hook's own budget leaves before the host's time-out (at most a quarter of a short one): room to
write the answer, withdraw the request and exit even on a loaded machine, so the host never kills the hook first."""
_OURS = re.compile(
    r"(reviewer[-_]app|reviewer_app)\S*\s+hook\s+(claude-code|codex|gemini|copilot|qwen|factory|opencode|cursor)(\s|$)"
)


class SettingsError(ValueError):
    """The settings file cannot be merged (not JSON, not an object, hooks of the wrong shape)."""


@dataclass(frozen=True)
class InstallResult:
    path: Path
    changed: bool
    backup: Path | None
    command: str


def claude_settings_path(scope: str, project: Path, home: Path | None = None) -> Path:
    """user: ``~/.claude/settings.json``; project: ``.claude/settings.json``; local: ``.claude/settings.local.json``."""
    if scope == "user":
        return (home or Path.home()) / ".claude" / "settings.json"
    if scope == "project":
        return project / ".claude" / "settings.json"
    if scope == "local":
        return project / ".claude" / "settings.local.json"
    raise ValueError(f"unknown scope {scope!r} (user, project or local)")


def codex_hooks_path(home: Path | None = None) -> Path:
    """``$CODEX_HOME/hooks.json``, by default ``~/.codex/hooks.json``."""
    codex_home = os.environ.get("CODEX_HOME")
    return Path(codex_home) / "hooks.json" if codex_home else (home or Path.home()) / ".codex" / "hooks.json"


def hook_command(base: list[str], host: Host, database: str, hook_timeout: int, extra: list[str] | None = None) -> str:
    """The shell command the host runs (``/bin/sh -c``): quoted, absolute, with the database named."""
    timeout = max(hook_timeout - min(TIMEOUT_MARGIN_S, max(hook_timeout // 4, 1)), 1)
    return shlex.join([*base, "hook", host.value, "--db", database, "--timeout", str(timeout), *(extra or [])])


def is_ours(entry: Any) -> bool:
    """Reviewer's hook entry (its command under ``command``, or ``bash`` in Copilot's files)."""
    if not isinstance(entry, dict):
        return False
    return any(isinstance(entry.get(key), str) and bool(_OURS.search(entry[key])) for key in ("command", "bash"))


def _load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return {}
    try:
        settings = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"{path} is not valid JSON ({exc}); fix or move it, nothing was changed") from exc
    if not isinstance(settings, dict):
        raise SettingsError(f"{path} must hold a JSON object; nothing was changed")
    return settings


def hooks_of(settings: dict[str, Any], path: Path) -> dict[str, Any]:
    """The settings' ``hooks`` object (created when missing); :class:`SettingsError` when it is not an object."""
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise SettingsError(f"'hooks' in {path} is not an object; nothing was changed")
    return hooks


def _without_ours(groups: Any, path: Path, event: str) -> list[Any]:
    if groups is None:
        return []
    if not isinstance(groups, list):
        raise SettingsError(f"hooks.{event} in {path} is not a list; nothing was changed")
    kept = []
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            inner = [entry for entry in group["hooks"] if not is_ours(entry)]
            if not inner and group["hooks"]:
                continue  # the group held only our hook: drop it whole
            kept.append({**group, "hooks": inner})
        else:
            kept.append(group)
    return kept


def drop_our_groups(hooks: dict[str, Any], path: Path) -> None:
    """Take Reviewer's entries out of every event of a Claude-format ``hooks`` object; an event left empty goes."""
    for name in list(hooks):
        groups = _without_ours(hooks[name], path, name)
        if groups:
            hooks[name] = groups
        else:
            del hooks[name]


def _write(path: Path, settings: dict[str, Any], original: str | None) -> tuple[bool, Path | None]:
    text = json.dumps(settings, indent=2, ensure_ascii=False) + "\n"
    if original is not None and text == original:
        return False, None
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if original is not None:
        backup = path.with_name(f"{path.name}.reviewer-backup-{time.strftime('%Y%m%d-%H%M%S')}")
        counter = 1
        while backup.exists():
            backup = path.with_name(f"{path.name}.reviewer-backup-{time.strftime('%Y%m%d-%H%M%S')}-{counter}")
            counter += 1
        shutil.copy2(path, backup)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        if original is not None:
            shutil.copymode(path, temp)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return True, backup


def load_settings(path: Path) -> dict[str, Any]:
    """The JSON object in ``path`` ({} when missing or empty); :class:`SettingsError` when it is not one."""
    return _load(path)


def write_settings(path: Path, settings: dict[str, Any], original: str | None) -> tuple[bool, Path | None]:
    """Write ``settings`` atomically with a backup of ``original``; (changed, backup)."""
    return _write(path, settings, original)


def install(path: Path, event: str, command: str, *, matcher: str | None, timeout: int) -> InstallResult:
    """Put Reviewer's hook for ``event`` into ``path`` (replacing an earlier one of ours, wherever it was)."""
    original = path.read_text(encoding="utf-8") if path.exists() else None
    settings = _load(path)
    hooks = hooks_of(settings, path)
    drop_our_groups(hooks, path)  # one Reviewer hook per file: moving between events removes the old one
    group: dict[str, Any] = {}
    if matcher is not None:
        group["matcher"] = matcher
    group["hooks"] = [{"type": "command", "command": command, "timeout": timeout}]
    hooks.setdefault(event, []).append(group)
    changed, backup = _write(path, settings, original)
    return InstallResult(path, changed, backup, command)


def uninstall(path: Path) -> InstallResult:
    """Remove Reviewer's hooks from ``path``; everything else stays."""
    if not path.exists():
        return InstallResult(path, False, None, "")
    original = path.read_text(encoding="utf-8")
    settings = _load(path)
    hooks = settings.get("hooks")
    if isinstance(hooks, dict):
        drop_our_groups(hooks, path)
        if not hooks:
            del settings["hooks"]
    changed, backup = _write(path, settings, original)
    return InstallResult(path, changed, backup, "")
