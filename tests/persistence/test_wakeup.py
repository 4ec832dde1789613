"""The SQLite wake-up channel: a decision in one process wakes a waiter in another at once, polling stays the
fallback, and the channel's directory and datagrams are treated as hostile.

Waiters here poll once an hour unless a test says otherwise, so a waiter that returns was woken by the channel.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence import wakeup
from reviewer_app.persistence.changes import SQLiteChangeFeed

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="no Unix sockets: the channel polls only")

REPO_ROOT = Path(__file__).resolve().parents[2]
HOUR = 3600.0

WAITER = """
import asyncio, json, sys, threading
from pathlib import Path
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence.changes import SQLiteChangeFeed

async def main(db, hitl_id, interval):
    feed = SQLiteChangeFeed(Path(db), interval=interval)
    backend = SQLHITLBackend(db, feed=feed)
    # Ready once a look-up that began after the watcher's first probe has read the request. Until then a decision
    # could be found by the wait's own first look-up, or by the one the watcher's first probe asks for (that probe
    # reads whatever committed before it, and runs after the socket is bound), not by the hint, and would prove
    # nothing about the channel; seen in CI when the watcher thread got the CPU late. After it only a hint (or
    # the poll interval) makes the waiter look again.
    probed = threading.Event()
    remote_change = feed._remote_change

    def observed_change(*args, **kwargs):
        probed.set()
        remote_change(*args, **kwargs)

    feed._remote_change = observed_change
    looked = asyncio.Event()
    signed_decided_among = backend.signed_decided_among

    async def observed(ids):
        after_probe = probed.is_set()
        found = await signed_decided_among(ids)
        if after_probe:
            looked.set()
        return found

    backend.signed_decided_among = observed
    waiting = asyncio.create_task(backend.wait_for_response(hitl_id))
    await asyncio.wait_for(looked.wait(), 60)
    print(json.dumps({"ready": True, "listening": feed.listening}), flush=True)
    record = await waiting
    decision = record["user_response"]["decision"]
    print(json.dumps({"status": record["status"], "decision": decision, "hints": feed.hints}), flush=True)
    await backend.aclose()

asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
"""


@pytest.fixture
def runtime_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short, private XDG_RUNTIME_DIR for this test and its child processes (socket paths are length-limited)."""
    with tempfile.TemporaryDirectory(prefix="rw-") as directory:
        monkeypatch.setenv("XDG_RUNTIME_DIR", directory)
        monkeypatch.delenv(wakeup.ENV_SWITCH, raising=False)
        yield Path(directory)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


async def _pending(backend: SQLHITLBackend, hitl_id: str) -> None:
    await backend.create(
        hitl_id=hitl_id,
        hitl_type="tool_approval",
        session_id="s1",
        invocation_id="i1",
        data={"arguments": {"command": "ls"}},
        tool_name="run_shell",
    )


async def _start_waiter(db: Path, hitl_id: str, interval: float) -> tuple[asyncio.subprocess.Process, dict]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", WAITER, str(db), hitl_id, str(interval), stdout=asyncio.subprocess.PIPE, env=_env()
    )
    assert process.stdout is not None
    ready = json.loads(await asyncio.wait_for(process.stdout.readline(), 60))
    return process, ready


async def _finish(process: asyncio.subprocess.Process) -> dict:
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), 60)  # a hang guard, not a speed limit
    await asyncio.wait_for(process.wait(), 60)
    assert process.returncode == 0
    return json.loads(line)


async def _approve(backend: SQLHITLBackend, hitl_id: str) -> None:
    await backend.decide(hitl_id, Decision(DecisionKind.APPROVE, args_sha256=args_digest({"command": "ls"})))


