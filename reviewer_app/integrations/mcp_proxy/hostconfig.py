"""``mcp-proxy wrap|unwrap``: put a host's stdio MCP servers behind the proxy in its own configuration, or back.

A wrapped entry runs ``reviewer-app mcp-proxy --name NAME -- ORIGINAL COMMAND…``: the original command line stays
whole after ``--``, so unwrapping needs nothing but the entry itself, and the entry's ``env`` (and Codex's ``cwd``)
still reach the upstream. Each write keeps a timestamped copy of the file it replaces.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HOSTS = ("claude-code", "claude-desktop", "codex")
SCOPES = {"claude-code": ("user", "local", "project"), "claude-desktop": ("user",), "codex": ("user", "project")}


class ConfigError(Exception):
    """The host's configuration cannot be read or has no such server."""


@dataclass(slots=True)
class Report:
    path: Path
    backup: Path | None = None
    changed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


def launcher() -> list[str]:
    """How the host should start ``reviewer-app``: the frozen binary, the installed script, or this Python."""
    if getattr(sys, "frozen", False):
        return [sys.executable]
    script = shutil.which("reviewer-app")
    if script and os.path.isabs(script):  # a relative PATH entry (``.``) could name a script the agent wrote
        return [str(Path(script).resolve())]
    return [sys.executable, "-P", "-m", "reviewer_app"]  # -P: never a module planted in the directory it starts in


def config_path(host: str, scope: str, project: Path) -> Path:
    home = Path.home()
    if host == "claude-code":
        return project / ".mcp.json" if scope == "project" else home / ".claude.json"
    if host == "claude-desktop":
        if sys.platform == "darwin":
            return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
        if sys.platform == "win32":
            return (
                Path(os.environ.get("APPDATA", home / "AppData" / "Roaming")) / "Claude" / "claude_desktop_config.json"
            )
        return Path(os.environ.get("XDG_CONFIG_HOME", home / ".config")) / "Claude" / "claude_desktop_config.json"
    if host == "codex":
        if scope == "project":
            return project / ".codex" / "config.toml"
        return Path(os.environ.get("CODEX_HOME", home / ".codex")) / "config.toml"
    raise ConfigError(f"unknown host {host!r} (one of {', '.join(HOSTS)})")


def is_wrapped(entry: MutableMapping[str, Any]) -> bool:
    args = [str(a) for a in entry.get("args") or []]
    return "mcp-proxy" in args and "--" in args[args.index("mcp-proxy") :]


def wrap_entry(name: str, entry: MutableMapping[str, Any], *, db: str | None, prefix: Sequence[str]) -> str | None:
    """Rewrite one server entry in place; returns why it was skipped, or None."""
    if is_wrapped(entry):
        return "already behind the proxy"
    command = entry.get("command")
    if not isinstance(command, str) or entry.get("type", "stdio") != "stdio":
        return "not a stdio server (only stdio servers can be proxied)"
    args = entry.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return "its args are not a list of strings"
    options = ["mcp-proxy", "--name", name] + (["--db", db] if db else [])
    entry["command"] = prefix[0]
    entry["args"] = [*prefix[1:], *options, "--", command, *args]
    return None


def unwrap_entry(entry: MutableMapping[str, Any]) -> str | None:
    if not is_wrapped(entry):
        return "not behind the proxy"
    args = [str(a) for a in entry.get("args") or []]
    original = args[args.index("--", args.index("mcp-proxy")) + 1 :]
    if not original:
        return "no original command after --"
    entry["command"] = original[0]
    entry["args"] = original[1:]
    return None


def _servers_json(document: Any, host: str, scope: str, project: Path) -> MutableMapping[str, Any]:
    if not isinstance(document, dict):
        raise ConfigError("the configuration is not a JSON object")
    holder: Any = document
    if host == "claude-code" and scope == "local":
        projects = document.get("projects")
        holder = projects.get(str(project)) if isinstance(projects, dict) else None
        if not isinstance(holder, dict):
            raise ConfigError(f"no Claude Code project entry for {project}")
    servers = holder.get("mcpServers")
    if not isinstance(servers, dict):
        raise ConfigError("no mcpServers in the configuration")
    return servers


