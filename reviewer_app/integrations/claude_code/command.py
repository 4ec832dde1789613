"""``reviewer-app hook …``: the hook itself, ``install``/``uninstall``, and the watchdog's entry.

Imported by ``python -m reviewer_app hook …`` before anything heavy (see ``reviewer_app/__main__.py``): keep the
imports here to the standard library and this package's light modules.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from reviewer_app.integrations.claude_code.events import Host, Verdict

if TYPE_CHECKING:
    from typing import BinaryIO

    from reviewer_app.integrations.claude_code.lean import Handover

EXIT_USAGE = 2


class _FixedWidthHelp(argparse.HelpFormatter):
    """argparse's formatter asks ``shutil`` for the terminal width, and importing ``shutil`` loads bz2 and
    lzma: a few ms on every hook call for help text nobody reads there."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=100)


def add_hook_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """``hook`` in ``reviewer-app``'s parser (for its help); the work is done by :func:`main`."""
    parser = sub.add_parser("hook", help="coding agents' permission hooks: the hook, install, uninstall")
    parser.add_argument("hook_args", nargs=argparse.REMAINDER, help="<agent> | install <agent> | uninstall <agent>")
    return parser


def _hook_options(parser: argparse.ArgumentParser, host: Host) -> None:
    parser.add_argument("--db", help="database path or URL (default: $REVIEWER_DB or the user data dir)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds to wait for a reviewer (default 55: under the 60 s hook limit)",
    )
    parser.add_argument(
        "--on-error",
        choices=["ask", "deny"],
        default="ask",
        help="answer when Reviewer cannot decide (bad event, database unusable): the agent's own prompt, or deny",
    )
    parser.add_argument(
        "--on-timeout", choices=["ask", "deny"], default="ask", help="answer when nobody decides in time"
    )
    parser.add_argument(
        "--allow-tools",
        default="",
        help="comma-separated tools allowed without asking, never for a high-risk call (default: none; "
        "prefer rules, which the Rules tab lists)",
    )
    parser.add_argument("--state-dir", help="where transcript cursors are kept (default: beside the database)")
    parser.add_argument("--no-transcript", action="store_true", help="do not copy the agent's transcript")
    parser.add_argument(
        "--event", default=None, help="a lifecycle event to record (tool result, session end), as install writes it"
    )
    parser.add_argument("--no-fast-path", action="store_true", help=argparse.SUPPRESS)
    # The lean path (lean.py) runs before this parser and steps aside for any option it does not know, this one
    # included: tests compare its rows with the fast path's.
    parser.add_argument("--no-lean", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-watchdog", action="store_true", help=argparse.SUPPRESS)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``hook`` parser; ``only``: just that hook's options (the per-call path builds no more than it needs)."""
    parser = argparse.ArgumentParser(
        prog="reviewer-app hook",
        description="Agent permission hooks that ask Reviewer.",
        formatter_class=_FixedWidthHelp,
    )
    hosts = ",".join(host.value for host in Host)
    sub = parser.add_subparsers(dest="action", required=True, metavar=f"{{{hosts},install,uninstall,status,upgrade}}")
    if only is not None:
        _hook_options(sub.add_parser(only, formatter_class=_FixedWidthHelp), Host(only))
        return parser
    for host in Host:
        hook = sub.add_parser(host.value, help=f"the {host.value} permission hook (event JSON on stdin)")
        _hook_options(hook, host)
    install = sub.add_parser("install", help="merge the hook into the agent's settings (with a backup)")
    install.add_argument("host", choices=[host.value for host in Host])
    install.add_argument(
        "--scope",
        choices=["user", "project", "local"],
        default=None,
        help="Claude Code: project (default), user or local; the others: user (default) or project",
    )
    install.add_argument(
        "--event",
        choices=["PermissionRequest", "PreToolUse"],
        default=None,
        help="Claude Code (default PermissionRequest), Qwen Code and Factory (default PreToolUse)",
    )
    install.add_argument("--matcher", default="*", help="tool-name pattern the hook fires for (Claude Code; default *)")
    install.add_argument("--project", default=".", help="project directory for --scope project/local (default: cwd)")
    install.add_argument("--hook-timeout", type=int, default=600, help="seconds the agent gives the hook (default 600)")
    install.add_argument("--db", help="database the hook uses (default: $REVIEWER_DB or the user data dir)")
    install.add_argument("--on-error", choices=["ask", "deny"], default="ask")
    install.add_argument("--on-timeout", choices=["ask", "deny"], default="ask")
    install.add_argument("--allow-tools", default=None, help="written into the hook command when given")
    install.add_argument(
        "--sessions",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="Claude Code: also follow PostToolUse, Stop and SessionEnd, so each tool's result is on the run's "
        "timeline and finished turns leave the runs board's active columns (default; --no-sessions: the gate only)",
    )
    uninstall = sub.add_parser("uninstall", help="remove Reviewer's hook from the agent's settings")
    uninstall.add_argument("host", choices=[host.value for host in Host])
    uninstall.add_argument("--scope", choices=["user", "project", "local"], default=None)
    uninstall.add_argument("--project", default=".")
    uninstall.add_argument("--db", help="also revoke the rules hook install seeded in this database")
    for name, text in (
        ("status", "which agents' files hold Reviewer's hook, and which were installed before -P (exit 1)"),
        ("upgrade", "put -P into every hook installed before it, in place (options kept, a backup made)"),
    ):
        looked = sub.add_parser(name, help=text)
        looked.add_argument("--project", default=".", help="project whose project-scope files count (default: cwd)")
    watch = sub.add_parser("_watch", help=argparse.SUPPRESS)
    watch.add_argument("--db", required=True)
    watch.add_argument("--hitl-id", required=True)
    watch.add_argument("--pid", type=int, required=True)
    watch.add_argument("--start-ticks", type=int)
    watch.add_argument("--until", type=float, required=True)
    watch.add_argument("--agent", default="claude-code")
    return parser


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")


def _database(value: str | None) -> str:
    if value:
        return value
    env = os.environ.get("REVIEWER_DB")
    if env:
        return env
    from reviewer_app.config import default_database_path

    return str(default_database_path())


def _state_dir(value: str | None, database: str) -> Path:
    if value:
        return Path(value)
    from reviewer_app.integrations.claude_code.lean_store import sqlite_file

    path = sqlite_file(database)
    if path is not None:
        return path.parent / "hook-state"
    from reviewer_app.config import data_dir

    return data_dir() / "hook-state"


def main(argv: list[str], *, payload: bytes | None = None, handover: Handover | None = None) -> int:
    """``payload``: the event's stdin bytes when the lean path read them already (None: stdin is unread);
    ``handover``: the waiting request it created."""
    hosts = {host.value for host in Host}
    parser = build_parser(argv[0] if argv and argv[0] in hosts and "-h" not in argv and "--help" not in argv else None)
    args = parser.parse_args(argv)
    if args.action in hosts:
        return _run(Host(args.action), args, payload, handover)
    if args.action == "_watch":
        from reviewer_app.integrations.claude_code.watchdog import watch

        return watch(args.db, args.hitl_id, args.pid, args.start_ticks, args.until, args.agent)
    if args.action == "install":
        return _install(args)
    if args.action in ("status", "upgrade"):
        return _status(Path(args.project).resolve(), upgrade=args.action == "upgrade")
    return _uninstall(args)


def _status(project: Path, *, upgrade: bool) -> int:
    """``hook status``/``upgrade``: each file holding Reviewer's hook, ok or stale (run without ``-P``)."""
    from reviewer_app.integrations.hosts import installed

    hooks = installed.installed_hooks(project)
    if not hooks:
        _out("no Reviewer hook is installed for this user or in this project")
    stale = []
    for hook in hooks:
        if hook.stale and upgrade:
            installed.upgrade(hook)
            _out(f"upgraded: {hook.path} ({hook.host}, {hook.scope}): its hook now runs with -P")
        elif hook.stale:
            stale.append(hook)
            _out(f"stale: {hook.path} ({hook.host}, {hook.scope}): its hook runs without -P, so a reviewer_app")
            _out("  package the agent writes into the project would run as the hook")
        else:
            _out(f"ok: {hook.path} ({hook.host}, {hook.scope})")
    if stale:
        _out(f"fix (every option kept, a backup made): reviewer-app hook upgrade --project {shlex.quote(str(project))}")
        return 1
    return 0


def _stdin(payload: bytes | None) -> BinaryIO:
    """The event's bytes: stdin itself, or what the lean path read of it already."""
    if payload is None:
        return sys.stdin.buffer
    import io

    return io.BytesIO(payload)


def _run(host: Host, args: argparse.Namespace, payload: bytes | None = None, handover: Handover | None = None) -> int:
    from reviewer_app.domain.hook_lease import process_age_s
    from reviewer_app.integrations.claude_code.hook import DEFAULT_TIMEOUT_S, HookOptions, run_hook

    started = time.monotonic() - process_age_s()  # the budget counts the interpreter's start and imports too
    database = _database(args.db)
    if args.event:  # a tool result or a session end: recorded, never gating
        from reviewer_app.integrations.hosts.session import run_lifecycle

        state_dir = None if args.no_transcript else _state_dir(args.state_dir, database)
        code = run_lifecycle(host, args.event, database, _stdin(payload), sys.stderr, state_dir)
        sys.stderr.flush()
        os._exit(code)
    options = HookOptions(
        started=started,
        host=host,
        database=database,
        timeout=args.timeout if args.timeout is not None and args.timeout > 0 else DEFAULT_TIMEOUT_S,
        on_error=Verdict(args.on_error),
        on_timeout=Verdict(args.on_timeout),
        allow_tools=tuple(name.strip() for name in args.allow_tools.split(",") if name.strip()),
        state_dir=_state_dir(args.state_dir, database),
        fast_path=not args.no_fast_path,
        watchdog=not args.no_watchdog,
        transcript=not args.no_transcript,
        exit_fast=True,
        handover=handover,
    )
    code = run_hook(options, _stdin(payload), sys.stdout, sys.stderr)
    sys.stderr.flush()
    os._exit(code)  # answered and flushed: skip interpreter teardown (and the WAL checkpoint on close)


def _install_extra(args: argparse.Namespace) -> list[str]:
    extra = []
    if args.on_error != "ask":
        extra += ["--on-error", args.on_error]
    if args.on_timeout != "ask":
        extra += ["--on-timeout", args.on_timeout]
    if args.allow_tools is not None:
        extra += ["--allow-tools", args.allow_tools]
    return extra


def _install(args: argparse.Namespace) -> int:
    from reviewer_app.integrations.claude_code.install import (
        SettingsError,
        claude_settings_path,
        codex_hooks_path,
        hook_command,
        install,
    )
    from reviewer_app.integrations.claude_code.watchdog import reviewer_command
    from reviewer_app.integrations.hosts.installed import stale_in

    database = _database(args.db)
    if "://" not in database:
        database = str(Path(database).expanduser().resolve())
    project = Path(args.project).resolve()
    seeded: list[str] = []
    try:
        if args.host not in (Host.CLAUDE_CODE.value, Host.CODEX.value):
            from reviewer_app.integrations.hosts.install import install_host, settings_path

            path = settings_path(args.host, args.scope or "user", Path(args.project).resolve())
            command = hook_command(
                reviewer_command(), Host(args.host), database, args.hook_timeout, _install_extra(args)
            )
            replaced_stale = stale_in(path)
            result = install_host(args.host, path, command, event=args.event, hook_timeout=args.hook_timeout)
            seeded = _seed(args.event, args.scope, project, database, path, Host(args.host))
        elif args.host == Host.CODEX.value:
            from reviewer_app.integrations.codex import install_codex

            replaced_stale = stale_in(codex_hooks_path())
            result = install_codex(
                reviewer_command(), database, hook_timeout=args.hook_timeout, extra=_install_extra(args)
            )
        else:
            path = claude_settings_path(args.scope or "project", Path(args.project).resolve())
            command = hook_command(
                reviewer_command(), Host.CLAUDE_CODE, database, args.hook_timeout, _install_extra(args)
            )
            event = args.event or "PermissionRequest"
            replaced_stale = stale_in(path)
            if args.sessions:
                from reviewer_app.integrations.hosts.install import install_with_sessions

                result = install_with_sessions(path, event, command, args.matcher or None, args.hook_timeout)
            else:
                result = install(path, event, command, matcher=args.matcher or None, timeout=args.hook_timeout)
            seeded = _seed(event, args.scope, project, database, path, Host.CLAUDE_CODE)
    except (SettingsError, OSError) as exc:
        _err(f"error: {exc}")
        return EXIT_USAGE
    state = "installed" if result.changed else "already installed"
    backup = f" (previous version kept as {result.backup})" if result.backup else ""
    _out(f"{state}: {result.path}{backup}")
    _out(f"command: {result.command}")
    if replaced_stale:
        _out("replaced a hook installed without -P (a reviewer_app package in the project could have run as it)")
    for line in seeded if args.host != Host.CODEX.value else []:
        _out(f"seeded {line} (revoke with: reviewer-app rules revoke ID)")
    if args.host == Host.CODEX.value and result.changed:
        _out("Codex runs a new hook only once you trust it: open /hooks in Codex and trust this one.")
    if args.host in ("gemini", "qwen"):
        _out(f"{args.host} still applies its own approval mode after an allow: with --approval-mode yolo Reviewer")
        _out("is the only gate; otherwise a call Reviewer allows may still be refused or asked about by the agent.")
    return 0


def _seed(event: str | None, scope: str | None, project: Path, database: str, settings: Path, host: Host) -> list[str]:
    """An event the host sends for every call (PreToolUse and its kin): the allow rules for reading the project,
    as visible rules. PermissionRequest: none, the host already asked and answered itself what it allows."""
    from reviewer_app.integrations.claude_code.seeds import seed_rules, seeded_patterns, seeded_scope

    every_call = event == "PreToolUse" if host is Host.CLAUDE_CODE else event != "PermissionRequest"
    patterns = seeded_patterns(host)
    if not every_call or not patterns:
        return []
    return seed_rules(database, seeded_scope(host, scope, project), settings, patterns, event or "every call")


def _uninstall(args: argparse.Namespace) -> int:
    from reviewer_app.integrations.claude_code.install import (
        SettingsError,
        claude_settings_path,
        codex_hooks_path,
        uninstall,
    )

    project = Path(args.project).resolve()
    try:
        if args.host not in (Host.CLAUDE_CODE.value, Host.CODEX.value):
            from reviewer_app.integrations.hosts.install import settings_path, uninstall_host

            result = uninstall_host(args.host, settings_path(args.host, args.scope or "user", project))
        else:
            path = (
                codex_hooks_path()
                if args.host == Host.CODEX.value
                else claude_settings_path(args.scope or "project", project)
            )
            result = uninstall(path)
    except (SettingsError, OSError) as exc:
        _err(f"error: {exc}")
        return EXIT_USAGE
    backup = f" (previous version kept as {result.backup})" if result.backup else ""
    _out(f"{'removed from' if result.changed else 'not installed in'}: {result.path}{backup}")
    if args.host != Host.CODEX.value and args.db:
        from reviewer_app.integrations.claude_code.seeds import revoke_seeded, seeded_scope

        for rule_id in revoke_seeded(args.db, seeded_scope(Host(args.host), args.scope, project)):
            _out(f"revoked rule {rule_id} (seeded by hook install)")
    return 0
