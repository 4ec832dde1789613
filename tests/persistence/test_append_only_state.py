"""Run state is append-only: each message stored once, one small checkpoint per run, large values once as blobs."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence.blobs import BLOB_THRESHOLD, CODEC_RAW, CODEC_ZLIB, BlobCorrupt, digest, pack, unpack
from reviewer_app.persistence.store import Store
from tests.runtime.test_runner_support import approval, messages, pending_requests, started_runtime, tool_results

BIG = "".join(f"line {i:05d} of a file the agent reads, long enough to matter\n" for i in range(1000))  # 60 KB


def _raw(db_path: Path, sql: str, *params: object) -> list[tuple]:
    with sqlite3.connect(db_path) as raw:
        rows = raw.execute(sql, params).fetchall()
    raw.close()
    return rows


@pytest.mark.asyncio
async def test_a_long_run_keeps_one_small_checkpoint_and_each_message_once(
    backend: SQLHITLBackend, db_path: Path, tmp_path: Path
) -> None:
    turns = [
        {"text": f"turn {i}", "tool_calls": [{"name": "read_file", "args": {"path": "big.txt"}}]} for i in range(6)
    ]
    async with started_runtime(backend, tmp_path) as runtime:
        session = "ses_append"
        (tmp_path / "workspaces" / session).mkdir(parents=True)
        (tmp_path / "workspaces" / session / "big.txt").write_text(BIG)
        inv = await runtime.start_run("tester", "read it six times", script=turns, session_id=session)
        done = await runtime.wait_for_run(inv, timeout=30)
    assert done.state == "done", done.error

    conversation = await messages(backend, inv)
    assert len(tool_results(conversation)) == 6 and all(r == BIG for r in tool_results(conversation).values())
    ((count,),) = _raw(db_path, "SELECT count(*) FROM checkpoints WHERE invocation_id = ?", inv)
    assert count == 1  # every superseded checkpoint was pruned by the commit that replaced it
    ((state,),) = _raw(db_path, "SELECT state FROM checkpoints WHERE invocation_id = ?", inv)
    assert "messages" not in json.loads(state) and len(state) < BLOB_THRESHOLD
    rows = _raw(db_path, "SELECT idx FROM run_messages WHERE invocation_id = ? ORDER BY idx", inv)
    assert [r[0] for r in rows] == list(range(len(conversation)))
    # The result is in six tool messages, six timeline events and (while running) checkpoints: stored once.
    ((copies,),) = _raw(db_path, "SELECT count(*) FROM blobs WHERE sha256 = ?", digest(BIG.encode()))
    assert copies == 1
    ((largest_event,),) = _raw(db_path, "SELECT max(length(data)) FROM block_events WHERE invocation_id = ?", inv)
    ((largest_message,),) = _raw(db_path, "SELECT max(length(message)) FROM run_messages WHERE invocation_id = ?", inv)
    assert largest_event < BLOB_THRESHOLD and largest_message < BLOB_THRESHOLD
    results = [e.data["result"] for e in await backend.events(inv) if e.data.get("status") == "success"]
    assert results == [BIG] * 6  # the timeline reads back what was appended


@pytest.mark.asyncio
async def test_large_shown_arguments_are_not_copied_into_the_audit_log(backend: SQLHITLBackend, db_path: Path) -> None:
    arguments = {"path": "big.txt", "content": BIG}
    await backend.create(
        hitl_id="h-big",
        hitl_type="tool_approval",
        session_id="s",
        invocation_id="i",
        data={"arguments": arguments},
        tool_name="write_file",
    )
    await backend.decide("h-big", Decision(DecisionKind.APPROVE, args_sha256=args_digest(arguments)))
    ((shown, ref, sha),) = _raw(db_path, "SELECT shown_args, shown_args_ref, shown_args_sha256 FROM audit_log")
    assert shown in (None, "null") and ref and sha == args_digest(arguments)
    (entry,) = await backend.audit("h-big")
    assert entry.shown_args == arguments
    report = await backend.verify_audit()
    assert report.ok, report.problem

    # A blob changed behind the app's back: the audit no longer verifies, and says why.
    with sqlite3.connect(db_path) as raw:
        raw.execute("UPDATE blobs SET codec = 'raw', data = ? WHERE sha256 = ?", (b'{"path": "x"}', ref[2:]))
    raw.close()
    report = await backend.verify_audit()
    assert not report.ok and "shown arguments" in (report.problem or "")


@pytest.mark.asyncio
async def test_a_changed_blob_shows_as_damaged_in_the_timeline(
    backend: SQLHITLBackend, db_path: Path, tmp_path: Path
) -> None:
    async with started_runtime(backend, tmp_path) as runtime:
        script = [{"text": "Writing.", "tool_calls": [{"name": "write_file", "args": {"path": "a", "content": BIG}}]}]
        inv = await runtime.start_run("tester", "write", script=script)
        (request,) = await pending_requests(backend, inv)
        await runtime.decide_and_resume(request["hitl_id"], approval(request))
        assert (await runtime.wait_for_run(inv, timeout=30)).state == "done"
    with sqlite3.connect(db_path) as raw:
        raw.execute("UPDATE blobs SET data = ?", (os.urandom(64),))
    raw.close()
    arguments = [e.data.get("arguments") for e in await backend.events(inv) if "arguments" in e.data]
    assert arguments and all(isinstance(a, str) and "missing or damaged" in a for a in arguments)


def test_compression_is_kept_only_when_it_pays() -> None:
    text = BIG.encode()
    codec, data = pack(text)
    assert codec == CODEC_ZLIB and len(data) < len(text) // 2
    assert unpack(digest(text), codec, data) == text
    noise = os.urandom(8192)
    assert pack(noise) == (CODEC_RAW, noise)
    with pytest.raises(BlobCorrupt):
        unpack(digest(text), CODEC_RAW, noise)


@pytest.mark.parametrize("size", [BLOB_THRESHOLD, 70_000])
def test_a_blobs_address_is_its_sha256_with_or_without_openssl(size: int) -> None:
    """A process that has not loaded ``hashlib`` (the hook's lean waiter storing a file write's content) addresses a
    small blob with the interpreter's built-in SHA-256 and leaves OpenSSL unloaded; a large one loads it. Either way
    the address is ``hashlib.sha256``'s."""
    import hashlib
    import subprocess
    import sys

    code = (
        "import sys\nfrom reviewer_app.persistence.blobs import digest\n"
        f"print(digest(bytes(range(256)) * ({size} // 256 + 1)), 'hashlib' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout
    wanted = hashlib.sha256(bytes(range(256)) * (size // 256 + 1)).hexdigest()
    assert out.split() == [wanted, str(size > 65_536)]


def test_a_value_remembered_from_a_rolled_back_transaction_is_written_again(store: Store) -> None:
    """The store skips re-encoding a checkpoint's large values it stored before, but never trusts a rollback."""
    script = [{"text": BIG}]
    state = {"agent": "a", "pending": [], "script": script}
    with store.transaction() as tx:
        tx.runs.ensure_session("s")
        tx.runs.ensure("i", "s")
    with pytest.raises(RuntimeError), store.transaction() as tx:
        tx.checkpoints.save("i:ckpt:000001", "i", "s", state, [{"role": "user", "content": "hi"}], first_index=0)
        raise RuntimeError("rolled back")
    with store.transaction() as tx:
        tx.checkpoints.save("i:ckpt:000002", "i", "s", state, [{"role": "user", "content": "hi"}], first_index=0)
    latest = store.checkpoints.latest("i")
    assert latest is not None and latest[1]["script"] == script
    assert latest[1]["messages"] == [{"role": "user", "content": "hi"}]
