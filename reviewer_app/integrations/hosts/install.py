"""``hook install|uninstall`` for Gemini CLI, Copilot CLI, Qwen Code, Factory, Cursor and OpenCode.

Each writes into its host's own file, keeps everything else there as it was, makes a backup before changing
it, is idempotent (a second install replaces Reviewer's entry, nothing else) and returns what it wrote.
The Claude-format files (Gemini, Qwen, Factory) go through :func:`..claude_code.install.install`; Copilot and
Cursor have flat ``{"version": 1, "hooks": {event: [entry]}}`` files; OpenCode gets a plugin file.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

from reviewer_app.integrations.claude_code.install import (
    InstallResult,
    SettingsError,
    drop_our_groups,
    hooks_of,
    is_ours,
    load_settings,
    uninstall,
    write_settings,
)

USER_FILES = {
    "gemini": ".gemini/settings.json",
    "qwen": ".qwen/settings.json",
    "factory": ".factory/settings.json",
    "cursor": ".cursor/hooks.json",
}
"""Hosts whose user file sits under the home directory and whose project file is the same path in the project."""
PROJECT_FILES = {"copilot": ".github/hooks/reviewer.json", "opencode": ".opencode/plugin/reviewer.js"}


def settings_path(host: str, scope: str, project: Path, home: Path | None = None) -> Path:
    """The file ``hook install <host>`` writes (``scope`` user or project where the host has both)."""
    if host in USER_FILES:
        return (project if scope == "project" else home or Path.home()) / USER_FILES[host]
    if host not in PROJECT_FILES:
        raise ValueError(f"no install target for {host!r}")
    if scope == "project":
        return project / PROJECT_FILES[host]
    if host == "copilot":
        copilot_home = os.environ.get("COPILOT_HOME")
        return (Path(copilot_home) if copilot_home else (home or Path.home()) / ".copilot") / "hooks" / "reviewer.json"
    config = os.environ.get("XDG_CONFIG_HOME")
    return (Path(config) if config else (home or Path.home()) / ".config") / "opencode" / "plugin" / "reviewer.js"


LIFECYCLE_TIMEOUT_S = 30
"""Recording a tool result or a session end takes well under a second; the host waits at most this long."""
CLAUDE_BACKGROUND_EVENTS = frozenset({"UserPromptSubmit"})
"""Claude Code events whose record runs in the background (``"async": true``): Claude Code would otherwise wait
for the hook process (~0.5 s) before sending each prompt. Tool results stay in order, and a session end is waited
for (Claude Code does not wait for a background hook when it exits)."""


def _lifecycle(host: str) -> list[str]:
    from reviewer_app.integrations.claude_code.events import Host
    from reviewer_app.integrations.hosts.session import LIFECYCLE_EVENTS

    return list(LIFECYCLE_EVENTS.get(Host(host), {}))


def with_event(command: str, event: str) -> str:
    return f"{command} --event {shlex.quote(event)}"


def install_host(host: str, path: Path, command: str, *, event: str | None, hook_timeout: int) -> InstallResult:
    """Merge Reviewer's hook for ``host`` into ``path``: the gating event and the lifecycle ones."""
    if host in ("gemini", "qwen", "factory"):
        gate = "BeforeTool" if host == "gemini" else event or "PreToolUse"
        unit = 1000 if host == "gemini" else 1  # Gemini's hook timeouts are in milliseconds
        matcher = ".*" if host == "gemini" else "*"
        groups: list[tuple[str, str | None, str, int]] = [(gate, matcher, command, hook_timeout * unit)]
        groups += [
            (name, matcher if "Tool" in name else None, with_event(command, name), LIFECYCLE_TIMEOUT_S * unit)
            for name in _lifecycle(host)
        ]
        return _install_nested(path, groups, command)
    if host == "copilot":
        entries = {"preToolUse": {"type": "command", "bash": command, "timeoutSec": hook_timeout}}
        for name in _lifecycle(host):
            entries[name] = {"type": "command", "bash": with_event(command, name), "timeoutSec": LIFECYCLE_TIMEOUT_S}
        return _install_flat(path, entries, command)
    if host == "cursor":
        entry = {"command": command, "timeout": hook_timeout}
        return _install_flat(path, {"beforeShellExecution": entry, "beforeMCPExecution": dict(entry)}, command)
    if host == "opencode":
        return _install_plugin(path, command, hook_timeout)
    raise ValueError(f"no installer for {host!r}")


def install_with_sessions(
    path: Path, event: str, command: str, matcher: str | None, hook_timeout: int
) -> InstallResult:
    """Claude Code's gating hook plus its lifecycle events (``hook install claude-code``, unless ``--no-sessions``)."""
    groups: list[tuple[str, str | None, str, int]] = [(event, matcher, command, hook_timeout)]
    groups += [
        (name, matcher if "Tool" in name else None, with_event(command, name), LIFECYCLE_TIMEOUT_S)
        for name in _lifecycle("claude-code")
    ]
    return _install_nested(path, groups, command, background=CLAUDE_BACKGROUND_EVENTS)


def uninstall_host(host: str, path: Path) -> InstallResult:
    if host in ("gemini", "qwen", "factory"):
        return uninstall(path)
    if host == "opencode":
        if path.exists() and PLUGIN_MARK in path.read_text(encoding="utf-8"):
            path.unlink()
            return InstallResult(path, True, None, "")
        return InstallResult(path, False, None, "")
    return _uninstall_flat(path)


