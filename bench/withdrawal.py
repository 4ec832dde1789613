"""How soon a killed hook's request leaves the inbox: SIGKILL to "answered elsewhere" committed, p50/p99.

Each round starts the real ``reviewer-app hook claude-code`` on a call that must wait, waits until its pending
request is visible to another process (as an open window's poll sees it) and ``--settle`` seconds more (the hook
is waiting then), kills it with SIGKILL, and polls the request until its watchdog has withdrawn it. The README
promises about two seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import Goal, describe_ms, new_database, report

TARGET_P99_MS = 2000.0


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


def status(connection: sqlite3.Connection, summary_like: str) -> str | None:
    rows = connection.execute(
        "SELECT status FROM hitl_requests WHERE summary LIKE ? ORDER BY created_at DESC LIMIT 1", (summary_like,)
    ).fetchall()
    return rows[0][0] if rows else None


def one_kill(db: Path, index: int, settle_s: float) -> float:
    command = [sys.executable, "-m", "reviewer_app", "hook", "claude-code", "--db", str(db), "--timeout", "120"]
    command.append("--no-transcript")
    hook = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert hook.stdin is not None
    hook.stdin.write(payload(index))
    hook.stdin.close()
    marker = f"%withdrawal-{index}%"
    connection = sqlite3.connect(db)
    try:
        deadline = time.monotonic() + 60
        while status(connection, marker) != "pending":
            if time.monotonic() > deadline:
                raise TimeoutError("the request never became visible")
            time.sleep(0.005)
        time.sleep(settle_s)
        os.kill(hook.pid, signal.SIGKILL)
        killed = time.perf_counter()
        hook.wait()
        while status(connection, marker) == "pending":
            if time.perf_counter() - killed > 60:
                raise TimeoutError("the request was never withdrawn")
            time.sleep(0.005)
        return time.perf_counter() - killed
    finally:
        connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--settle", type=float, default=1.0, help="seconds between visible and the kill")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = new_database(Path(tmp) / "bench.db")
        took = []
        for index in range(options.kills):
            took.append(one_kill(db, index, options.settle))
            time.sleep(0.3)  # the watchdog exits after withdrawing
    figures = describe_ms(took)
    print(
        f"withdrawal after SIGKILL over {options.kills} kills: "
        + json.dumps({k: round(v, 1) for k, v in figures.items()})
    )
    report(
        [Goal("hook_withdrawal_p99", figures["p99_ms"], TARGET_P99_MS, "ms", at_least=False)],
        {"withdrawal_ms": figures, "kills": options.kills, "settle_s": options.settle},
        bench="withdrawal",
    )


if __name__ == "__main__":
    main()
