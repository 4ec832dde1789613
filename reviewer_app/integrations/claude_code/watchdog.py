"""A reaper for requests whose hook ended without a decision: killed outright (SIGKILL), or fell back.

The hook starts this watcher in its own session (so a signal to the hook's process group spares it) before it
creates its request, with a pipe for its stdin: the hook may write there why it is ending (the host stopped
reading its answer), and the pipe's end-of-file says at once that it exited, however it exited. The pid — with
its start time, so a reused pid does not look alive — stays the proof that it is gone. Then, while the request is
still pending, the watcher withdraws it as "answered elsewhere" with a timeline note: on a SQLite file with
``sqlite3`` alone (:meth:`.LeanStore.withdraw`, one transaction, the store's rows), else through the backend,
whose code it loads while it waits (so a withdrawal is one write, not an import). A withdrawal
that fails (a read-only or full disk, a database server restarting) is tried again, backing off, for up to
:data:`WITHDRAW_FOR_S`: the record must not wait for a reviewer to approve a call the agent was told to ask
about. The hook stops the watcher when it answered with a decision; the watcher also gives up by itself after a
deadline. It needs no open window and no running worker; if it dies too, the next process to open the database
settles the request (``SQLHITLBackend.settle_abandoned_hooks``).

Every waiting hook starts one, so its process starts lean: ``python -m reviewer_app hook _watch …`` comes straight
to :func:`main` (:mod:`reviewer_app.__main__`), which reads the command line :func:`.lean.watchdog_command` writes
without argparse or the hook command's module; ``logging``, ``subprocess`` and ``typing`` are not imported on
its way.
"""

from __future__ import annotations

import os
import select
import signal
import time

from reviewer_app.domain.hook_lease import answered_elsewhere, process_alive
from reviewer_app.integrations.claude_code.lean import (
    REASON_MAX_BYTES,
    SpawnedProcess,
    reviewer_command,
    spawn_watchdog,
    stop_watchdog,
    watchdog_command,
)
from reviewer_app.integrations.claude_code.lean_store import LeanStore, sqlite_file

__all__ = ["main", "reviewer_command", "start_watchdog", "stop_watchdog", "watch", "watch_arguments"]

TYPE_CHECKING = False  # no ``typing`` in the watchdog's process (see the module docstring)
if TYPE_CHECKING:
    import subprocess

    from reviewer_app.integrations.claude_code.hook import HookOptions

POLL_S = 0.05
EXIT_POLL_S = 0.002
"""How often the pid is looked at once the hook's pipe closed (it is exiting)."""
WITHDRAW_FOR_S = 3600.0
"""How long a failing withdrawal is retried; past that, the next process to open the database settles it."""
FIRST_RETRY_S = 0.1
MAX_RETRY_S = 5.0


def start_watchdog(
    options: HookOptions, hitl_id: str, *, deadline: float
) -> subprocess.Popen[bytes] | SpawnedProcess | None:
    """The watcher for ``hitl_id`` (:func:`.lean.spawn_watchdog`, which the lean path starts the same way)."""
    reviewer = list(options.reviewer_command or reviewer_command())
    process: subprocess.Popen[bytes] | SpawnedProcess | None = spawn_watchdog(
        watchdog_command(reviewer, options.database, hitl_id, options.host.value, deadline)
    )
    return process


_WATCH_OPTIONS = {"--db": str, "--hitl-id": str, "--pid": int, "--start-ticks": int, "--until": float, "--agent": str}
_WATCH_REQUIRED = ("--db", "--hitl-id", "--pid", "--until")

WatchArguments = tuple[str, str, int, int | None, float, str]


def watch_arguments(argv: list[str]) -> WatchArguments | None:
    """``hook _watch``'s options (database, request, pid, start ticks, deadline, agent) as the hook command's
    parser reads them, when each is one of its own spelled out with a value (``--db D`` or ``--db=D``) and every
    required one is there; None for anything else (help, an abbreviation, a value that looks like an option, a
    number that is not one…): that parser reads it then, and reports what is wrong."""
    values: dict[str, str] = {}
    index = 0
    while index < len(argv):
        name, equals, value = argv[index].partition("=")
        if name not in _WATCH_OPTIONS:
            return None
        if not equals:
            index += 1
            if index == len(argv) or argv[index].startswith("-"):
                return None
            value = argv[index]
        values[name] = value
        index += 1
    if any(name not in values for name in _WATCH_REQUIRED):
        return None
    try:
        ticks = values.get("--start-ticks")
        return (
            values["--db"],
            values["--hitl-id"],
            int(values["--pid"]),
            None if ticks is None else int(ticks),
            float(values["--until"]),
            values.get("--agent", "claude-code"),
        )
    except ValueError:
        return None


def main(argv: list[str]) -> int | None:
    """``hook _watch ARGS``: the watchdog, run; None when :func:`watch_arguments` leaves ``argv`` to the parser."""
    arguments = watch_arguments(argv)
    return None if arguments is None else watch(*arguments)


