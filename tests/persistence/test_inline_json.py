"""Small JSON values (events, messages, checkpoints) are encoded once and stored exactly as the blob path stores
them; a value with a large field still goes to ``blobs``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.domain.timeline import BlockEvent, BlockKind, BlockOp
from reviewer_app.persistence.blobs import (
    BLOB_THRESHOLD,
    STATE_FORMAT,
    ValueMemo,
    digest,
    externalize,
    externalize_message,
    externalize_state,
)
from reviewer_app.persistence.store import Store

SMALL_ARGS = {"path": "notes/é.txt", "content": "line\n" * 20, "mode": None, "n": 1.5, "flags": [True, 2]}
LARGE = "x" * (BLOB_THRESHOLD + 10)


EVENT = {"block_id": "inv:tool:c1", "kind": BlockKind.TOOL_USE, "op": BlockOp.APPLY, "ts_ms": 1}


def _event(data: dict[str, Any]) -> BlockEvent:
    return BlockEvent(**EVENT, data=data, session_id="ses", invocation_id="inv")  # type: ignore[arg-type]


def _state(arguments: Any) -> dict[str, Any]:
    return {
        "agent": "a",
        "pending": [{"call_id": "c1", "name": "write_file", "arguments": arguments, "status": "awaiting_decision"}],
        "turn": 1,
        "active_ms": 0,
        "script": None,
    }


def _message(arguments: Any) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "w", "arguments": json.dumps(arguments)}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def _blob_path(kind: str, value: dict[str, Any], count: int = 0) -> tuple[str, Any]:
    """What the blob path stores for ``value`` (the JSON text, and the blob references of an event)."""
    put = digest  # the blob's address, as the store's put returns it
    if kind == "event":
        data, refs = externalize(value, put)
        return json.dumps(data), refs or None
    if kind == "message":
        return json.dumps(externalize_message(value, put)), None
    stored = externalize_state(value, put, memo=ValueMemo(), has=lambda sha: False)
    stored["format"] = STATE_FORMAT
    stored["message_count"] = count
    return json.dumps(stored), None


@pytest.fixture
def store(tmp_path: Path) -> Any:
    opened = Store.open(tmp_path / "reviewer.db")
    with opened.transaction() as tx:
        tx.runs.ensure_with_session("inv", "ses", agent="a")
    yield opened
    opened.close()


@pytest.mark.parametrize("arguments", [SMALL_ARGS, {**SMALL_ARGS, "content": LARGE}])
def test_events_messages_and_checkpoints_are_stored_as_the_blob_path_stores_them(
    store: Store, tmp_path: Path, arguments: dict[str, Any]
) -> None:
    event = {"name": "write_file", "call_id": "c1", "arguments": arguments, "status": "pending"}
    with store.transaction() as tx:
        tx.timeline.extend([_event(event)])
        tx.timeline.append([_event(event)])
        tx.checkpoints.save("inv:ckpt:000001", "inv", "ses", _state(arguments), [_message(arguments)], first_index=0)
    with sqlite3.connect(tmp_path / "reviewer.db") as raw:
        events = raw.execute("SELECT data, blob_refs FROM block_events ORDER BY seq").fetchall()
        (message,) = raw.execute("SELECT message FROM run_messages").fetchone()
        (state,) = raw.execute("SELECT state FROM checkpoints").fetchone()
    raw.close()
    expected = _blob_path("event", event)
    assert [(data, json.loads(refs) if refs is not None else None) for data, refs in events] == [expected, expected]
    assert message == _blob_path("message", _message(arguments))[0]
    assert state == _blob_path("state", _state(arguments), count=1)[0]
    assert len(state) < BLOB_THRESHOLD and ('"$blobs"' in state) == (arguments["content"] == LARGE)
    latest = store.checkpoints.latest("inv")
    assert latest is not None and latest[1]["pending"][0]["arguments"] == arguments
    assert latest[1]["messages"] == [_message(arguments)]
    assert [e.data for e in store.timeline.of_run("inv")] == [event, event]


def test_extend_appends_in_order_and_reads_back_on_either_database(any_db: str) -> None:
    store = Store.open(any_db)
    try:
        with store.transaction() as tx:
            tx.runs.ensure_with_session("inv", "ses", agent="a")
            tx.timeline.extend([_event({"n": 1, "a": SMALL_ARGS}), _event({"n": 2, "big": LARGE}), _event({"n": 3})])
            tx.timeline.extend([])
        events = store.timeline.of_run("inv")
        assert [e.data for e in events] == [{"n": 1, "a": SMALL_ARGS}, {"n": 2, "big": LARGE}, {"n": 3}]
        assert [e.seq for e in events] == sorted(e.seq for e in events) and len({e.seq for e in events}) == 3
    finally:
        store.close()
