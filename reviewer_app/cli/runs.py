"""``run``, ``worker``, ``resolve``, ``cancel``, ``runs`` and ``timeline``: driving and reading agent runs."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Awaitable
from typing import Any

from reviewer_app.cli.context import load_catalog, open_backend
from reviewer_app.cli.errors import EXIT_CONFLICT, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_NOT_FOUND, EXIT_USAGE
from reviewer_app.cli.output import dump, err, out, print_listing
from reviewer_app.config import AppContext
from reviewer_app.domain.sanitize import terminal_safe


def _stop_on_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - Windows
            signal.signal(sig, lambda *_: loop.call_soon_threadsafe(stop.set))


async def drive_until_finished(
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
        err(f"{why}; run {invocation_id} stays resumable (reviewer-app worker continues it)")
        return EXIT_INTERRUPTED
    record = waiter.result()
    final = await _final_text(backend, invocation_id)
    if final:
        print(terminal_safe(final, keep_newlines=True))
    err(f"run {invocation_id} {record.state}" + (f": {record.error}" if record.error else ""))
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
    from reviewer_app.runtime.llm_clients import ScriptedModel, read_script_file

    data = read_script_file(path)
    ScriptedModel.from_data(data)  # validates; raises ValueError naming the bad turn
    return data


async def cmd_run(ctx: AppContext, args: argparse.Namespace) -> int:
    from reviewer_app.runtime.agents import AgentConfigError
    from reviewer_app.runtime.runner import Runtime

    try:
        catalog = load_catalog(ctx)
        catalog.get(args.agent)
        script = _load_script(args.script) if args.script else None
    except (AgentConfigError, KeyError, ValueError) as exc:
        err(f"error: {exc.args[0] if isinstance(exc, KeyError) else exc}")
        return EXIT_USAGE
    backend = open_backend(ctx)
    runtime = Runtime(backend, catalog, workspaces_dir=ctx.workspaces_dir)
    try:
        await runtime.start(recover=False)
        try:
            invocation_id = await runtime.start_run(args.agent, args.prompt, session_id=args.session, script=script)
        except (KeyError, ValueError) as exc:
            err(f"error: {exc.args[0] if isinstance(exc, KeyError) else exc}")
            return EXIT_USAGE
        err(f"run {invocation_id} started: agent {args.agent}, database {ctx.database}")
        return await drive_until_finished(runtime, backend, invocation_id, quiet=args.quiet, timeout=args.timeout)
    finally:
        await runtime.stop()
        await backend.aclose()


async def cmd_worker(ctx: AppContext, args: argparse.Namespace) -> int:
    from reviewer_app.runtime.agents import AgentConfigError
    from reviewer_app.runtime.progress import ProgressPrinter
    from reviewer_app.runtime.runner import Runtime

    try:
        catalog = load_catalog(ctx)
    except AgentConfigError as exc:
        err(f"error: {exc}")
        return EXIT_USAGE
    backend = open_backend(ctx)
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
        err(f"worker {runtime.owner}: driving {len(runtime.active_runs())} run(s) from {ctx.database}")
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
    err("worker stopped" if stop.is_set() else "worker idle: nothing left to drive")
    return 0


async def _run_action(action: Awaitable[Any]) -> int | None:
    """Await an action on a run; its exit code when the runtime refuses it (no such run, or not in a state for it),
    said on stderr, else None."""
    try:
        await action
    except KeyError as exc:
        err(f"error: {exc.args[0]}")
        return EXIT_NOT_FOUND
    except ValueError as exc:
        err(f"error: {exc}")
        return EXIT_CONFLICT
    return None


async def cmd_resolve(ctx: AppContext, args: argparse.Namespace) -> int:
    from reviewer_app.runtime.runner import Runtime

    backend = open_backend(ctx)
    runtime = Runtime(backend, load_catalog(ctx), workspaces_dir=ctx.workspaces_dir)
    try:
        await runtime.start(recover=False)
        refused = await _run_action(runtime.rerun_or_abort(args.invocation_id, args.action, args.message))
        if refused is not None:
            return refused
        err(f"run {args.invocation_id}: {args.action}; continuing it in this process")
        return await drive_until_finished(runtime, backend, args.invocation_id, quiet=args.quiet, timeout=None)
    finally:
        await runtime.stop()
        await backend.aclose()


async def cmd_cancel(ctx: AppContext, args: argparse.Namespace) -> int:
    from reviewer_app.runtime.runner import Runtime

    backend = open_backend(ctx)
    runtime = Runtime(backend, load_catalog(ctx), workspaces_dir=ctx.workspaces_dir)
    try:
        refused = await _run_action(runtime.cancel_run(args.invocation_id))
    finally:
        await backend.aclose()
    if refused is not None:
        return refused
    out(f"run {args.invocation_id} cancelled")
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
    backend = open_backend(ctx)
    try:
        runs = await backend.list_runs(limit=args.limit)
    finally:
        await backend.aclose()

    def line(run: Any) -> str:
        waiting = f"  {run.pending} pending" if run.pending else ""
        return f"{run.id}  {run.state:<11} {run.agent or '-':<10} {run.session_id}  {elided_repr(run.prompt)}{waiting}"

    return print_listing(args.json, [run.to_dict() for run in runs], map(line, runs), "no runs")


async def cmd_timeline(ctx: AppContext, args: argparse.Namespace) -> int:
    from reviewer_app.domain.timeline import fold_events
    from reviewer_app.runtime.progress import ProgressPrinter

    backend = open_backend(ctx)
    try:
        run = await backend.get_run(args.invocation_id)
        events = await backend.events(args.invocation_id)
    finally:
        await backend.aclose()
    if run is None and not events:
        err(f"error: no run with id {args.invocation_id!r}")
        return EXIT_NOT_FOUND
    blocks = fold_events(events)
    if args.json:
        dump([block.to_dict() for block in blocks])
        return 0
    printer = ProgressPrinter(backend, sys.stdout.write, invocation_id=args.invocation_id)
    for line in printer.lines(events):
        out(line)
    return 0
