"""The ``reviewer-app`` command: the window by default, headless subcommands for servers and scripts.

This module builds the parser and sends each subcommand to its family's module (runs, decide, pending, audit,
rules, why, stats); the hook and the MCP proxy have their own parsers and fast paths.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import NoReturn

import reviewer_app
from reviewer_app.cli.context import add_common_options, make_context, open_backend
from reviewer_app.cli.errors import (
    EXIT_BAD_ENCODING,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    database_failure,
    undecodable_argument,
)
from reviewer_app.cli.output import dump, err, out
from reviewer_app.config import AppContext

PROG = "reviewer-app"
DESCRIPTION = "Review and decide the approval requests AI agents raise before they act."


class VersionAction(argparse.Action):
    """``--version``, with the version looked up only when asked: importlib.metadata costs every start ~25 ms."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_args: object, **_kwargs: object) -> None:
        out(f"{parser.prog} {reviewer_app.__version__}")
        parser.exit()


class NotTheWindow(Exception):
    """The command line is not a plain window start (another command, help, version, or a mistake)."""


class WindowParser(argparse.ArgumentParser):
    """The window's parser: it says "not the window" instead of printing and exiting, so the full parser can."""

    def error(self, message: str) -> NoReturn:
        raise NotTheWindow(message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise NotTheWindow(message or "")


def add_window_arguments(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """The global options and the ``gui`` command: all the window's own start reads; returns the subcommands."""
    add_common_options(parser, in_subcommand=False)
    parser.add_argument("--demo", action="store_true", help="seed a demo workspace and start scripted demo runs")
    parser.add_argument("--screenshot", help=argparse.SUPPRESS)  # `make screenshot`: grab the window to PATH, exit
    parser.add_argument(
        "--self-test", action="store_true", help="run a scripted agent on a temporary database, approve, check; exit"
    )
    sub = parser.add_subparsers(dest="command")
    gui = sub.add_parser("gui", help="open the window (the default)", add_help=parser.add_help)
    gui.add_argument("--demo", action="store_true", default=argparse.SUPPRESS, help="start scripted demo runs")
    add_common_options(gui, in_subcommand=True)
    return sub


def window_args(argv: Sequence[str]) -> argparse.Namespace | None:
    """``argv`` parsed as the full parser would, when it starts the window; else None (use :func:`build_parser`).

    The window starts without building the other commands' parsers, whose modules cost every start ~20 ms. The
    window's parser has the same global options and ``gui`` command and no ``--help`` or ``--version``: anything
    it cannot parse (another command, help, a typo) is left to the full parser, which prints and exits as ever.
    """
    parser = WindowParser(prog=PROG, add_help=False)
    add_window_arguments(parser)
    try:
        args = parser.parse_args(argv)
    except NotTheWindow:
        return None
    return args if args.command in (None, "gui") else None


class OneCommandParser(WindowParser):
    """One command's parser (:func:`command_args`): like the window's, it says "not this" instead of printing
    anything (help included), so the full parser prints what it prints."""

    def _print_message(self, message: str, file: object = None) -> NoReturn:
        raise NotTheWindow(message)


SubParsers = argparse._SubParsersAction  # the ``sub`` of ``add_subparsers``: each command's parser is added to it


def _add_common(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser, in_subcommand=True)


def _add_run(sub: SubParsers[argparse.ArgumentParser]) -> None:
    run = sub.add_parser("run", help="run one agent in this process until it ends (decisions may come from anywhere)")
    run.add_argument("agent", help="agent name (see --agents; 'demo' is built in)")
    run.add_argument("prompt", help="the task for the agent")
    run.add_argument("--script", help="JSON or YAML list of turns for a scripted model (replaces the agent's model)")
    run.add_argument("--session", help="run in this existing session (shares its workspace)")
    run.add_argument("--timeout", type=float, help="give up waiting after this many seconds (the run stays resumable)")
    run.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    _add_common(run)


def _add_worker(sub: SubParsers[argparse.ArgumentParser]) -> None:
    worker = sub.add_parser("worker", help="resume every resumable run and serve until SIGINT/SIGTERM")
    worker.add_argument("--exit-when-idle", action="store_true", help="exit once no run is left to drive")
    worker.add_argument("--max-runs", type=int, default=16, help="how many runs may be active at once (default 16)")
    worker.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    _add_common(worker)


def _add_pending(sub: SubParsers[argparse.ArgumentParser]) -> None:
    pending = sub.add_parser("pending", help="list the requests waiting for a decision")
    pending.add_argument("--json", action="store_true", help="a JSON list of request records")
    _add_common(pending)


def _add_decide(sub: SubParsers[argparse.ArgumentParser]) -> None:
    decide = sub.add_parser("decide", help="decide one request")
    decide.add_argument("hitl_id")
    decide.add_argument("decision", choices=["approve", "approve_for_session", "edit", "reject", "steer", "respond"])
    decide.add_argument("--message", help="reason (reject), guidance (steer) or answer (respond)")
    decide.add_argument("--args", help="edited arguments as a JSON object (edit)")
    decide.add_argument("--args-file", help="read the edited arguments from this file ('-': stdin), for large ones")
    decide.add_argument("--json", action="store_true", help="print the decided record as JSON")
    decide.add_argument(
        "--sha256",
        metavar="HASH",
        help="the SHA-256 of the arguments you reviewed (from `pending`); refused (exit 5) if they differ now",
    )
    _add_common(decide)


def _add_runs(sub: SubParsers[argparse.ArgumentParser]) -> None:
    runs = sub.add_parser("runs", help="list runs, newest first")
    runs.add_argument("--json", action="store_true")
    runs.add_argument("--limit", type=int, default=200)
    _add_common(runs)


def _add_timeline(sub: SubParsers[argparse.ArgumentParser]) -> None:
    timeline = sub.add_parser("timeline", help="a run's timeline (folded blocks)")
    timeline.add_argument("invocation_id")
    timeline.add_argument("--json", action="store_true")
    _add_common(timeline)


def _add_audit(sub: SubParsers[argparse.ArgumentParser]) -> None:
    audit = sub.add_parser("audit", help="the decision audit log; 'audit verify' checks its hash chain")
    audit.add_argument("action", nargs="?", choices=["verify", "export"])
    audit.add_argument("--json", action="store_true")
    audit.add_argument("--format", choices=["jsonl", "csv"], default="jsonl", help="export format (default jsonl)")
    audit.add_argument("--output", "-o", help="export to this file instead of standard output")
    _add_common(audit)


def _add_cancel(sub: SubParsers[argparse.ArgumentParser]) -> None:
    cancel = sub.add_parser("cancel", help="cancel a run and its pending requests")
    cancel.add_argument("invocation_id")
    _add_common(cancel)


def _add_resolve(sub: SubParsers[argparse.ArgumentParser]) -> None:
    resolve = sub.add_parser(
        "resolve", help="settle an interrupted run: re-run its tool call or abort it, then drive it"
    )
    resolve.add_argument("invocation_id")
    resolve.add_argument("action", choices=["rerun", "abort"])
    resolve.add_argument("--message", default="aborted by operator", help="the reason the model sees on abort")
    resolve.add_argument("--quiet", action="store_true")
    _add_common(resolve)


def _add_mcp_proxy(sub: SubParsers[argparse.ArgumentParser]) -> None:
    sub.add_parser("mcp-proxy", help="serve an MCP server to any MCP host with its tool calls reviewed here")


def _add_rules(sub: SubParsers[argparse.ArgumentParser]) -> None:
    from reviewer_app.cli.rules import add_rules_parser

    add_rules_parser(sub, _add_common)


def _add_why(sub: SubParsers[argparse.ArgumentParser]) -> None:
    from reviewer_app.cli.why import add_why_parser

    add_why_parser(sub, _add_common)


def _add_stats(sub: SubParsers[argparse.ArgumentParser]) -> None:
    from reviewer_app.cli.habits import add_stats_parser

    add_stats_parser(sub, _add_common)


def _add_hook(sub: SubParsers[argparse.ArgumentParser]) -> None:
    from reviewer_app.integrations.claude_code.command import add_hook_parser

    add_hook_parser(sub)


SUBCOMMANDS: dict[str, Callable[[SubParsers[argparse.ArgumentParser]], None]] = {
    "run": _add_run,
    "worker": _add_worker,
    "pending": _add_pending,
    "decide": _add_decide,
    "runs": _add_runs,
    "timeline": _add_timeline,
    "audit": _add_audit,
    "cancel": _add_cancel,
    "resolve": _add_resolve,
    "mcp-proxy": _add_mcp_proxy,
    "rules": _add_rules,
    "why": _add_why,
    "stats": _add_stats,
    "hook": _add_hook,
}
"""Every command's parser but the window's, in the order ``--help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION)
    parser.add_argument("--version", action=VersionAction)
    sub = add_window_arguments(parser)
    for add in SUBCOMMANDS.values():
        add(sub)
    return parser


def command_args(argv: Sequence[str]) -> argparse.Namespace | None:
    """``argv`` parsed as the full parser would, when it runs one of the headless commands; else None.

    The command is a word of ``argv`` that names one (the first that parses as that command); its parser is built
    alone beside the window's (the global options and ``gui``), without importing the other commands' modules
    (``rules``, ``why``, ``stats``, ``hook``: ~15 ms of every ``decide``). The same words reach the same command's
    parser as in the full parser, so a parse that succeeds is the full parser's; anything it cannot parse, and
    anything that would print (help), is left to the full parser, which prints and exits as ever (``--version`` is
    not known here either).
    """
    for command in dict.fromkeys(word for word in argv if word in SUBCOMMANDS):  # an option's value may name one
        parser = OneCommandParser(prog=PROG, description=DESCRIPTION)
        SUBCOMMANDS[command](add_window_arguments(parser))
        try:
            args = parser.parse_args(argv)
        except NotTheWindow:
            continue
        if args.command == command:
            return args
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    problem = undecodable_argument(argv)
    if problem is not None:
        err(problem)
        return EXIT_BAD_ENCODING
    # Commands with their own parser: everything after ``--`` is the MCP upstream's command line, and the
    # hooks' fast path must not pay for argparse set-up, asyncio or the ORM.
    if argv[:1] == ["mcp-proxy"]:
        from reviewer_app.integrations.mcp_proxy.command import main as mcp_proxy_main

        return mcp_proxy_main(argv[1:])
    if argv[:1] == ["hook"]:
        from reviewer_app.integrations.claude_code.command import main as hook_main

        return hook_main(argv[1:])
    args = window_args(argv)
    if args is None:
        args = command_args(argv)
    parser = None
    if args is None:
        parser = build_parser()
        args = parser.parse_args(argv)
    ctx = make_context(args)
    if args.self_test:
        return _run_async(_self_test())
    if args.command in (None, "gui"):
        try:
            from reviewer_app.ui.startup.app import run_gui
        except ImportError as exc:  # Qt's libraries cannot load: name the missing system libraries, no traceback
            from reviewer_app.ui.startup.platform_deps import EXIT_NO_WINDOW, explain_qt_import_error

            explanation = explain_qt_import_error(exc)
            if explanation is None:
                raise
            print(f"reviewer-app: {explanation}", file=sys.stderr)
            return EXIT_NO_WINDOW

        return run_gui(ctx, demo=args.demo, screenshot=args.screenshot)
    command = COMMANDS.get(args.command)
    if command is None:
        (parser or build_parser()).error(f"unknown command {args.command!r}")
    return _run_async(command(ctx, args), database=ctx.database)


Command = Callable[[AppContext, argparse.Namespace], Awaitable[int]]


def _run_async(coro: Awaitable[int], database: str | None = None) -> int:
    from reviewer_app.domain.hitl import SchemaError

    try:
        return asyncio.run(coro)  # type: ignore[arg-type]
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # output piped into ``head`` and the like
        return 0
    except Exception as exc:
        failure = database_failure(exc, database) if database is not None else None
        if failure is None and not isinstance(exc, SchemaError):
            raise
        message, code = failure or (f"error: {exc}", EXIT_FAILED)
        err(message)
        return code


async def _self_test() -> int:
    from reviewer_app.runtime.selftest import self_test

    result = await self_test()
    out(result.summary)
    return 0 if result.ok else EXIT_FAILED


def _backend_command(module: str, function: str) -> Command:
    """A subcommand that runs ``module.function(backend, args, out=, err=, dump=)`` on an opened backend."""

    async def command(ctx: AppContext, args: argparse.Namespace) -> int:
        run = getattr(importlib.import_module(module), function)
        backend = open_backend(ctx)
        try:
            return int(await run(backend, args, out=out, err=err, dump=dump))
        finally:
            await backend.aclose()

    return command


def _family_command(module: str, function: str) -> Command:
    """``module.function(ctx, args)``, its module imported when the command runs (not on every start)."""

    async def command(ctx: AppContext, args: argparse.Namespace) -> int:
        run: Command = getattr(importlib.import_module(module), function)
        return await run(ctx, args)

    return command


COMMANDS: dict[str, Command] = {
    "run": _family_command("reviewer_app.cli.runs", "cmd_run"),
    "worker": _family_command("reviewer_app.cli.runs", "cmd_worker"),
    "pending": _family_command("reviewer_app.cli.pending", "cmd_pending"),
    "decide": _family_command("reviewer_app.cli.decide", "cmd_decide"),
    "runs": _family_command("reviewer_app.cli.runs", "cmd_runs"),
    "timeline": _family_command("reviewer_app.cli.runs", "cmd_timeline"),
    "audit": _family_command("reviewer_app.cli.audit", "cmd_audit"),
    "cancel": _family_command("reviewer_app.cli.runs", "cmd_cancel"),
    "resolve": _family_command("reviewer_app.cli.runs", "cmd_resolve"),
    "rules": _backend_command("reviewer_app.cli.rules", "run_rules"),
    "why": _backend_command("reviewer_app.cli.why", "run_why"),
    "stats": _backend_command("reviewer_app.cli.habits", "run_stats"),
}
