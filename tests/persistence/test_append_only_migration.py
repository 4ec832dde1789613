"""Migration 0009 on a database main's code wrote (``data/main_0008.db``, made by ``data/make_main_0008.py``).

The upgrade backs the file up, converts every run's state to the append-only form (conversation message by
message, small checkpoints, large values once as blobs), keeps the audit chain verifying, and a run that was
WAITING on a request before the upgrade resumes after it: approving runs its tool exactly once and it completes.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sqlite3
from pathlib import Path
from types import ModuleType

import pytest

from reviewer_app.domain.timeline import BlockKind
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence.blobs import BLOB_THRESHOLD, STATE_FORMAT
from reviewer_app.runtime.agents import AgentCatalog
from reviewer_app.runtime.runner import Runtime
from tests.runtime.test_runner_support import approval, messages, pending_requests, tool_results

DATA = Path(__file__).resolve().parent / "data"


def _fixture_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_main_0008", DATA / "make_main_0008.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def old_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the fixture with its audit key and anchors, its workspaces moved under tmp_path."""
    fixture = _fixture_module()
    db_path = tmp_path / "reviews.db"
    shutil.copyfile(DATA / fixture.DB_NAME, db_path)
    key = tmp_path / "audit.key"
    shutil.copyfile(DATA / fixture.KEY_NAME, key)
    key.chmod(0o600)
    anchors = tmp_path / "anchors"
    shutil.copytree(DATA / fixture.ANCHORS_NAME, anchors)
    monkeypatch.setenv("REVIEWER_AUDIT_KEY_FILE", str(key))
    monkeypatch.setenv("REVIEWER_AUDIT_ANCHOR_DIR", str(anchors))
    with sqlite3.connect(db_path) as raw:
        for (session_id,) in raw.execute("SELECT id FROM sessions").fetchall():
            workspace = tmp_path / "workspaces" / session_id
            workspace.mkdir(parents=True)
            (workspace / fixture.BIG_FILE).write_text(fixture.BIG_TEXT)
            raw.execute("UPDATE sessions SET workspace = ? WHERE id = ?", (str(workspace), session_id))
    raw.close()
    return db_path


def _latest_full_states(db_path: Path) -> dict[str, dict]:
    """Each run's newest checkpoint as schema 0008 stored it (the whole conversation in its state)."""
    with sqlite3.connect(db_path) as raw:
        rows = raw.execute(
            "SELECT invocation_id, checkpoint_id, state FROM checkpoints ORDER BY length(checkpoint_id), checkpoint_id"
        ).fetchall()
    raw.close()
    return {inv: json.loads(state) for inv, _, state in rows}


