"""The ``reviewer-app`` command: the window by default, headless subcommands for servers and scripts."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from reviewer_app import __version__
from reviewer_app.cli_errors import EXIT_BAD_ENCODING, database_failure, undecodable_argument
from reviewer_app.config import AppContext, default_agents_file, resolve_database
from reviewer_app.domain.sanitize import json_terminal_safe, redact_secrets, terminal_safe

EXIT_FAILED = 1  # the run failed or was cancelled; the audit chain is broken; the self-test failed
EXIT_USAGE = 2  # bad arguments or input (invalid JSON, a decision that does not fit the request)
EXIT_CONFLICT = 3  # the request was already decided (by whom and how is printed)
EXIT_NOT_FOUND = 4  # no such request or run
EXIT_CHANGED = 5  # the arguments are not the ones the operator named with --sha256
EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reviewer-app", description="Review and decide the approval requests AI agents raise before they act."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _add_common_options(parser, in_subcommand=False)
    parser.add_argument("--demo", action="store_true", help="seed a demo workspace and start scripted demo runs")
    parser.add_argument("--screenshot", help=argparse.SUPPRESS)  # `make screenshot`: grab the window to PATH, exit
    parser.add_argument(
        "--self-test", action="store_true", help="run a scripted agent on a temporary database, approve, check; exit"
    )
    sub = parser.add_subparsers(dest="command")
    gui = sub.add_parser("gui", help="open the window (the default)")
    gui.add_argument("--demo", action="store_true", default=argparse.SUPPRESS, help="start scripted demo runs")
    _add_common_options(gui, in_subcommand=True)

    run = sub.add_parser("run", help="run one agent in this process until it ends (decisions may come from anywhere)")
    run.add_argument("agent", help="agent name (see --agents; 'demo' is built in)")
    run.add_argument("prompt", help="the task for the agent")
    run.add_argument("--script", help="JSON or YAML list of turns for a scripted model (replaces the agent's model)")
    run.add_argument("--session", help="run in this existing session (shares its workspace)")
    run.add_argument("--timeout", type=float, help="give up waiting after this many seconds (the run stays resumable)")
    run.add_argument("--quiet", action="store_true", help="no progress lines on stderr")

    worker = sub.add_parser("worker", help="resume every resumable run and serve until SIGINT/SIGTERM")
    worker.add_argument("--exit-when-idle", action="store_true", help="exit once no run is left to drive")
    worker.add_argument("--max-runs", type=int, default=16, help="how many runs may be active at once (default 16)")
    worker.add_argument("--quiet", action="store_true", help="no progress lines on stderr")

    pending = sub.add_parser("pending", help="list the requests waiting for a decision")
    pending.add_argument("--json", action="store_true", help="a JSON list of request records")

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

    runs = sub.add_parser("runs", help="list runs, newest first")
    runs.add_argument("--json", action="store_true")
    runs.add_argument("--limit", type=int, default=200)

    timeline = sub.add_parser("timeline", help="a run's timeline (folded blocks)")
    timeline.add_argument("invocation_id")
    timeline.add_argument("--json", action="store_true")

    audit = sub.add_parser("audit", help="the decision audit log; 'audit verify' checks its hash chain")
    audit.add_argument("action", nargs="?", choices=["verify", "export"])
    audit.add_argument("--json", action="store_true")
    audit.add_argument("--format", choices=["jsonl", "csv"], default="jsonl", help="export format (default jsonl)")
    audit.add_argument("--output", "-o", help="export to this file instead of standard output")

    cancel = sub.add_parser("cancel", help="cancel a run and its pending requests")
    cancel.add_argument("invocation_id")

    resolve = sub.add_parser(
        "resolve", help="settle an interrupted run: re-run its tool call or abort it, then drive it"
    )
    resolve.add_argument("invocation_id")
    resolve.add_argument("action", choices=["rerun", "abort"])
    resolve.add_argument("--message", default="aborted by operator", help="the reason the model sees on abort")
    resolve.add_argument("--quiet", action="store_true")

    sub.add_parser("mcp-proxy", help="serve an MCP server to any MCP host with its tool calls reviewed here")

    from reviewer_app.cli_rules import add_rules_parser

    add_rules_parser(sub, lambda action: _add_common_options(action, in_subcommand=True))
    from reviewer_app.cli_habits import add_stats_parser
    from reviewer_app.cli_why import add_why_parser

    for add in (add_why_parser, add_stats_parser):
        add(sub, lambda parser: _add_common_options(parser, in_subcommand=True))
    for name in ("run", "worker", "pending", "decide", "runs", "timeline", "audit", "cancel", "resolve"):
        _add_common_options(sub.choices[name], in_subcommand=True)
    from reviewer_app.integrations.claude_code.command import add_hook_parser

    add_hook_parser(sub)
    return parser


def _add_common_options(parser: argparse.ArgumentParser, *, in_subcommand: bool) -> None:
    """Global options, also accepted after the subcommand (``reviewer-app run demo "x" --db f.db``)."""
    default: Any = argparse.SUPPRESS if in_subcommand else None
    parser.add_argument(
        "--db", default=default, help="database path or SQLAlchemy URL (default: $REVIEWER_DB or the user data dir)"
    )
    parser.add_argument("--reviewer", default=default, help="name recorded on decisions (default: the OS user)")
    parser.add_argument(
        "--agents", default=default, help="agents TOML file (default: agents.toml in the user config dir, if any)"
    )
    parser.add_argument("--workspaces", default=default, help="folder for the sessions' workspaces")


def make_context(args: argparse.Namespace) -> AppContext:
    ctx = AppContext(
        database=resolve_database(getattr(args, "db", None)),
        reviewer=getattr(args, "reviewer", None),
        agents_file=Path(args.agents) if getattr(args, "agents", None) else None,
    )
    if getattr(args, "workspaces", None):
        ctx.workspaces_dir = Path(args.workspaces)
    return ctx


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    problem = undecodable_argument(argv)
    if problem is not None:
        _err(problem)
        return EXIT_BAD_ENCODING
    # Commands with their own parser: everything after ``--`` is the MCP upstream's command line, and the
    # hooks' fast path must not pay for argparse set-up, asyncio or the ORM.
    if argv[:1] == ["mcp-proxy"]:
        from reviewer_app.integrations.mcp_proxy.command import main as mcp_proxy_main

        return mcp_proxy_main(argv[1:])
    if argv[:1] == ["hook"]:
        from reviewer_app.integrations.claude_code.command import main as hook_main

        return hook_main(argv[1:])
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
        parser.error(f"unknown command {args.command!r}")
    return _run_async(command(ctx, args), database=ctx.database)


# -- headless commands (never import Qt) ---------------------------------------------------------------------

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
        _err(message)
        return code


def _err(message: str) -> None:
    """A line for the person at the terminal: secrets redacted, control characters made visible."""
    print(terminal_safe(redact_secrets(message), keep_newlines=True), file=sys.stderr, flush=True)


def _out(line: str) -> None:
    print(terminal_safe(line), flush=False)


def _dump(value: Any) -> None:
    print(json_terminal_safe(json.dumps(value, indent=2, ensure_ascii=False, default=str)))


def _print_listing(as_json: bool, data: list[Any], lines: Iterable[str], empty: str) -> int:
    """A listing as JSON, or one line per item (``empty`` when there is none); ``lines`` is consumed lazily."""
    if as_json:
        _dump(data)
    elif not data:
        _out(empty)
    else:
        for line in lines:
            _out(line)
    return 0


def _open_backend(ctx: AppContext) -> Any:
    from reviewer_app.hitl import SQLHITLBackend

    return SQLHITLBackend(ctx.database, reviewer=ctx.reviewer)


def _load_catalog(ctx: AppContext) -> Any:
    from reviewer_app.runtime.agents import AgentCatalog

    return AgentCatalog.load(ctx.agents_file, default_path=default_agents_file())


def _stop_on_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - Windows
            signal.signal(sig, lambda *_: loop.call_soon_threadsafe(stop.set))


async def _self_test() -> int:
    from reviewer_app.runtime.selftest import self_test

    result = await self_test()
    _out(result.summary)
    return 0 if result.ok else EXIT_FAILED


async def _drive_until_finished(
    runtime: Any, backend: Any, invocation_id: str, *, quiet: bool, timeout: float | None
) -> int:
    """Follow one run in this process until it ends, a signal arrives, or ``timeout`` passes."""
    from reviewer_app.runtime.progress import ProgressPrinter

    stop = asyncio.Event()
    _stop_on_signals(stop)
    printer = ProgressPrinter(backend, sys.stderr.write, invocation_id=invocation_id)
    printed = asyncio.Event()
    follower = None if quiet else asyncio.create_task(printer.follow(printed))
    waiter = asyncio.create_task(runtime.wait_for_run(invocation_id))
    stopper = asyncio.create_task(stop.wait())
    try:
        done, _ = await asyncio.wait({waiter, stopper}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        printed.set()
        stopper.cancel()
        if not waiter.done():
            waiter.cancel()
        await asyncio.gather(*(t for t in (follower, stopper, waiter) if t is not None), return_exceptions=True)
    if not quiet:
        await printer.poll()
    if waiter not in done:
        why = "stopped by signal" if stopper in done else f"still running after {timeout} s"
        _err(f"{why}; run {invocation_id} stays resumable (reviewer-app worker continues it)")
        return EXIT_INTERRUPTED
    record = waiter.result()
    final = await _final_text(backend, invocation_id)
    if final:
        print(terminal_safe(final, keep_newlines=True))
    _err(f"run {invocation_id} {record.state}" + (f": {record.error}" if record.error else ""))
    return 0 if record.state == "done" else EXIT_FAILED


async def _final_text(backend: Any, invocation_id: str) -> str | None:
    latest = await backend.latest_checkpoint(invocation_id)
    if latest is None:
        return None
    messages = latest[1].get("messages") or []
    if messages and messages[-1].get("role") == "assistant":
        content = messages[-1].get("content")
        return content if isinstance(content, str) else None
    return None


def _load_script(path: str) -> Any:
    """A script's turns as data (kept in the run's checkpoint so any process can resume it)."""
    from reviewer_app.runtime.models import ScriptedModel, read_script_file

    data = read_script_file(path)
    ScriptedModel.from_data(data)  # validates; raises ValueError naming the bad turn
    return data


async def cmd_run(ctx: AppContext, args: argparse.Namespace) -> int:
    from reviewer_app.runtime.agents import AgentConfigError
    from reviewer_app.runtime.runner import Runtime

    try:
        catalog = _load_catalog(ctx)
        catalog.get(args.agent)
        script = _load_script(args.script) if args.script else None
    except (AgentConfigError, KeyError, ValueError) as exc:
        _err(f"error: {exc.args[0] if isinstance(exc, KeyError) else exc}")
        return EXIT_USAGE
    backend = _open_backend(ctx)
    runtime = Runtime(backend, catalog, workspaces_dir=ctx.workspaces_dir)
    try:
        await runtime.start(recover=False)
        try:
            invocation_id = await runtime.start_run(args.agent, args.prompt, session_id=args.session, script=script)
        except (KeyError, ValueError) as exc:
            _err(f"error: {exc.args[0] if isinstance(exc, KeyError) else exc}")
            return EXIT_USAGE
        _err(f"run {invocation_id} started: agent {args.agent}, database {ctx.database}")
        return await _drive_until_finished(runtime, backend, invocation_id, quiet=args.quiet, timeout=args.timeout)
    finally:
        await runtime.stop()
        await backend.aclose()


async def cmd_worker(ctx: AppContext, args: argparse.Namespace) -> int:
    from reviewer_app.runtime.agents import AgentConfigError
    from reviewer_app.runtime.progress import ProgressPrinter
    from reviewer_app.runtime.runner import Runtime

    try:
        catalog = _load_catalog(ctx)
    except AgentConfigError as exc:
        _err(f"error: {exc}")
        return EXIT_USAGE
    backend = _open_backend(ctx)
    runtime = Runtime(
        backend,
        catalog,
        workspaces_dir=ctx.workspaces_dir,
        max_concurrent_runs=max(args.max_runs, 1),
        recovery_interval_s=1.0,  # dead owners noticed within seconds (runtime/liveness.py)
    )
    stop = asyncio.Event()
    _stop_on_signals(stop)
    printer = ProgressPrinter(backend, sys.stderr.write, after_seq=await backend.last_event_seq())
    printed = asyncio.Event()
    follower = None if args.quiet else asyncio.create_task(printer.follow(printed))
    try:
        await runtime.start()
        _err(f"worker {runtime.owner}: driving {len(runtime.active_runs())} run(s) from {ctx.database}")
        while not stop.is_set():
            if args.exit_when_idle and not runtime.active_runs():
                await runtime.recover()
                if not runtime.active_runs():
                    break
            try:
                await asyncio.wait_for(stop.wait(), 0.5)
            except TimeoutError:
                pass
    finally:
        if follower is not None:
            printed.set()
            await asyncio.gather(follower, return_exceptions=True)
            await printer.poll()
        await runtime.stop()
        await backend.aclose()
    _err("worker stopped" if stop.is_set() else "worker idle: nothing left to drive")
    return 0


async def _settle_abandoned_hooks(backend: Any) -> None:
    """Requests whose hook already answered and is gone leave the queue before it is shown (never fatal here)."""
    try:
        await backend.settle_abandoned_hooks()
    except Exception as exc:  # the listing still works on a database that cannot be written now
        print(f"warning: could not settle the requests of hooks that are gone: {exc}", file=sys.stderr)


async def cmd_pending(ctx: AppContext, args: argparse.Namespace) -> int:
    from reviewer_app.cli_pending import print_pending

    backend = _open_backend(ctx)
    try:
        await _settle_abandoned_hooks(backend)
        return await print_pending(backend, args.json, sys.stdout)
    finally:
        await backend.aclose()


def _backend_command(module: str, function: str) -> Command:
    """A subcommand that runs ``module.function(backend, args, out=, err=, dump=)`` on an opened backend."""

    async def command(ctx: AppContext, args: argparse.Namespace) -> int:
        import importlib

        run = getattr(importlib.import_module(module), function)
        backend = _open_backend(ctx)
        try:
            return int(await run(backend, args, out=_out, err=_err, dump=_dump))
        finally:
            await backend.aclose()

    return command


def _read_args_file(path: str) -> str:
    """``--args-file``: a file, or stdin for ``-`` (no limit on size, unlike one argv string)."""
    return sys.stdin.buffer.read().decode("utf-8") if path == "-" else Path(path).read_text("utf-8")


async def cmd_decide(ctx: AppContext, args: argparse.Namespace) -> int:
    from reviewer_app.domain.decisions import Decision, DecisionError, DecisionKind, args_digest
    from reviewer_app.domain.hitl import HITLConflict, HITLNotFound
    from reviewer_app.hitl import shown_arguments

    edited = None
    if args.args_file is not None:
        if args.args is not None:
            _err("error: give the edited arguments with --args or --args-file, not both")
            return EXIT_USAGE
        try:
            args.args = _read_args_file(args.args_file)
        except (OSError, UnicodeDecodeError) as exc:
            _err(f"error: cannot read the edited arguments from {args.args_file}: {exc}")
            return EXIT_USAGE
    if args.args is not None:
        try:
            edited = json.loads(args.args)
        except json.JSONDecodeError as exc:
            _err(f"error: --args is not valid JSON: {exc}")
            return EXIT_USAGE
        if not isinstance(edited, dict):
            _err("error: --args must be a JSON object")
            return EXIT_USAGE
    kind = DecisionKind(args.decision)
    if kind is DecisionKind.EDIT and edited is None:
        _err("error: edit needs the new arguments: --args '{...}'")
        return EXIT_USAGE
    if kind is not DecisionKind.EDIT and edited is not None:
        _err(f"error: --args only goes with edit, not {kind.value}")
        return EXIT_USAGE
    backend = _open_backend(ctx)
    try:
        record = await backend.get(args.hitl_id)
        if record is None:
            _err(f"error: no HITL request with id {args.hitl_id!r}")
            return EXIT_NOT_FOUND
        shown = shown_arguments(record)
        current = args_digest(shown)
        if args.sha256 is not None and args.sha256.strip().lower() != current:
            _err(
                f"error: {args.hitl_id} changed since you reviewed it: you named SHA-256 {args.sha256.strip()[:12]}…, "
                f"its arguments now hash to {current[:12]}…; they are now: "
                f"{json.dumps(shown, ensure_ascii=False, default=str)}"
            )
            return EXIT_CHANGED
        digest = current if kind.needs_hash else None
        try:
            decision = Decision(kind, message=args.message, edited_args=edited, args_sha256=digest)
        except DecisionError as exc:
            _err(f"error: {exc}")
            return EXIT_USAGE
        try:
            decided = await backend.decide(args.hitl_id, decision)
        except HITLNotFound:
            _err(f"error: no HITL request with id {args.hitl_id!r}")
            return EXIT_NOT_FOUND
        except HITLConflict as exc:
            _err(f"error: {exc}")
            return EXIT_CONFLICT
        except DecisionError as exc:
            _err(f"error: {exc}")
            return EXIT_USAGE
    finally:
        await backend.aclose()
    if kind.needs_hash:
        what = decided.get("tool_name") or decided["hitl_type"]
        _err(f"{kind.value}: {what} with the arguments shown: {json.dumps(shown, ensure_ascii=False, default=str)}")
    if args.json:
        _dump(decided)
    else:
        _out(f"{decided['hitl_id']}: {kind.value} (by {backend.reviewer})")
    return 0


def elided_repr(text: str | None, width: int = 60) -> str:
    """A prompt on one line, quoted, elided inside its quotes (never a cut-off closing quote)."""
    flat = " ".join((text or "").split())
    quoted = repr(flat)
    if len(quoted) <= width:
        return quoted
    while len(repr(flat + "…")) > width and flat:
        flat = flat[: max(0, len(flat) - max(1, len(repr(flat + "…")) - width))]
    return repr(flat.rstrip() + "…")


async def cmd_runs(ctx: AppContext, args: argparse.Namespace) -> int:
    backend = _open_backend(ctx)
    try:
        runs = await backend.list_runs(limit=args.limit)
    finally:
        await backend.aclose()

    def line(run: Any) -> str:
        waiting = f"  {run.pending} pending" if run.pending else ""
        return f"{run.id}  {run.state:<11} {run.agent or '-':<10} {run.session_id}  {elided_repr(run.prompt)}{waiting}"

    return _print_listing(args.json, [run.to_dict() for run in runs], map(line, runs), "no runs")


async def cmd_timeline(ctx: AppContext, args: argparse.Namespace) -> int:
    from reviewer_app.domain.timeline import fold_events
    from reviewer_app.runtime.progress import ProgressPrinter

    backend = _open_backend(ctx)
    try:
        run = await backend.get_run(args.invocation_id)
        events = await backend.events(args.invocation_id)
    finally:
        await backend.aclose()
    if run is None and not events:
        _err(f"error: no run with id {args.invocation_id!r}")
        return EXIT_NOT_FOUND
    blocks = fold_events(events)
    if args.json:
        _dump([block.to_dict() for block in blocks])
        return 0
    printer = ProgressPrinter(backend, sys.stdout.write, invocation_id=args.invocation_id)
    for line in printer.lines(events):
        _out(line)
    return 0


async def cmd_audit(ctx: AppContext, args: argparse.Namespace) -> int:
    backend = _open_backend(ctx)
    try:
        if args.action == "export":
            return await _export_audit(backend, args.format, args.output)
        if args.action == "verify":
            report = await backend.verify_audit()
        else:
            from reviewer_app.cli_audit import print_audit

            return await print_audit(backend, args.json, sys.stdout)  # streamed: flat memory at any length
    finally:
        await backend.aclose()
    if args.action == "verify":
        if args.json:
            _dump(
                {
                    "ok": report.ok,
                    "rows_checked": report.rows_checked,
                    "first_bad_id": report.first_bad_id,
                    "problem": report.problem,
                    "anchors_checked": report.anchors_checked,
                    "warning": report.warning,
                }
            )
        elif report.ok:
            anchored = f", checked against {report.anchors_checked} anchors" if report.anchors_checked else ""
            _out(f"audit chain ok: {report.rows_checked} rows{anchored}")
            if report.warning:
                _err(f"warning: {report.warning}")
        else:
            where = f" at row {report.first_bad_id}" if report.first_bad_id is not None else ""
            _out(f"audit chain BROKEN{where}: {report.problem}")
        return 0 if report.ok else EXIT_FAILED
    return 0


async def cmd_cancel(ctx: AppContext, args: argparse.Namespace) -> int:
    from reviewer_app.runtime.runner import Runtime

    backend = _open_backend(ctx)
    runtime = Runtime(backend, _load_catalog(ctx), workspaces_dir=ctx.workspaces_dir)
    try:
        await runtime.cancel_run(args.invocation_id)
    except KeyError as exc:
        _err(f"error: {exc.args[0]}")
        return EXIT_NOT_FOUND
    except ValueError as exc:
        _err(f"error: {exc}")
        return EXIT_CONFLICT
    finally:
        await backend.aclose()
    _out(f"run {args.invocation_id} cancelled")
    return 0


async def cmd_resolve(ctx: AppContext, args: argparse.Namespace) -> int:
    from reviewer_app.runtime.runner import Runtime

    backend = _open_backend(ctx)
    runtime = Runtime(backend, _load_catalog(ctx), workspaces_dir=ctx.workspaces_dir)
    try:
        await runtime.start(recover=False)
        try:
            await runtime.resolve_interrupted(args.invocation_id, args.action, args.message)
        except KeyError as exc:
            _err(f"error: {exc.args[0]}")
            return EXIT_NOT_FOUND
        except ValueError as exc:
            _err(f"error: {exc}")
            return EXIT_CONFLICT
        _err(f"run {args.invocation_id}: {args.action}; continuing it in this process")
        return await _drive_until_finished(runtime, backend, args.invocation_id, quiet=args.quiet, timeout=None)
    finally:
        await runtime.stop()
        await backend.aclose()


COMMANDS: dict[str, Command] = {
    "run": cmd_run,
    "worker": cmd_worker,
    "pending": cmd_pending,
    "decide": cmd_decide,
    "runs": cmd_runs,
    "timeline": cmd_timeline,
    "audit": cmd_audit,
    "cancel": cmd_cancel,
    "resolve": cmd_resolve,
    "rules": _backend_command("reviewer_app.cli_rules", "run_rules"),
    "why": _backend_command("reviewer_app.cli_why", "run_why"),
    "stats": _backend_command("reviewer_app.cli_habits", "run_stats"),
}


if __name__ == "__main__":
    sys.exit(main())


async def _export_audit(backend: Any, fmt: str, output: str | None) -> int:
    """The decision log as JSONL or CSV, page by page, ending with the chain's verification result.

    JSONL ends with one ``{"verification": ...}`` line; CSV gets the result on stderr (a CSV has no place for it).
    """
    from reviewer_app.domain.audit_export import csv_header, format_entries  # redacted, CSV formulas made inert

    handle: Any = open(output, "w", encoding="utf-8", newline="") if output else sys.stdout  # noqa: SIM115, ASYNC230
    try:
        if fmt == "csv":
            handle.write(csv_header())
        after = 0
        while page := await backend.audit_page(after_id=after):
            handle.write(format_entries(page, fmt))
            after = page[-1].id
        report = await backend.verify_audit()
        verification = {
            "ok": report.ok,
            "rows_checked": report.rows_checked,
            "problem": report.problem,
            "anchors_checked": report.anchors_checked,
            "warning": report.warning,
        }
        if fmt != "csv":
            handle.write(json.dumps({"verification": verification}) + "\n")
        else:
            _err(f"verification: {json.dumps(verification)}")
    finally:
        if output:
            handle.close()
    return 0 if report.ok else EXIT_FAILED