@pytest.mark.asyncio
async def test_a_decision_wakes_a_waiter_in_another_process_through_the_channel(
    tmp_path: Path, runtime_dir: Path
) -> None:
    db = tmp_path / "r.db"
    async with SQLHITLBackend(db) as backend:
        await _pending(backend, "h1")
        process, ready = await _start_waiter(db, "h1", HOUR)
        assert ready["listening"] is True
        sockets = list(wakeup.channel_dir(db).glob(f"*{wakeup.SUFFIX}"))
        assert len(sockets) == 1 and sockets[0].is_socket()
        assert oct(wakeup.channel_dir(db).stat().st_mode & 0o777) == "0o700"
        await _approve(backend, "h1")
        result = await _finish(process)
    assert result["status"] == "completed" and result["decision"] == "approve"
    assert result["hints"] >= 1  # an hour's poll interval: only the hint can have woken it
    assert not wakeup.channel_dir(db).exists()  # the last listener took its socket and directory with it


@pytest.mark.asyncio
async def test_without_the_channel_a_waiter_still_wakes_by_polling(tmp_path: Path, runtime_dir: Path) -> None:
    db = tmp_path / "r.db"
    (runtime_dir / "reviewer-wake").write_text("not a directory")  # the channel cannot be created here
    async with SQLHITLBackend(db) as backend:
        await _pending(backend, "h1")
        process, ready = await _start_waiter(db, "h1", 0.05)
        assert ready["listening"] is False
        await _approve(backend, "h1")
        result = await _finish(process)
    assert result == {"status": "completed", "decision": "approve", "hints": 0}


