"""How soon a waiting hook's request leaves the inbox once its host is gone, p50/p99, next to a bare reference.

Two ways the host goes: the hook is killed (SIGKILL: its watchdog notices the exit and withdraws the request), and
the host stops reading the answer (its end of the hook's stdout pipe closes: the hook notices and withdraws it
itself). Each round starts the real ``reviewer-app hook claude-code`` on a call that must wait, waits until its
pending request is visible to another process (as an open window's poll sees it) and ``--settle`` seconds more
(the hook is waiting then), does the deed, and polls the request until it is no longer pending.

The reference, round by round in the same run: a bare Python process that notices the same thing the same way (a
dead pid polled every 50 ms as the watchdog does; a thread blocked in ``poll`` on its stdout as the hook does) and
commits one raw ``sqlite3`` UPDATE, watched by the same 5 ms poll: the floor under Reviewer's figure. The README
promises about two seconds.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from common import Goal, describe_ms, new_database, report

TARGET_P99_MS = 2000.0
POLL_S = 0.005

_REFERENCE = """
import os, select, sqlite3, sys, time
db, row, victim = sys.argv[1], sys.argv[2], int(sys.argv[3])
connection = sqlite3.connect(db, isolation_level=None)
connection.execute("PRAGMA journal_mode=WAL")
connection.execute("INSERT INTO reference (id, status) VALUES (?, 'pending')", (row,))
if victim:  # the killed case: poll the pid, as the watchdog does
    while True:
        try:
            os.kill(victim, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
else:  # the host stops reading: block until stdout's reader is gone
    poller = select.poll()
    poller.register(sys.stdout.fileno(), 0)
    poller.poll()
connection.execute("UPDATE reference SET status = 'cancelled' WHERE id = ?", (row,))
"""


def payload(index: int) -> bytes:
    return json.dumps(
        {
            "session_id": "bench-withdrawal",
            "transcript_path": "/nonexistent/transcript.jsonl",
            "cwd": "/tmp",
            "prompt_id": "bench-prompt",
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": f"touch /tmp/withdrawal-{index}", "description": "bench"},
            "tool_use_id": f"toolu_withdrawal_{index}_{time.time_ns()}",
        }
    ).encode()


def _wait_while(status: Callable[[], str | None], state: str | None, what: str, since: float) -> float:
    """Poll ``status`` every 5 ms while it is ``state``; seconds from ``since`` to the change."""
    while status() == state:
        if time.perf_counter() - since > 60:
            raise TimeoutError(what)
        time.sleep(POLL_S)
    return time.perf_counter() - since


def _gone(process: subprocess.Popen[bytes], case: str) -> float:
    """Do the deed; the clock's start."""
    if case == "killed":
        process.kill()
        started = time.perf_counter()
        process.wait()
        return started
    assert process.stdout is not None
    process.stdout.close()  # the host stopped reading
    return time.perf_counter()


def one_hook(db: Path, index: int, settle_s: float, case: str) -> float:
    command = [sys.executable, "-m", "reviewer_app", "hook", "claude-code", "--db", str(db), "--timeout", "120"]
    command.append("--no-transcript")
    hook = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert hook.stdin is not None
    hook.stdin.write(payload(index))
    hook.stdin.close()
    marker = f"%withdrawal-{index}%"
    connection = sqlite3.connect(db)
    query = "SELECT status FROM hitl_requests WHERE summary LIKE ? ORDER BY created_at DESC LIMIT 1"

    def status() -> str | None:
        rows = connection.execute(query, (marker,)).fetchall()
        return rows[0][0] if rows else None

    try:
        _wait_while(status, None, "the request never became visible", time.perf_counter())
        time.sleep(settle_s)
        took = _wait_while(status, "pending", "the request was never withdrawn", _gone(hook, case))
        hook.wait()
        return took
    finally:
        connection.close()
        if hook.poll() is None:
            hook.kill()
            hook.wait()
        if hook.stdout is not None:
            hook.stdout.close()


def one_reference(db: Path, index: int, settle_s: float, case: str) -> float:
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]) if case == "killed" else None
    watcher = subprocess.Popen(
        [sys.executable, "-c", _REFERENCE, str(db), str(index), str(victim.pid if victim else 0)],
        stdout=subprocess.PIPE,
    )
    connection = sqlite3.connect(db)

    def status() -> str | None:
        rows = connection.execute("SELECT status FROM reference WHERE id = ?", (index,)).fetchall()
        return rows[0][0] if rows else None

    try:
        _wait_while(status, None, "the reference row never became visible", time.perf_counter())
        time.sleep(settle_s)
        took = _wait_while(status, "pending", "the reference never noticed", _gone(victim or watcher, case))
        watcher.wait()
        return took
    finally:
        connection.close()
        for process in (victim, watcher):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kills", type=int, default=20, help="rounds of each case")
    parser.add_argument("--settle", type=float, default=1.0, help="seconds between visible and the deed")
    options = parser.parse_args()
    figures: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = new_database(Path(tmp) / "bench.db")
        reference_db = Path(tmp) / "reference.db"
        with sqlite3.connect(reference_db) as connection:
            connection.execute("CREATE TABLE reference (id INTEGER PRIMARY KEY, status TEXT)")
        for number, case in enumerate(("killed", "stopped_reading")):
            hook: list[float] = []
            reference: list[float] = []
            for index in range(options.kills):
                row = number * options.kills + index
                hook.append(one_hook(db, row, options.settle, case))
                reference.append(one_reference(reference_db, row, options.settle, case))
                time.sleep(0.3)  # the watchdog exits after withdrawing
            figures[case] = describe_ms(hook)
            figures[f"{case}_reference"] = describe_ms(reference)
            print(
                f"withdrawal, hook {case.replace('_', ' ')}, over {options.kills} rounds: "
                + json.dumps({k: round(v, 1) for k, v in figures[case].items()})
                + "; reference: "
                + json.dumps({k: round(v, 1) for k, v in figures[f"{case}_reference"].items()})
            )
    report(
        [
            Goal("hook_withdrawal_p99", figures["killed"]["p99_ms"], TARGET_P99_MS, "ms", at_least=False),
            Goal(
                "hook_withdrawal_stopped_reading_p99",
                figures["stopped_reading"]["p99_ms"],
                TARGET_P99_MS,
                "ms",
                at_least=False,
            ),
        ],
        {"withdrawal_ms": figures, "rounds": options.kills, "settle_s": options.settle},
        bench="withdrawal",
    )


if __name__ == "__main__":
    main()