def _edit(
    path: Path,
    host: str,
    scope: str,
    project: Path,
    names: Sequence[str],
    change: Callable[[str, MutableMapping[str, Any]], str | None],
) -> Report:
    if not path.exists():
        raise ConfigError(f"{path} does not exist")
    text = path.read_text(encoding="utf-8")
    report = Report(path)
    if host == "codex":
        try:
            import tomlkit
        except ImportError as exc:
            raise ConfigError("editing Codex's config.toml needs tomlkit: pip install 'reviewer-app[mcp]'") from exc
        try:
            document: Any = tomlkit.parse(text)
        except Exception as exc:
            raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
        servers = document.get("mcp_servers")
        if not isinstance(servers, MutableMapping):
            raise ConfigError("no [mcp_servers] in the configuration")
    else:
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path} is not valid JSON: {exc}") from exc
        servers = _servers_json(document, host, scope, project)
    missing = [n for n in names if n not in servers]
    if missing:
        raise ConfigError(f"no server named {', '.join(missing)} (servers: {', '.join(servers) or 'none'})")
    for name in names or list(servers):
        entry = servers[name]
        why = change(name, entry) if isinstance(entry, MutableMapping) else "not a table"
        if why is None:
            report.changed.append(name)
        else:
            report.skipped[name] = why
    if report.changed:
        new_text = tomlkit.dumps(document) if host == "codex" else json.dumps(document, indent=2, ensure_ascii=False)
        report.backup = _write_with_backup(path, new_text if new_text.endswith("\n") else new_text + "\n")
    return report


def _write_with_backup(path: Path, text: str) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%S")
    backup = path.with_name(f"{path.name}.reviewer-backup-{stamp}")
    counter = 1
    while backup.exists():
        counter += 1
        backup = path.with_name(f"{path.name}.reviewer-backup-{stamp}-{counter}")
    shutil.copy2(path, backup)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        shutil.copymode(path, temp)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return backup


def wrap(
    host: str,
    *,
    scope: str = "user",
    names: Sequence[str] = (),
    db: str | None = None,
    path: Path | None = None,
    project: Path | None = None,
    prefix: Sequence[str] | None = None,
) -> Report:
    project = (project or Path.cwd()).resolve()
    target = path or config_path(host, scope, project)
    use = list(prefix or launcher())
    if db and "://" not in db:  # the host starts the proxy from a directory of its choosing
        db = str(Path(db).expanduser().resolve())
    return _edit(target, host, scope, project, names, lambda name, entry: wrap_entry(name, entry, db=db, prefix=use))


def unwrap(
    host: str, *, scope: str = "user", names: Sequence[str] = (), path: Path | None = None, project: Path | None = None
) -> Report:
    project = (project or Path.cwd()).resolve()
    target = path or config_path(host, scope, project)
    return _edit(target, host, scope, project, names, lambda _name, entry: unwrap_entry(entry))


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog=f"reviewer-app mcp-proxy {argv[0]}",
        description="Put a host's stdio MCP servers behind the Reviewer proxy (wrap), or restore them (unwrap).",
    )
    parser.add_argument("host", choices=HOSTS)
    parser.add_argument("servers", nargs="*", help="server names (default: every stdio server)")
    parser.add_argument("--scope", default="user", help="claude-code: user|local|project; codex: user|project")
    parser.add_argument("--config", help="the configuration file (default: the host's own for that scope)")
    parser.add_argument("--project", help="project directory for local/project scopes (default: the current one)")
    if argv[0] == "wrap":
        parser.add_argument("--db", help="the Reviewer database the proxied servers use (default: the user's)")
    args = parser.parse_intermixed_args(argv[1:])
    if args.scope not in SCOPES[args.host]:
        parser.error(f"{args.host} has scopes {', '.join(SCOPES[args.host])}")
    common: dict[str, Any] = {
        "scope": args.scope,
        "names": args.servers,
        "path": Path(args.config).expanduser() if args.config else None,
        "project": Path(args.project) if args.project else None,
    }
    try:
        report = wrap(args.host, db=args.db, **common) if argv[0] == "wrap" else unwrap(args.host, **common)
    except ConfigError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    verb = "wrapped" if argv[0] == "wrap" else "unwrapped"
    for name in report.changed:
        sys.stdout.write(f"{verb} {name}\n")
    for name, why in report.skipped.items():
        sys.stdout.write(f"skipped {name}: {why}\n")
    if report.backup:
        sys.stdout.write(f"{report.path} updated; previous version kept as {report.backup}\n")
    else:
        sys.stdout.write(f"{report.path} unchanged\n")
    return 0