@pytest.mark.asyncio
async def test_a_channel_directory_planted_as_a_symlink_is_refused(tmp_path: Path, runtime_dir: Path) -> None:
    db = tmp_path / "r.db"
    elsewhere = tmp_path / "attacker"
    elsewhere.mkdir(mode=0o700)
    (runtime_dir / "reviewer-wake").symlink_to(elsewhere, target_is_directory=True)
    async with SQLHITLBackend(db) as backend:
        await _pending(backend, "h1")
        process, ready = await _start_waiter(db, "h1", 0.05)
        assert ready["listening"] is False  # no socket in a directory someone else may control
        await _approve(backend, "h1")
        result = await _finish(process)
    assert result["status"] == "completed" and result["hints"] == 0
    assert list(elsewhere.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to plant another user's dir")
def test_a_channel_directory_of_another_user_or_open_to_others_is_refused(tmp_path: Path, runtime_dir: Path) -> None:
    db = tmp_path / "r.db"
    directory = wakeup.channel_dir(db)
    directory.parent.mkdir(mode=0o700)
    directory.mkdir(mode=0o700)
    os.chown(directory, 54321, 54321)
    assert wakeup.WakeListener.open(db) is None
    assert wakeup.notify_commit(db) == 0
    os.chown(directory, os.getuid(), os.getgid())
    os.chmod(directory, 0o733)
    assert wakeup.WakeListener.open(db) is None
    os.chmod(directory, 0o700)
    listener = wakeup.WakeListener.open(db)
    assert listener is not None
    listener.close()


def test_a_symlinked_socket_in_the_channel_is_never_sent_to(tmp_path: Path, runtime_dir: Path) -> None:
    db = tmp_path / "r.db"
    victim_path = tmp_path / "victim.sock"
    victim = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    victim.bind(str(victim_path))
    victim.setblocking(False)
    listener = wakeup.WakeListener.open(db)
    assert listener is not None
    try:
        (listener.path.parent / f"evil{wakeup.SUFFIX}").symlink_to(victim_path)
        (listener.path.parent / f"file{wakeup.SUFFIX}").write_text("")
        assert wakeup.notify_commit(db) == 1  # only the real listener
        assert listener.drain() == 1
        with pytest.raises(BlockingIOError):
            victim.recv(16)
    finally:
        listener.close()
        victim.close()


def test_a_stale_socket_is_removed_by_the_next_writer(tmp_path: Path, runtime_dir: Path) -> None:
    db = tmp_path / "r.db"
    listener = wakeup.WakeListener.open(db)
    assert listener is not None
    stale = listener.path.parent / f"99999-dead{wakeup.SUFFIX}"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    dead.bind(str(stale))
    dead.close()  # its process died without cleaning up
    try:
        assert stale.is_socket()
        assert wakeup.notify_commit(db) == 1
        assert not stale.exists()
    finally:
        listener.close()


@pytest.mark.asyncio
async def test_garbage_datagrams_never_wake_a_waiter_and_cannot_stall_it(tmp_path: Path, runtime_dir: Path) -> None:
    db = tmp_path / "r.db"
    feed = SQLiteChangeFeed(db, interval=HOUR)
    async with SQLHITLBackend(db) as writer, SQLHITLBackend(db, feed=feed) as waiter:
        await _pending(writer, "h1")
        waiting = asyncio.create_task(waiter.wait_for_response("h1"))
        await asyncio.sleep(0.1)  # it waits, and the first probe's wake-up has passed
        assert feed.listening
        token = feed.token()
        flood = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        flood.setblocking(False)
        target = next(wakeup.channel_dir(db).glob(f"*{wakeup.SUFFIX}"))
        sent = 0
        for index in range(20_000):
            try:
                flood.sendto(os.urandom(1 + index % 200), str(target))
                sent += 1
            except BlockingIOError:
                await asyncio.sleep(0)  # its queue is full: let it drain
        flood.close()
        await asyncio.sleep(0.1)
        assert feed.token() == token  # nothing changed in the database: nobody was woken to re-read it
        assert not waiting.done()
        await _approve(writer, "h1")
        record = await asyncio.wait_for(waiting, 60)
    assert sent > 0 and feed.hints >= 1
    assert record["status"] == "completed"


@pytest.mark.asyncio
async def test_the_hook_fast_path_wakes_a_window_in_another_process(tmp_path: Path, runtime_dir: Path) -> None:
    """A waiting call created by the hook's stdlib-only fast path reaches a watcher at once, and the hook process
    then waits on the channel itself."""
    from tests.integrations.hook_helpers import finish, fixture, start_hook

    db = tmp_path / "r.db"
    SQLHITLBackend(db).close()
    feed = SQLiteChangeFeed(db, interval=HOUR)
    async with SQLHITLBackend(db, feed=feed) as window:
        changed = asyncio.Event()
        unsubscribe = feed.subscribe(changed.set)
        assert feed.listening  # bound before the watcher's first probe
        await asyncio.sleep(0.05)
        changed.clear()
        hook = start_hook(tmp_path, db, fixture("pretooluse.json"), "--no-watchdog")
        pending = []
        while not pending:
            await asyncio.wait_for(changed.wait(), 60)  # only a hint can wake this feed
            changed.clear()
            pending = [r for r in await window.list_records() if r["status"] == "pending"]
        while len(list(wakeup.channel_dir(db).glob(f"*{wakeup.SUFFIX}"))) < 2:  # the hook's own waiter listens
            assert hook.poll() is None
            await asyncio.sleep(0.01)
        record = pending[0]
        from reviewer_app.hitl import shown_arguments

        await window.decide(
            record["hitl_id"], Decision(DecisionKind.APPROVE, args_sha256=args_digest(shown_arguments(record)))
        )
        unsubscribe()
        code, answer, err = await asyncio.to_thread(finish, hook)
    assert code == 0, err
    assert answer is not None and answer["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert feed.hints >= 1


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes into a read-only directory")
def test_a_channel_directory_that_is_not_writable_leaves_polling(tmp_path: Path, runtime_dir: Path) -> None:
    db = tmp_path / "r.db"
    root = runtime_dir / "reviewer-wake"
    root.mkdir(mode=0o500)
    try:
        assert wakeup.WakeListener.open(db) is None
        assert wakeup.notify_commit(db) == 0
    finally:
        root.chmod(0o700)


@pytest.mark.asyncio
async def test_a_failing_hint_never_fails_the_commit(tmp_path: Path, runtime_dir: Path) -> None:
    """The hint is sent after COMMIT on the writing thread: whatever it meets, the write it follows stands."""
    db = tmp_path / "r.db"
    async with SQLHITLBackend(db) as backend:
        await _pending(backend, "h1")  # the sender is ready, its directory made
        directory = wakeup.channel_dir(db)
        directory.rmdir()
        directory.write_text("replaced by a file")  # swapped under it
        await _pending(backend, "h2")
        directory.unlink()
        directory.parent.rmdir()
        directory.parent.write_text("the root replaced too")
        await _pending(backend, "h3")
        records = await backend.list_records()
    assert sorted(r["hitl_id"] for r in records) == ["h1", "h2", "h3"]
