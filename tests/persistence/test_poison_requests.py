"""Hostile request data: refused at the door with the limit named; rows already stored never break other requests.

Poison rows are written the way another program would: plain ``sqlite3`` on the same file.
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from pathlib import Path

import pytest

from reviewer_app.domain.decisions import Decision, DecisionError, DecisionKind, args_digest
from reviewer_app.domain.limits import MAX_DEPTH, UNDECODABLE_KEY, RequestRejected, is_undecodable
from reviewer_app.domain.records import RequestQuery
from reviewer_app.hitl import SQLHITLBackend, shown_arguments

pytestmark = pytest.mark.asyncio


def nested(depth: int) -> dict[str, object]:
    value: dict[str, object] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


async def make(backend: SQLHITLBackend, hitl_id: str, arguments: object, **extra: object) -> None:
    await backend.create(
        hitl_id=hitl_id,
        hitl_type="tool_approval",
        session_id="s1",
        invocation_id="i1",
        data={"arguments": arguments},
        tool_name="write_file",
        **extra,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("arguments", "limit", "words"),
    [
        ({"path": "\ud800"}, "no lone surrogates", "surrogate"),
        ({"x": ["ok", {"y": "a\udfffb"}]}, "no lone surrogates", "surrogate"),
        ({"\udc80key": 1}, "no lone surrogates", "surrogate"),
        (nested(980), "nesting depth", f"limit of {MAX_DEPTH} levels"),
        ({"n": math.nan}, "finite numbers", "NaN"),
        ({"n": [math.inf]}, "finite numbers", "inf"),
        ({1: "int key"}, "string keys", "not a string"),
        ({"blob": b"bytes"}, "JSON types", "bytes"),
        ({"n": 10**2000}, "integer size", "digits"),
    ],
)
async def test_create_refuses_what_cannot_be_stored_and_names_the_limit(
    backend: SQLHITLBackend, arguments: object, limit: str, words: str
) -> None:
    with pytest.raises(RequestRejected) as caught:
        await make(backend, "bad", arguments)
    assert caught.value.limit == limit
    assert words in str(caught.value)
    assert "data" in str(caught.value)
    assert isinstance(caught.value, ValueError)
    assert await backend.get("bad") is None  # nothing half-written
    # The message itself can be printed and logged (no surrogate echoed back).
    str(caught.value).encode("utf-8")


async def test_create_refuses_oversized_data_and_poison_identifiers(backend: SQLHITLBackend) -> None:
    with pytest.raises(RequestRejected, match=r"limit of 16\.0 MiB") as caught:
        await make(backend, "big", {"content": "x" * (16 * 1024 * 1024 + 10)})
    assert caught.value.limit == "size"
    with pytest.raises(RequestRejected, match="session_id"):
        await backend.create(hitl_id="h", hitl_type="tool_approval", session_id="s\ud800", invocation_id="i1")
    with pytest.raises(RequestRejected, match="tool_name"):
        await backend.create(
            hitl_id="h", hitl_type="tool_approval", session_id="s", invocation_id="i1", tool_name="a\x00b"
        )
    with pytest.raises(RequestRejected, match="metadata"):
        await backend.create(
            hitl_id="h", hitl_type="tool_approval", session_id="s", invocation_id="i1", metadata={"agent": "\ud800"}
        )


async def test_data_at_the_limits_is_accepted_and_round_trips(backend: SQLHITLBackend) -> None:
    deep = nested(MAX_DEPTH - 1)  # plus the "arguments" wrapper: exactly MAX_DEPTH
    big = {"content": "é" * (4 * 1024 * 1024)}  # 8 MiB of UTF-8
    await make(backend, "deep", deep)
    await make(backend, "big", big)
    await make(backend, "emoji", {"text": "a 😀 b"})
    assert shown_arguments(await backend.get("deep")) == deep  # type: ignore[arg-type]
    assert shown_arguments(await backend.get("big")) == big  # type: ignore[arg-type]
    assert shown_arguments(await backend.get("emoji")) == {"text": "a 😀 b"}  # type: ignore[arg-type]


POISON_DATA = {
    "surrogate": json.dumps({"arguments": {"path": "\ud800"}}),  # json.dumps escapes it: valid JSON text
    "deep": '{"arguments": ' + '{"a": ' * 980 + "1" + "}" * 980 + "}",
    "garbage": '{"arguments": {"path": "unterminated',
}


def write_poison(db_path: Path, hitl_id: str, data_text: str, *, metadata_text: str | None = None) -> None:
    """What another program (or an older version) could leave in the table."""
    with sqlite3.connect(db_path) as connection:
        connection.execute("UPDATE hitl_requests SET data = ? WHERE hitl_id = ?", (data_text, hitl_id))
        if metadata_text is not None:
            connection.execute("UPDATE hitl_requests SET metadata = ? WHERE hitl_id = ?", (metadata_text, hitl_id))
    connection.close()


async def seeded_with_poison(backend: SQLHITLBackend, db_path: Path, *, expires_at: int | None = None) -> None:
    for name in POISON_DATA:
        await make(backend, name, {"path": "placeholder"}, expires_at=expires_at)
    await make(backend, "good", {"path": "ok.txt"}, expires_at=expires_at)
    await make(backend, "good2", {"path": "ok2.txt"}, expires_at=expires_at)
    for name, text in POISON_DATA.items():
        write_poison(db_path, name, text, metadata_text='{"agent": "\\udcff"}' if name == "surrogate" else None)


async def test_poison_rows_never_break_listings_or_decisions_of_others(backend: SQLHITLBackend, db_path: Path) -> None:
    await seeded_with_poison(backend, db_path)

    records = {r["hitl_id"]: r for r in await backend.list_records(RequestQuery())}
    assert set(records) == {*POISON_DATA, "good", "good2"}
    for name in POISON_DATA:
        shown = shown_arguments(records[name])
        assert is_undecodable(shown), (name, shown)
        # What a listing prints and hashes works on the placeholder.
        json.dumps(records[name], ensure_ascii=False).encode("utf-8")
        args_digest(shown)
    assert "surrogate" in records["surrogate"]["data"][UNDECODABLE_KEY]
    assert "nested deeper" in records["deep"]["data"][UNDECODABLE_KEY]
    assert "not valid JSON" in records["garbage"]["data"][UNDECODABLE_KEY]
    assert is_undecodable(records["surrogate"]["metadata"])
    summaries = await backend.list_summaries(RequestQuery())
    assert {s.hitl_id for s in summaries} == set(records)

    good = records["good"]
    decided = await backend.decide(
        "good", Decision(DecisionKind.APPROVE, args_sha256=args_digest(shown_arguments(good)), reviewer="r")
    )
    assert decided["status"] == "completed"

    # An unusable request cannot be approved (its arguments are unknown), only rejected or cancelled.
    poison = records["surrogate"]
    with pytest.raises(DecisionError, match="could not be read"):
        await backend.decide(
            "surrogate", Decision(DecisionKind.APPROVE, args_sha256=args_digest(shown_arguments(poison)))
        )
    rejected = await backend.decide("surrogate", Decision(DecisionKind.REJECT, message="unreadable"))
    assert rejected["status"] == "completed"
    for name in ("deep", "garbage"):
        await backend.cancel(name)
        assert (await backend.get(name))["status"] == "cancelled"  # type: ignore[index]
    report = await backend.verify_audit()
    assert report.ok and report.rows_checked == 4


async def test_expiry_skips_nothing_because_of_a_poison_row(backend: SQLHITLBackend, db_path: Path) -> None:
    past = int(time.time()) - 10
    await seeded_with_poison(backend, db_path, expires_at=past)
    expired = await backend.expire_due()
    assert {r["hitl_id"] for r in expired} == {*POISON_DATA, "good", "good2"}
    for record in expired:
        assert record["status"] == "expired"
    assert await backend.list_records(RequestQuery()) == []


async def test_invalid_utf8_text_written_by_another_program_does_not_break_listings(
    backend: SQLHITLBackend, db_path: Path
) -> None:
    await make(backend, "good", {"path": "ok.txt"})
    await make(backend, "bytes", {"path": "x"})
    with sqlite3.connect(db_path) as connection:
        connection.execute("UPDATE hitl_requests SET summary = CAST(x'ff41' AS TEXT) WHERE hitl_id = 'bytes'")
    connection.close()
    assert {s.hitl_id for s in await backend.list_summaries(RequestQuery())} == {"good", "bytes"}


async def test_a_decision_carrying_poison_is_refused_and_changes_nothing(backend: SQLHITLBackend) -> None:
    await make(backend, "h", {"path": "a.txt", "content": "x"})
    with pytest.raises(DecisionError, match="surrogate"):
        await backend.decide("h", Decision(DecisionKind.EDIT, edited_args={"path": "\ud800", "content": "x"}))
    with pytest.raises(DecisionError, match="surrogate"):
        await backend.decide("h", Decision(DecisionKind.REJECT, message="no \udc80"))
    with pytest.raises(DecisionError, match="deeper than the limit of 64 levels"):
        Decision(DecisionKind.EDIT, edited_args=nested(980))
    assert (await backend.get("h"))["status"] == "pending"  # type: ignore[index]
    assert (await backend.verify_audit()).rows_checked == 0


async def test_invalid_utf8_in_one_row_leaves_the_other_reads_and_decisions_working(
    backend: SQLHITLBackend, db_path: Path
) -> None:
    await make(backend, "good", {"path": "ok.txt"})
    await make(backend, "bytes", {"path": "x"})
    with sqlite3.connect(db_path) as connection:
        connection.execute("UPDATE hitl_requests SET summary = CAST(x'ff41' AS TEXT) WHERE hitl_id = 'bytes'")
    connection.close()
    shown = {s.hitl_id: s.summary for s in await backend.list_summaries(RequestQuery())}
    assert shown["bytes"] == "\ufffdA"
    page = await backend.summary_page(("pending",))
    assert {s.hitl_id for s in page} == {"good", "bytes"}
    assert (await backend.get("bytes")) is not None
    await backend.decide("bytes", Decision(DecisionKind.REJECT, message="garbled"))
    assert (await backend.get("bytes"))["status"] == "completed"  # type: ignore[index]
    # the next read on the same connection is strict again (lenient decoding is only for the retry)
    assert {s.hitl_id for s in await backend.list_summaries(RequestQuery(statuses=("pending",)))} == {"good"}
