"""Writes ``main_0008.db``: a database as main's code at schema 0008 leaves it (the input of the 0009 migration test).

Made with main's code at schema 0008 (commit a99f6dc); to remake it, run this script from a checkout of a
commit before migration 0009 (it imports the code of the checkout it lives in):

    python tests/persistence/data/make_main_0008.py [OUTPUT_DIR]

It holds decided and pending requests (an outside agent's and the runtime's, one with large shown arguments),
a finished run of several turns (approve, a large file read, reject) and a run WAITING on a pending request
(suspended on a gated ``write_file``). The audit chain is keyed with ``main_0008.audit.key`` and anchored in
``main_0008.anchors/`` (set ``REVIEWER_AUDIT_KEY_FILE`` and ``REVIEWER_AUDIT_ANCHOR_DIR`` to copies of them).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DB_NAME = "main_0008.db"
KEY_NAME = "main_0008.audit.key"
ANCHORS_NAME = "main_0008.anchors"
FIXED_KEY = "5f1c0e7a9b3d42c8a6e1f0b7d2c94e3a8b6d1f0e2c7a9b4d3e8f1a0c6b2d7e95"  # test data, not a secret

AGENT = "fixture-agent"
WAITING_PROMPT = "write the plan"
BIG_FILE = "big.txt"
BIG_TEXT = "".join(f"line {i:05d}: the quick brown fox jumps over the lazy dog\n" for i in range(200))  # ~12 KB
LARGE_CONTENT = "x" * 9000  # large shown arguments (the audit's copy)

DONE_SCRIPT = [
    {"text": "Writing a note.", "tool_calls": [{"name": "write_file", "args": {"path": "a.txt", "content": "one\n"}}]},
    {"text": "Reading the big file.", "tool_calls": [{"name": "read_file", "args": {"path": BIG_FILE}}]},
    {
        "text": "A large write.",
        "tool_calls": [{"name": "write_file", "args": {"path": "b.txt", "content": LARGE_CONTENT}}],
    },
    {"text": "Trying a delete.", "tool_calls": [{"name": "run_shell", "args": {"command": "rm -rf a.txt"}}]},
]
WAITING_SCRIPT = [
    {"text": "Looking first.", "tool_calls": [{"name": "read_file", "args": {"path": BIG_FILE}}]},
    {
        "text": "Now the plan.",
        "tool_calls": [{"name": "write_file", "args": {"path": "plan.txt", "content": "plan\n"}}],
    },
]


def agent_spec():  # imported lazily: the environment is set first
    from reviewer_app.domain.waivers import ApprovalPolicy
    from reviewer_app.runtime.agents import DEFAULT_TOOLS, AgentSpec

    return AgentSpec(
        name=AGENT,
        system_prompt="You are the fixture agent.",
        model={"type": "scripted", "script": []},
        tools=list(DEFAULT_TOOLS),
        policy=ApprovalPolicy(),
    )


async def _write(db_path: Path, workspaces: Path) -> None:
    from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
    from reviewer_app.hitl import SQLHITLBackend, shown_arguments
    from reviewer_app.runtime.agents import AgentCatalog
    from reviewer_app.runtime.runner import Runtime

    backend = SQLHITLBackend(db_path, reviewer="fixture-reviewer")

    def approve(record, kind=DecisionKind.APPROVE, **extra):
        return Decision(kind, args_sha256=args_digest(shown_arguments(record)), **extra)

    async def pending(inv: str) -> dict:
        for _ in range(500):
            records = await backend.get_pending_by_invocation(inv)
            if records:
                return records[0]
            await asyncio.sleep(0.02)
        raise TimeoutError(f"no pending request in {inv}")

    try:
        # Outside agents' requests: one decided, one left pending.
        for hitl_id in ("ext-decided", "ext-pending"):
            await backend.create(
                hitl_id=hitl_id,
                hitl_type="tool_approval",
                session_id="ses_external",
                invocation_id="inv_external",
                data={"tool_name": "Bash", "arguments": {"command": f"echo {hitl_id}"}},
                tool_name="Bash",
            )
        record = await backend.get("ext-decided")
        await backend.decide("ext-decided", approve(record, message="fine"))

        runtime = Runtime(backend, AgentCatalog([agent_spec()]), workspaces_dir=workspaces)
        await runtime.start(recover=False)
        try:
            done_inv = await runtime.start_run(AGENT, "do several things", script=DONE_SCRIPT, session_id="ses_done")
            (workspaces / "ses_done" / BIG_FILE).write_text(BIG_TEXT)
            first = await pending(done_inv)
            await runtime.decide_and_resume(first["hitl_id"], approve(first))
            large = await pending(done_inv)
            assert large["hitl_id"] != first["hitl_id"]
            await runtime.decide_and_resume(large["hitl_id"], approve(large, message="large but fine"))
            delete = await pending(done_inv)
            await runtime.decide_and_resume(delete["hitl_id"], approve(delete, DecisionKind.REJECT, message="no"))
            finished = await runtime.wait_for_run(done_inv, timeout=30)
            assert finished.state == "done", finished

            (workspaces / "ses_waiting").mkdir(parents=True, exist_ok=True)
            (workspaces / "ses_waiting" / BIG_FILE).write_text(BIG_TEXT)
            waiting_inv = await runtime.start_run(
                AGENT, WAITING_PROMPT, script=WAITING_SCRIPT, session_id="ses_waiting"
            )
            await pending(waiting_inv)
        finally:
            await runtime.stop()  # the waiting run is released (no owner): a later process takes it over
    finally:
        await backend.aclose()


def main() -> int:
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    work = Path(tempfile.mkdtemp(prefix="reviewer-fixture-"))
    key = work / KEY_NAME
    key.write_text(FIXED_KEY + "\n")
    key.chmod(0o600)
    os.environ["REVIEWER_AUDIT_KEY_FILE"] = str(key)
    os.environ["REVIEWER_AUDIT_ANCHOR_DIR"] = str(work / ANCHORS_NAME)
    db_path = work / DB_NAME
    asyncio.run(_write(db_path, work / "workspaces"))
    with sqlite3.connect(db_path) as raw:
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        revision = raw.execute("SELECT version_num FROM alembic_version").fetchone()[0]
    raw.close()
    with sqlite3.connect(db_path, isolation_level=None) as raw:
        raw.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, no -wal beside it
        raw.execute("VACUUM")
    raw.close()
    out_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(db_path, out_dir / DB_NAME)
    shutil.copyfile(key, out_dir / KEY_NAME)
    shutil.rmtree(out_dir / ANCHORS_NAME, ignore_errors=True)
    shutil.copytree(work / ANCHORS_NAME, out_dir / ANCHORS_NAME)
    shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {out_dir / DB_NAME} at schema {revision}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parents[2]))
    raise SystemExit(main())
