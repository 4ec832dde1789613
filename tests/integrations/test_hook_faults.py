"""The real hook under real faults: a lock held by another process, a full disk, a read-only file, kills.

Nothing fails open, nothing is lost or stuck, and no record says what the agent was not told: a request whose
hook answered without a decision ends "answered elsewhere", and a reviewer's later decision on it is refused.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.hitl import HITLConflict, shown_arguments
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.integrations.core import ANSWERED_ELSEWHERE
from tests.integrations.fault_helpers import fill, immutable, small_filesystem, wait_for, watchdogs_of, write_lock_held
from tests.integrations.hook_helpers import StderrTail, finish, fixture, hook_env, start_hook, wait_pending

pytestmark = pytest.mark.asyncio


def _approval(record: dict) -> Decision:
    return Decision(DecisionKind.APPROVE, args_sha256=args_digest(shown_arguments(record)))


def _permission(answer: dict | None) -> str:
    assert answer is not None, "the hook printed no answer"
    return answer["hookSpecificOutput"]["permissionDecision"]


@pytest.mark.parametrize("path", ["fast path", "backend path"])
async def test_a_hook_rides_out_a_write_lock_held_by_another_process(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, path: str, waiter: str
) -> None:
    extra = ["--no-fast-path"] if path == "backend path" else []
    with write_lock_held(db_path, 120):
        process = start_hook(tmp_path, db_path, fixture("pretooluse.json"), "--timeout", "60", *extra)
        stderr = StderrTail(process)
        # Held past the 5 s busy timeout (the hook used to answer "ask" at ~6.6 s), and until the hook met it: a
        # short busy wait, then the retry policy, and the operator is told why. (Under load a hook may take
        # longer than 7 s to reach its first write; a fixed hold then ended before the hook met the lock.)
        await asyncio.sleep(7)
        await stderr.wait_for("database busy — retrying")
        assert process.poll() is None, stderr.finish()  # still waiting out the lock, no fallback answer yet
    [record] = await wait_pending(backend, timeout=30)
    await backend.decide(record["hitl_id"], _approval(record))
    code, answer, err = stderr.finish()
    assert code == 0 and _permission(answer) == "allow", err


@pytest.mark.parametrize("path", ["fast path", "backend path"])
async def test_a_lock_past_the_budget_falls_back_on_time(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, path: str, waiter: str
) -> None:
    extra = ["--no-fast-path"] if path == "backend path" else []
    with write_lock_held(db_path, 120):
        began = time.monotonic()
        code, answer, err = finish(start_hook(tmp_path, db_path, fixture("pretooluse.json"), "--timeout", "6", *extra))
        took = time.monotonic() - began
    assert code == 0 and _permission(answer) == "ask", err  # never fails open
    assert "WriteRetriesExhausted" in err
    # The budget counts from the process's start (the backend path used to wait 120 s, then answer).
    assert took < 6 + 4, f"answered after {took:.1f} s"
    assert await backend.list_records() == []


async def test_a_hook_rides_out_a_full_disk(tmp_path: Path, waiter: str) -> None:
    with small_filesystem(tmp_path / "small", "8m") as small:
        db = small / "reviews.db"
        backend = SQLHITLBackend(db, reviewer="tester")
        try:
            filler = fill(small)
            process = start_hook(tmp_path, db, fixture("pretooluse.json"), "--timeout", "60")
            await asyncio.sleep(4)
            assert process.poll() is None, finish(process)  # riding it out, not answering "ask"
            filler.unlink()
            [record] = await wait_pending(backend, timeout=30)
            await backend.decide(record["hitl_id"], _approval(record))
            code, answer, err = finish(process)
            assert code == 0 and _permission(answer) == "allow", err
            assert "disk full — retrying" in err
        finally:
            await backend.aclose()


async def test_a_full_disk_past_the_budget_falls_back_and_stores_nothing(tmp_path: Path, waiter: str) -> None:
    with small_filesystem(tmp_path / "small", "8m") as small:
        db = small / "reviews.db"
        backend = SQLHITLBackend(db, reviewer="tester")  # open: its shared-memory file exists before the disk fills
        try:
            filler = fill(small)
            began = time.monotonic()
            code, answer, err = finish(start_hook(tmp_path, db, fixture("pretooluse.json"), "--timeout", "5"))
            took = time.monotonic() - began
            filler.unlink()
            assert await backend.list_records() == []  # nothing half-written, nothing left pending
        finally:
            await backend.aclose()
    assert code == 0 and _permission(answer) == "ask", err  # never fails open
    assert "disk full — retrying" in err and "WriteRetriesExhausted" in err  # said why, then gave up
    assert took < 5 + 3, f"the budget counts from the process start: answered after {took:.1f} s"


async def _status(backend: SQLHITLBackend, hitl_id: str) -> str:
    record = await backend.get(hitl_id)
    assert record is not None
    return str(record["status"])


async def test_a_withdrawal_that_fails_is_retried_until_it_lands(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, waiter: str
) -> None:
    process = start_hook(tmp_path, db_path, fixture("pretooluse.json"), "--timeout", "60")
    [record] = await wait_pending(backend)
    wait_for(lambda: watchdogs_of(process.pid), 10, "the watchdog starting")
    with immutable(db_path):  # read-only for every new connection: the watchdog's withdrawal fails
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        await asyncio.sleep(4)
        assert await _status(backend, record["hitl_id"]) == "pending"
    # Writable again: the watchdog, still trying, lands the withdrawal (it used to give up after one failure).
    deadline = time.monotonic() + 20
    while await _status(backend, record["hitl_id"]) == "pending":
        assert time.monotonic() < deadline, "the withdrawal never landed"
        await asyncio.sleep(0.1)
    cancelled = await backend.get(record["hitl_id"])
    assert cancelled is not None and cancelled["status"] == "cancelled" and cancelled["user_response"] is None
    [entry] = await backend.audit(record["hitl_id"])
    assert entry.decision == "cancel" and entry.message.startswith(ANSWERED_ELSEWHERE)


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-m", "reviewer_app", *args]
    return subprocess.run(command, env=hook_env(tmp_path), capture_output=True, timeout=60, check=False)


def _kill_hook_and_watchdog(process: subprocess.Popen[bytes]) -> None:
    watchers = wait_for(lambda: watchdogs_of(process.pid), 10, "the watchdog starting")
    for pid in watchers:
        os.kill(pid, signal.SIGKILL)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()


async def test_a_decision_on_a_request_whose_hook_is_gone_is_refused(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, waiter: str
) -> None:
    process = start_hook(tmp_path, db_path, fixture("pretooluse.json"), "--timeout", "60")
    [record] = await wait_pending(backend)
    _kill_hook_and_watchdog(process)
    # Nobody withdrew it; a reviewer must not approve a call whose agent was already answered.
    with pytest.raises(HITLConflict, match=ANSWERED_ELSEWHERE):
        await backend.decide(record["hitl_id"], _approval(record))
    settled = await backend.get(record["hitl_id"])
    assert settled is not None and settled["status"] == "cancelled" and settled["user_response"] is None
    [entry] = await backend.audit(record["hitl_id"])
    assert entry.decision == "cancel" and entry.message.startswith(ANSWERED_ELSEWHERE)
    # The CLI says so too (exit 3: already settled), and changes nothing.
    result = _cli(tmp_path, "decide", record["hitl_id"], "approve", "--db", str(db_path))
    assert result.returncode == 3 and b"cancelled" in result.stderr, result.stderr
    assert len(await backend.audit(record["hitl_id"])) == 1


async def test_pending_settles_requests_whose_hook_and_watchdog_were_killed(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, waiter: str
) -> None:
    process = start_hook(tmp_path, db_path, fixture("pretooluse.json"), "--timeout", "60")
    [record] = await wait_pending(backend)
    _kill_hook_and_watchdog(process)
    result = _cli(tmp_path, "pending", "--db", str(db_path))
    assert result.returncode == 0 and b"no pending requests" in result.stdout, result
    settled = await backend.get(record["hitl_id"])
    assert settled is not None and settled["status"] == "cancelled"
    [entry] = await backend.audit(record["hitl_id"])
    assert entry.reviewer == "system:claude-code" and entry.message.startswith(ANSWERED_ELSEWHERE)


async def test_a_failing_timeline_write_never_decides_the_answer(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, waiter: str
) -> None:
    process = start_hook(tmp_path, db_path, fixture("pretooluse.json"), "--timeout", "60")
    [record] = await wait_pending(backend)
    # Read-only from here on for new connections: the hook's backend (still loading) can read but not narrate.
    with immutable(db_path):
        await asyncio.sleep(8)  # the hook shows the request on its timeline: that write fails, the wait goes on
        assert process.poll() is None, finish(process)
    await backend.decide(record["hitl_id"], _approval(record))
    code, answer, err = finish(process)
    assert code == 0 and _permission(answer) == "allow", err
    if waiter == "full":  # the lean waiter showed the request within milliseconds, mostly before the file froze
        assert "not recorded on the timeline" in err
    decided = await backend.get(record["hitl_id"])
    assert decided is not None and decided["status"] == "completed"


async def test_a_timeline_the_database_refuses_never_decides_the_answer(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, waiter: str
) -> None:
    """Every ``hitl`` block refused by the database itself (a trigger): the request is asked, decided and answered
    all the same, the failure said on stderr, by either waiter."""
    connection = sqlite3.connect(db_path)
    connection.execute(
        "CREATE TRIGGER refuse_hitl_blocks BEFORE INSERT ON block_events WHEN NEW.kind = 'hitl' "
        "BEGIN SELECT RAISE(ABORT, 'the timeline is refused'); END"
    )
    connection.commit()
    connection.close()
    process = start_hook(tmp_path, db_path, fixture("pretooluse.json"), "--timeout", "60")
    [record] = await wait_pending(backend)
    await backend.decide(record["hitl_id"], _approval(record))
    code, answer, err = finish(process)
    assert code == 0 and _permission(answer) == "allow", err
    assert "not recorded on the timeline" in err and "the timeline is refused" in err
    decided = await backend.get(record["hitl_id"])
    assert decided is not None and decided["status"] == "completed"


async def _shown(backend: SQLHITLBackend, record: dict) -> None:
    """Once the hook's waiter has shown the request on its run's timeline (it is waiting then)."""
    deadline = time.monotonic() + 30
    while not any(
        event.block_id == f"hitl_{record['hitl_id']}" for event in await backend.events(record["invocation_id"])
    ):
        assert time.monotonic() < deadline, "the request never appeared on the timeline"
        await asyncio.sleep(0.05)
    await asyncio.sleep(1.0)  # the full path arms its signal handlers right after


async def test_a_withdrawal_on_a_signal_rides_out_a_write_lock(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, waiter: str
) -> None:
    """SIGTERM while another process holds the write lock: the waiter says why it waits, withdraws the request
    once the lock is gone (within its budget) and answers the fallback; never an allow."""
    process = start_hook(tmp_path, db_path, fixture("pretooluse.json"), "--timeout", "60")
    [record] = await wait_pending(backend)
    await _shown(backend, record)
    with write_lock_held(db_path, 6):
        process.send_signal(signal.SIGTERM)
        await asyncio.sleep(4)
        assert process.poll() is None, finish(process)  # riding the lock out
    code, answer, err = finish(process)
    assert code == 0 and _permission(answer) == "ask", err
    assert "SIGTERM: the request leaves the inbox" in err and "database busy — retrying" in err
    withdrawn = await backend.get(record["hitl_id"])
    assert withdrawn is not None and withdrawn["status"] == "cancelled" and withdrawn["user_response"] is None
    [entry] = await backend.audit(record["hitl_id"])
    assert entry.decision == "cancel" and entry.message == ANSWERED_ELSEWHERE and entry.reviewer == "system:claude-code"


async def test_a_withdrawal_on_a_signal_rides_out_a_full_disk(tmp_path: Path, waiter: str) -> None:
    """The disk fills while the hook waits; SIGTERM: the waiter says why it waits, withdraws once space is freed,
    and answers the fallback."""
    with small_filesystem(tmp_path / "small", "8m") as small:
        db = small / "reviews.db"
        backend = SQLHITLBackend(db, reviewer="tester")
        try:
            process = start_hook(tmp_path, db, fixture("pretooluse.json"), "--timeout", "60")
            [record] = await wait_pending(backend)
            await _shown(backend, record)
            filler = fill(small)
            process.send_signal(signal.SIGTERM)
            await asyncio.sleep(4)
            assert process.poll() is None, finish(process)  # riding it out, not answering yet
            filler.unlink()
            code, answer, err = finish(process)
            assert code == 0 and _permission(answer) == "ask", err
            assert "disk full — retrying" in err
            withdrawn = await backend.get(record["hitl_id"])
            assert withdrawn is not None and withdrawn["status"] == "cancelled"
            [entry] = await backend.audit(record["hitl_id"])
            assert entry.decision == "cancel" and entry.message == ANSWERED_ELSEWHERE
        finally:
            await backend.aclose()


async def test_a_signal_while_the_file_is_read_only_never_allows_and_withdraws_the_request(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, waiter: str
) -> None:
    """SIGTERM while the file is read-only for new connections (each waiter still writes through a descriptor its
    process opened before): never an allow, and the request ends withdrawn as answered elsewhere."""
    process = start_hook(tmp_path, db_path, fixture("pretooluse.json"), "--timeout", "60")
    [record] = await wait_pending(backend)
    await _shown(backend, record)
    with immutable(db_path):
        process.send_signal(signal.SIGTERM)
        code, answer, err = await asyncio.to_thread(finish, process)
    assert code == 0 and _permission(answer) == "ask", err
    deadline = time.monotonic() + 20
    while await _status(backend, record["hitl_id"]) == "pending":
        assert time.monotonic() < deadline, "the withdrawal never landed"
        await asyncio.sleep(0.1)
    [entry] = await backend.audit(record["hitl_id"])
    assert entry.decision == "cancel" and entry.message.startswith(ANSWERED_ELSEWHERE)