def _install_nested(
    path: Path,
    groups: list[tuple[str, str | None, str, int]],
    command: str,
    *,
    background: frozenset[str] = frozenset(),
) -> InstallResult:
    """Claude-format files: ``hooks.<event>`` lists of ``{matcher, hooks: [{type, command, timeout}]}``; the events
    in ``background`` with ``"async": true``."""
    original = path.read_text(encoding="utf-8") if path.exists() else None
    settings = load_settings(path)
    hooks = hooks_of(settings, path)
    drop_our_groups(hooks, path)  # Reviewer's earlier entries go, wherever they were; everything else stays
    for name, matcher, entry_command, timeout in groups:
        group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        hook: dict[str, Any] = {"type": "command", "command": entry_command, "timeout": timeout}
        if name in background:
            hook["async"] = True
        group["hooks"] = [hook]
        hooks.setdefault(name, []).append(group)
    changed, backup = write_settings(path, settings, original)
    return InstallResult(path, changed, backup, command)


def _install_flat(path: Path, entries: dict[str, dict[str, Any]], command: str) -> InstallResult:
    original = path.read_text(encoding="utf-8") if path.exists() else None
    settings = load_settings(path)
    settings.setdefault("version", 1)
    hooks = hooks_of(settings, path)
    _drop_ours(hooks, path)
    for event, entry in entries.items():
        hooks.setdefault(event, []).append(entry)
    changed, backup = write_settings(path, settings, original)
    return InstallResult(path, changed, backup, command)


def _drop_ours(hooks: dict[str, Any], path: Path) -> None:
    for event in list(hooks):
        entries = hooks[event]
        if not isinstance(entries, list):
            raise SettingsError(f"hooks.{event} in {path} is not a list; nothing was changed")
        kept = [entry for entry in entries if not is_ours(entry)]
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]


def _uninstall_flat(path: Path) -> InstallResult:
    if not path.exists():
        return InstallResult(path, False, None, "")
    original = path.read_text(encoding="utf-8")
    settings = load_settings(path)
    hooks = settings.get("hooks")
    if isinstance(hooks, dict):
        _drop_ours(hooks, path)
    changed, backup = write_settings(path, settings, original)
    return InstallResult(path, changed, backup, "")


PLUGIN_MARK = "// Reviewer: written by `reviewer-app hook install opencode`"
PLUGIN_TEMPLATE = """PLUGIN_MARK
// Every tool call OpenCode makes asks Reviewer first; anything but an allow throws (the model reads the reason).
import { spawn } from "node:child_process";

const COMMAND = COMMAND_JSON;
const TIMEOUT_MS = TIMEOUT_VALUE;

const AFTER = COMMAND + " --event tool.execute.after";

function ask(payload, command = COMMAND) {
  return new Promise((resolve) => {
    let out = "";
    let done = false;
    const finish = (answer) => { if (!done) { done = true; resolve(answer); } };
    const child = spawn("/bin/sh", ["-c", command], { stdio: ["pipe", "pipe", "inherit"] });
    const timer = setTimeout(() => {
      child.kill("SIGTERM");
      finish({ decision: "deny", reason: "Reviewer did not answer in time" });
    }, TIMEOUT_MS);
    child.stdout.on("data", (chunk) => { out += chunk; });
    child.on("error", (error) => {
      clearTimeout(timer);
      finish({ decision: "deny", reason: `Reviewer could not run: ${error.message}` });
    });
    child.on("close", () => {
      clearTimeout(timer);
      try { finish(JSON.parse(out)); } catch { finish({ decision: "deny", reason: "Reviewer gave no answer" }); }
    });
    child.stdin.end(JSON.stringify(payload));
  });
}

export const ReviewerPlugin = async ({ directory }) => ({
  "tool.execute.before": async (input, output) => {
    const answer = await ask({
      hook_event_name: "tool.execute.before",
      session_id: input.sessionID,
      call_id: input.callID,
      tool: input.tool,
      args: output.args ?? {},
      cwd: directory,
    });
    if (answer && answer.decision === "allow") {
      if (answer.args && typeof answer.args === "object") {
        for (const key of Object.keys(output.args)) delete output.args[key];
        Object.assign(output.args, answer.args);
      }
      return;
    }
    throw new Error((answer && answer.reason) || "denied in Reviewer");
  },
  "tool.execute.after": async (input, output) => {
    // The result onto the run's timeline; recorded, never gating (any failure is ignored here).
    const result = { session_id: input.sessionID, call_id: input.callID, tool: input.tool };
    await ask({ ...result, output: output?.output ?? "" }, AFTER);
  },
});
"""


def plugin_text(command: str, hook_timeout: int) -> str:
    return (
        PLUGIN_TEMPLATE.replace("PLUGIN_MARK", PLUGIN_MARK)
        .replace("COMMAND_JSON", json.dumps(command))
        .replace("TIMEOUT_VALUE", str(hook_timeout * 1000))
    )


def _install_plugin(path: Path, command: str, hook_timeout: int) -> InstallResult:
    text = plugin_text(command, hook_timeout)
    original = path.read_text(encoding="utf-8") if path.exists() else None
    if original is not None and PLUGIN_MARK not in original:
        raise SettingsError(f"{path} exists and is not Reviewer's plugin; nothing was changed")
    if original == text:
        return InstallResult(path, False, None, command)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)
    return InstallResult(path, True, None, command)
