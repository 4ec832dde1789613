"""A reaper for requests whose hook was killed outright (SIGKILL): nothing in the hook runs then.

The hook starts this watcher in its own session (so a signal to the hook's process group spares it) before it
creates its request. The watcher polls the hook's pid — with its start time, so a reused pid does not look
alive — and when the hook is gone while the request is still pending, withdraws it as "answered elsewhere" with
a timeline note, within a second or two. The hook stops the watcher when it ends normally; the watcher also
gives up by itself after a deadline. It needs no open window and no running worker.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING

from reviewer_app.integrations.claude_code.request import process_start_ticks

if TYPE_CHECKING:
    from reviewer_app.integrations.claude_code.hook import HookOptions

POLL_S = 0.1


def reviewer_command() -> list[str]:
    """How to run ``reviewer-app`` again from this process (a frozen bundle is its own executable)."""
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, "-m", "reviewer_app"]


def start_watchdog(options: HookOptions, hitl_id: str, *, deadline: float) -> subprocess.Popen[bytes] | None:
    pid = os.getpid()
    command = [*(options.reviewer_command or reviewer_command()), "hook", "_watch"]
    command += ["--db", options.database, "--hitl-id", hitl_id, "--pid", str(pid), "--until", str(int(deadline))]
    command += ["--agent", options.host.value]
    ticks = process_start_ticks(pid)
    if ticks is not None:
        command += ["--start-ticks", str(ticks)]
    try:
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        return None  # no reaper: the hook still abandons on every signal it can catch


def stop_watchdog(process: subprocess.Popen[bytes]) -> None:
    try:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=2)
    except (OSError, subprocess.TimeoutExpired):
        pass


def process_alive(pid: int, start_ticks: int | None) -> bool:
    """Whether ``pid`` is still the process that started at ``start_ticks`` (zombies count as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rsplit(b")", 1)[1].split()[0]
        if state in (b"Z", b"X"):
            return False
    except (OSError, IndexError):
        pass
    return start_ticks is None or process_start_ticks(pid) in (None, start_ticks)


def watch(database: str, hitl_id: str, pid: int, start_ticks: int | None, until: float, agent: str) -> int:
    """Wait for the hook to die (then withdraw its request) or for the deadline."""
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    while process_alive(pid, start_ticks):
        if time.time() > until:
            return 0
        time.sleep(POLL_S)
    import asyncio

    asyncio.run(withdraw(database, hitl_id, agent, f"the {agent} hook process (pid {pid}) ended"))
    return 0


async def withdraw(database: str, hitl_id: str, agent: str, why: str) -> bool:
    """Cancel the request as answered elsewhere, with a note on its timeline; False if it was already decided."""
    from reviewer_app.domain.hitl import HITLError
    from reviewer_app.domain.timeline import BlockEvent, BlockKind, BlockOp
    from reviewer_app.hitl import SQLHITLBackend
    from reviewer_app.integrations.core import ANSWERED_ELSEWHERE, ReviewClient

    backend = SQLHITLBackend(database)
    try:
        record = await backend.get(hitl_id)
        if record is None:
            return False
        try:
            withdrawn = await ReviewClient(backend, agent=agent).abandon(hitl_id, f"{ANSWERED_ELSEWHERE} ({why})")
        except HITLError:
            return False
        if withdrawn:
            note = {
                "status": "cancelled",
                "decision": "cancel",
                "message": f"{ANSWERED_ELSEWHERE} ({why})",
                "resolved_ms": time.time_ns() // 1_000_000,
            }
            event = BlockEvent(
                block_id=f"hitl_{hitl_id}",
                kind=BlockKind.HITL,
                op=BlockOp.PATCH,
                data=note,
                session_id=record["session_id"],
                invocation_id=record["invocation_id"],
                ts_ms=note["resolved_ms"],  # type: ignore[arg-type]
            )
            await backend.append_blocks([event])
        return withdrawn
    finally:
        await backend.aclose()