@pytest.mark.asyncio
async def test_upgrade_converts_state_and_a_waiting_run_resumes_once(old_database: Path, tmp_path: Path) -> None:
    fixture = _fixture_module()
    with sqlite3.connect(old_database) as raw:
        assert raw.execute("SELECT version_num FROM alembic_version").fetchone() == ("0008",)
        (waiting_inv,) = raw.execute("SELECT id FROM invocations WHERE state = 'waiting'").fetchone()
        checkpoints_before = raw.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
        large_shown = raw.execute(
            "SELECT count(*) FROM audit_log WHERE length(shown_args) >= ?", (BLOB_THRESHOLD,)
        ).fetchone()[0]
    raw.close()
    before = _latest_full_states(old_database)
    assert checkpoints_before > len(before) and large_shown == 1  # the fixture shows what the migration fixes

    backend = SQLHITLBackend(old_database, reviewer="after-upgrade")
    try:
        (backup,) = tmp_path.glob("reviews.db.pre-*.bak")  # the app backs up before migrating
        with sqlite3.connect(backup) as raw:
            assert raw.execute("SELECT version_num FROM alembic_version").fetchone() == ("0008",)
        raw.close()
        report = await backend.verify_audit()
        assert report.ok, report.problem

        # Every run's conversation reads back exactly as the old checkpoint held it, from run_messages.
        for inv, state in before.items():
            latest = await backend.latest_checkpoint(inv)
            assert latest is not None
            assert latest[1]["format"] == STATE_FORMAT
            assert latest[1]["messages"] == state["messages"]
            assert latest[1]["pending"] == state["pending"]
            assert latest[1]["script"] == state["script"]
        with sqlite3.connect(old_database) as raw:
            per_run = dict(raw.execute("SELECT invocation_id, count(*) FROM checkpoints GROUP BY invocation_id"))
            stored_messages = raw.execute("SELECT count(*) FROM run_messages").fetchone()[0]
            audit_inline = raw.execute(
                "SELECT count(*) FROM audit_log"
                " WHERE shown_args_ref IS NOT NULL AND coalesce(shown_args, 'null') = 'null'"
            ).fetchone()[0]
            big_event_rows = raw.execute(
                "SELECT count(*) FROM block_events WHERE length(data) >= ?", (BLOB_THRESHOLD,)
            ).fetchone()[0]
        raw.close()
        assert set(per_run.values()) == {1}  # superseded checkpoints are gone (the waiting run's is the newest)
        assert stored_messages == sum(len(s["messages"]) for s in before.values())
        assert audit_inline == 1 and big_event_rows == 0
        shown = [e.shown_args for e in await backend.audit() if e.shown_args and "content" in e.shown_args]
        assert {"path": "b.txt", "content": fixture.LARGE_CONTENT} in shown

        runtime = Runtime(backend, AgentCatalog([fixture.agent_spec()]), workspaces_dir=tmp_path / "workspaces")
        await runtime.start(recover=True)
        try:
            (request,) = await pending_requests(backend, waiting_inv)
            assert request["tool_name"] == "write_file"
            await runtime.decide_and_resume(request["hitl_id"], approval(request))
            done = await runtime.wait_for_run(waiting_inv, timeout=30)
        finally:
            await runtime.stop()
        assert done.state == "done", done.error
        assert (tmp_path / "workspaces" / "ses_waiting" / "plan.txt").read_text() == "plan\n"
        conversation = await messages(backend, waiting_inv)
        assert conversation[: len(before[waiting_inv]["messages"])] == before[waiting_inv]["messages"]
        results = tool_results(conversation)
        assert results[request["tool_call_id"]] == "wrote 5 bytes to plan.txt"
        running = [
            e
            for e in await backend.events(waiting_inv)
            if e.kind is BlockKind.TOOL_USE
            and e.block_id.endswith(str(request["tool_call_id"]))
            and e.data.get("status") == "running"
        ]
        assert len(running) == 1  # the tool ran exactly once
        report = await backend.verify_audit()
        assert report.ok, report.problem
        assert report.rows_checked == 5
    finally:
        await backend.aclose()


def test_downgrade_restores_whole_checkpoints(old_database: Path) -> None:
    """0009 → 0008 puts each kept checkpoint's conversation and large values back in its state."""
    from alembic import command

    from reviewer_app.persistence import migrate
    from reviewer_app.persistence.engine import create_engines, database_url

    before = _latest_full_states(old_database)
    with sqlite3.connect(old_database) as raw:
        shown_before = raw.execute("SELECT id, shown_args FROM audit_log ORDER BY id").fetchall()
    raw.close()
    engines = create_engines(database_url(old_database))
    try:
        migrate.upgrade(engines)
        config = migrate.alembic_config()
        with engines.writer.connect() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0008")
            connection.commit()
    finally:
        engines.dispose()
    after = _latest_full_states(old_database)
    assert after == before
    with sqlite3.connect(old_database) as raw:
        shown_after = raw.execute("SELECT id, shown_args FROM audit_log ORDER BY id").fetchall()
        tables = {row[0] for row in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    raw.close()
    assert [(i, json.loads(s) if s else s) for i, s in shown_after] == [
        (i, json.loads(s) if s else s) for i, s in shown_before
    ]
    assert not {"blobs", "run_messages"} & tables
