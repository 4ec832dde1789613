"""Append-only run state and blobs behave the same on SQLite and PostgreSQL, and migration 0009 converts both."""

from __future__ import annotations

import json

from sqlalchemy import text

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.records import NewRequest
from reviewer_app.domain.timeline import BlockEvent, BlockKind, BlockOp
from reviewer_app.persistence import migrate
from reviewer_app.persistence.blobs import STATE_FORMAT
from reviewer_app.persistence.engine import create_engines
from reviewer_app.persistence.store import Store

BIG = "".join(f"{i:06d} a line of a large tool result\n" for i in range(400))  # ~15 KB


def _event(data: dict) -> BlockEvent:
    return BlockEvent(
        block_id="i1:tool:c1",
        kind=BlockKind.TOOL_USE,
        op=BlockOp.PATCH,
        data=data,
        session_id="s1",
        invocation_id="i1",
        ts_ms=1,
    )


def test_run_state_events_and_audit_round_trip(any_db: str) -> None:
    store = Store.open(any_db)
    try:
        with store.transaction() as tx:
            tx.runs.ensure_session("s1")
            tx.runs.ensure("i1", "s1")
            tx.checkpoints.save(
                "i1:ckpt:000001",
                "i1",
                "s1",
                {"agent": "a", "pending": [{"call_id": "c1", "result": BIG}], "seq": 1},
                [{"role": "system", "content": "hi"}, {"role": "tool", "tool_call_id": "c1", "content": BIG}],
                first_index=0,
            )
            tx.timeline.append([_event({"status": "success", "result": BIG})])
            tx.requests.create(
                NewRequest(
                    hitl_id="h1",
                    hitl_type="tool_approval",
                    session_id="s1",
                    invocation_id="i1",
                    data={"arguments": {"content": BIG}},
                    checkpoint_id="i1:ckpt:000001",
                ),
                ensure_parents=False,
            )
        with store.transaction() as tx:  # a pending request names the first checkpoint: it is kept
            tx.checkpoints.save(
                "i1:ckpt:000002", "i1", "s1", {"agent": "a", "pending": [], "seq": 2}, [], first_index=2
            )
        assert store.checkpoints.get("i1:ckpt:000001") is not None
        with store.transaction() as tx:
            tx.requests.decide(
                "h1",
                Decision(DecisionKind.APPROVE, args_sha256=args_digest({"content": BIG})).to_user_response(),
                reviewer="r",
            )
            tx.checkpoints.save(
                "i1:ckpt:000003", "i1", "s1", {"agent": "a", "pending": [], "seq": 3}, [], first_index=2
            )
        assert store.checkpoints.get("i1:ckpt:000001") is None and store.checkpoints.get("i1:ckpt:000002") is None

        latest = store.checkpoints.latest("i1")
        assert latest is not None and latest[0] == "i1:ckpt:000003"
        assert latest[1]["messages"][1]["content"] == BIG and latest[1]["format"] == STATE_FORMAT
        (event,) = store.timeline.of_run("i1")
        assert event.data == {"status": "success", "result": BIG}
        (entry,) = store.audit.entries(hitl_id="h1")
        assert entry.shown_args == {"content": BIG}
        assert store.audit.verify().ok
        with store.engines.reader.connect() as connection:
            blobs = connection.execute(text("SELECT count(*) FROM blobs")).scalar_one()
        assert blobs == 2  # the result (message, checkpoint, event share it) and the shown arguments
    finally:
        store.close()


def test_migration_converts_old_checkpoints_and_events(empty_any_db: str) -> None:
    engines = create_engines(empty_any_db if "://" in empty_any_db else f"sqlite:///{empty_any_db}")
    try:
        migrate.upgrade(engines, "0008")
        old_states = [
            {"agent": "a", "messages": [{"role": "user", "content": "go"}], "pending": [], "seq": 1},
            {
                "agent": "a",
                "messages": [{"role": "user", "content": "go"}, {"role": "tool", "tool_call_id": "c", "content": BIG}],
                "pending": [{"call_id": "c", "result": BIG}],
                "seq": 2,
                "script": [{"text": BIG}],
            },
        ]
        with engines.writer.begin() as connection:
            connection.execute(
                text("INSERT INTO sessions (id, external, created_at, updated_at) VALUES ('s1', :f, 1, 1)"),
                {"f": False},
            )
            connection.execute(
                text(
                    "INSERT INTO invocations (id, session_id, state, external, created_at, updated_at_ms, active_ms)"
                    " VALUES ('i1', 's1', 'running', :f, 1, 1, 0)"
                ),
                {"f": False},
            )
            for seq, state in enumerate(old_states, start=1):
                connection.execute(
                    text(
                        "INSERT INTO checkpoints (checkpoint_id, invocation_id, session_id, state, created_ms)"
                        " VALUES (:id, 'i1', 's1', :state, 1)"
                    ),
                    {"id": f"i1:ckpt:{seq:06d}", "state": json.dumps(state)},
                )
            connection.execute(
                text(
                    "INSERT INTO block_events (block_id, kind, op, data, ts_ms, session_id, invocation_id)"
                    " VALUES ('b', 'tool_use', 'patch', :data, 1, 's1', 'i1')"
                ),
                {"data": json.dumps({"result": BIG, "status": "success"})},
            )
        migrate.upgrade(engines)
    finally:
        engines.dispose()
    store = Store.open(empty_any_db)
    try:
        latest = store.checkpoints.latest("i1")
        assert latest is not None and latest[0] == "i1:ckpt:000002"
        expected = {**old_states[1], "format": STATE_FORMAT, "message_count": 2}
        assert latest[1] == expected
        assert store.checkpoints.get("i1:ckpt:000001") is None  # superseded, named by no pending request
        (event,) = store.timeline.of_run("i1")
        assert event.data == {"result": BIG, "status": "success"}
        with store.engines.reader.connect() as connection:
            longest = connection.execute(text("SELECT max(length(CAST(data AS TEXT))) FROM block_events")).scalar_one()
        assert longest < 1000
    finally:
        store.close()
