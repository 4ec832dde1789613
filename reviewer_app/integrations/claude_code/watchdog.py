"""A reaper for requests whose hook ended without a decision: killed outright (SIGKILL), or fell back.

The hook starts this watcher in its own session (so a signal to the hook's process group spares it) before it
creates its request. The watcher loads the backend's code while it waits (so a withdrawal is one write, not an
import), polls the hook's pid — with its start time, so a reused pid does not look alive — and when the hook is
gone while the request is still pending, withdraws it as "answered elsewhere" with a timeline note. A withdrawal
that fails (a read-only or full disk, a database server restarting) is tried again, backing off, for up to
:data:`WITHDRAW_FOR_S`: the record must not wait for a reviewer to approve a call the agent was told to ask
about. The hook stops the watcher when it answered with a decision; the watcher also gives up by itself after a
deadline. It needs no open window and no running worker; if it dies too, the next process to open the database
settles the request (``SQLHITLBackend.settle_abandoned_hooks``).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from typing import TYPE_CHECKING

from reviewer_app.domain.hook_lease import answered_elsewhere, process_alive
from reviewer_app.integrations.claude_code.lean import (
    SpawnedProcess,
    reviewer_command,
    spawn_watchdog,
    watchdog_command,
)

__all__ = ["reviewer_command", "start_watchdog", "stop_watchdog", "watch"]

if TYPE_CHECKING:
    from reviewer_app.integrations.claude_code.hook import HookOptions

log = logging.getLogger(__name__)

POLL_S = 0.05
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


def stop_watchdog(process: subprocess.Popen[bytes] | SpawnedProcess) -> None:
    try:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=2)
    except (OSError, subprocess.TimeoutExpired, TimeoutError):
        pass


def watch(database: str, hitl_id: str, pid: int, start_ticks: int | None, until: float, agent: str) -> int:
    """Wait for the hook to die (then withdraw its request, until that lands) or for the deadline."""
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    import asyncio

    import reviewer_app.hitl  # noqa: F401  (loaded now, while the hook lives: the withdrawal is one write later)

    while process_alive(pid, start_ticks):
        if time.time() > until:
            return 0
        time.sleep(POLL_S)
    why = f"the {agent} hook process (pid {pid}) ended"
    give_up_at = time.monotonic() + WITHDRAW_FOR_S
    delay = FIRST_RETRY_S
    while True:
        try:
            asyncio.run(withdraw(database, hitl_id, agent, why))
            return 0
        except Exception as exc:  # read-only, disk full, a server restarting, retries exhausted: try again
            if time.monotonic() + delay > give_up_at:
                log.warning("gave up withdrawing %s: %s", hitl_id, exc)
                return 1
        time.sleep(delay)
        delay = min(delay * 2, MAX_RETRY_S)


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
                    log.warning("timeline note not written: %s", exc)
        return withdrawn
    finally:
        await backend.aclose()