def watch(database: str, hitl_id: str, pid: int, start_ticks: int | None, until: float, agent: str) -> int:
    """Wait for the hook to die (then withdraw its request, until that lands) or for the deadline."""
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    lean = sqlite_file(database) is not None  # withdrawn with sqlite3 alone: nothing heavy to load while waiting
    if not lean:
        load_withdrawal_code()
    said = _wait_for_the_hook(pid, start_ticks, until)
    if said is None:
        return 0
    why = said or f"the {agent} hook process (pid {pid}) ended"
    give_up_at = time.monotonic() + WITHDRAW_FOR_S
    delay = FIRST_RETRY_S
    while True:
        try:
            if lean and withdraw_lean(database, hitl_id, agent, why) is not None:
                return 0
            import asyncio

            asyncio.run(withdraw(database, hitl_id, agent, why))
            return 0
        except Exception as exc:  # read-only, disk full, a server restarting, retries exhausted: try again
            if time.monotonic() + delay > give_up_at:
                import logging

                logging.getLogger(__name__).warning("gave up withdrawing %s: %s", hitl_id, exc)
                return 1
        time.sleep(delay)
        delay = min(delay * 2, MAX_RETRY_S)


def _wait_for_the_hook(pid: int, start_ticks: int | None, until: float) -> str | None:
    """Once the hook is gone, the reason it gave (``""``: none); None at the deadline.

    Stdin is the hook's pipe (:func:`.lean.tell_watchdog`): a line saying why it ends, then end-of-file when it
    exits, however it exits; the pid poll stays the proof that it is gone. (A stdin on ``/dev/null``, from an
    older hook, reads as that end-of-file at once: the poll alone decides then.)
    """
    said = bytearray()
    reading = True
    look_closely_until = 0.0
    while process_alive(pid, start_ticks):
        if time.time() > until:
            return None
        if not reading:
            time.sleep(EXIT_POLL_S if time.monotonic() < look_closely_until else POLL_S)
            continue
        try:
            ready, _, _ = select.select([0], [], [], POLL_S)
            chunk = os.read(0, 4096) if ready else None
        except (OSError, ValueError):  # no pollable stdin here: the pid poll alone
            reading = False
            continue
        if chunk:
            said += chunk[: max(REASON_MAX_BYTES - len(said), 0)]
        elif chunk is not None:  # end of file: the hook is exiting; look at once rather than at the next poll
            reading = False
            look_closely_until = time.monotonic() + 1.0
    if reading:  # a reason written just before it exited is still in the pipe
        try:
            while select.select([0], [], [], 0)[0] and (chunk := os.read(0, 4096)):
                said += chunk[: max(REASON_MAX_BYTES - len(said), 0)]
        except (OSError, ValueError):
            pass
    return printable_line(bytes(said))


def printable_line(raw: bytes) -> str:
    """The first line of what the hook said, printable characters only (it lands on the timeline)."""
    text = raw.decode("utf-8", "replace").split("\n", 1)[0]
    return "".join(char for char in text if char.isprintable()).strip()


def withdraw_lean(database: str, hitl_id: str, agent: str, why: str) -> bool | None:
    """:func:`withdraw` with ``sqlite3`` alone (:meth:`.LeanStore.withdraw`): the same rows in one transaction.

    None when this path cannot do it (not a SQLite file at the schema it knows, or arguments stored as blobs):
    :func:`withdraw` then does. Raises when the database cannot record it now (the caller tries again).
    """
    store = LeanStore.open(database)
    if store is None:
        return None
    try:
        withdrawn: bool | None = store.withdraw(hitl_id, f"system:{agent}", answered_elsewhere(why))
        return withdrawn
    finally:
        store.close()


def load_withdrawal_code() -> None:
    """Import what :func:`withdraw` runs, while the hook lives: once it is gone, withdrawing is one write.

    (``reviewer_app.hitl`` exports lazily, so importing the package alone loads none of it.)
    """
    import reviewer_app.domain.hitl
    import reviewer_app.domain.timeline
    import reviewer_app.hitl.core
    import reviewer_app.integrations.core  # noqa: F401


async def withdraw(database: str, hitl_id: str, agent: str, why: str) -> bool:
    """Cancel the request as answered elsewhere, with a note on its timeline; False if it was already decided.

    Raises when the database cannot record it now (the caller tries again); the note is only narration.
    """
    from reviewer_app.domain.hitl import HITLNotFound
    from reviewer_app.domain.timeline import BlockEvent, BlockKind, BlockOp
    from reviewer_app.hitl import SQLHITLBackend
    from reviewer_app.integrations.core import ReviewClient

    backend = SQLHITLBackend(database)
    try:
        try:
            withdrawn = await ReviewClient(backend, agent=agent).abandon(hitl_id, answered_elsewhere(why))
        except HITLNotFound:
            return False
        if withdrawn:
            record = await backend.get(hitl_id)
            note = {
                "status": "cancelled",
                "decision": "cancel",
                "message": answered_elsewhere(why),
                "resolved_ms": time.time_ns() // 1_000_000,
            }
            if record is not None:
                event = BlockEvent(
                    block_id=f"hitl_{hitl_id}",
                    kind=BlockKind.HITL,
                    op=BlockOp.PATCH,
                    data=note,
                    session_id=record["session_id"],
                    invocation_id=record["invocation_id"],
                    ts_ms=note["resolved_ms"],  # type: ignore[arg-type]
                )
                try:
                    await backend.append_blocks([event])
                except Exception as exc:  # the record is settled; only the note is missing
                    import logging

                    logging.getLogger(__name__).warning("timeline note not written: %s", exc)
        return withdrawn
    finally:
        await backend.aclose()
