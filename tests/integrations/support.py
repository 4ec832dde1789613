"""What the adapter tests share: a reviewer elsewhere that waits for requests and decides them."""

from __future__ import annotations

import asyncio
from typing import Any

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.hitl import HITLRecord, HITLStatus
from reviewer_app.hitl import RequestQuery, SQLHITLBackend, shown_arguments

ALL_STATUSES = tuple(status.value for status in HITLStatus)


def decision(record: HITLRecord, kind: DecisionKind, **extra: Any) -> Decision:
    """A reviewer's decision as the window makes it: approvals name the SHA-256 of the arguments shown."""
    digest = args_digest(shown_arguments(record)) if kind.needs_hash else None
    return Decision(kind, args_sha256=digest, **extra)


async def pending(reviewer: SQLHITLBackend, count: int, *, session_id: str | None = None) -> list[HITLRecord]:
    """The pending requests once there are ``count`` of them (in arrival order)."""
    while True:
        records = await reviewer.list_records(RequestQuery(session_id=session_id))
        if len(records) >= count:
            return records
        await asyncio.sleep(0.02)


async def every_request(reviewer: SQLHITLBackend) -> list[HITLRecord]:
    return await reviewer.list_records(RequestQuery(statuses=ALL_STATUSES))


def by_tool(records: list[HITLRecord]) -> dict[str, HITLRecord]:
    return {str(record["tool_name"]): record for record in records}


async def decide_elsewhere(db: object, hitl_id: str, kind: str, *extra: str, env: dict[str, str]) -> None:
    """``reviewer-app decide`` in its own process, as an operator at a terminal would decide."""
    import sys

    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "reviewer_app", "decide", hitl_id, kind, *extra, "--db", str(db), "--reviewer", "rita",
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode == 0, (out + err).decode()


async def decide_in_turn(
    db: object, steps: list[tuple[str, dict[str, Any], list[str]]], *, env: dict[str, str], timeout: float = 60
) -> None:
    """For each step, wait for the one pending request, check it asks for ``tool`` with ``arguments`` (a
    question: its text), and decide it with ``reviewer-app decide`` in another process."""
    async with SQLHITLBackend(str(db), reviewer="observer") as reviewer:
        for tool, arguments, decide in steps:
            [record] = await asyncio.wait_for(pending(reviewer, 1), timeout)
            assert record["tool_name"] == tool, (tool, record)
            shown = record["data"].get("arguments", {"question": record["data"].get("question")})
            assert {key: shown.get(key) for key in arguments} == arguments, (arguments, shown)
            await decide_elsewhere(db, record["hitl_id"], *decide, env=env)


NOTE_DECISIONS: list[tuple[str, dict[str, Any], list[str]]] = [
    ("write_note", {"path": "a.txt", "text": "one"}, ["approve"]),
    ("write_note", {"path": "b.txt", "text": "two"}, ["edit", "--args", '{"path": "b.txt", "text": "edited"}']),
    ("write_note", {"path": "c.txt", "text": "three"}, ["reject", "--message", "c.txt is read-only"]),
    ("write_note", {"path": "d.txt", "text": "four"}, ["steer", "--message", "put it in e.txt"]),
    ("write_note", {"path": "s.txt", "text": "same"}, ["approve_for_session"]),
    # the next identical write_note is settled by the waiver: no request waits for it
]
"""The decisions the framework examples' note plans meet, in order, and what each model then reads."""
NOTES_WRITTEN = [["a.txt", "one"], ["b.txt", "edited"], ["s.txt", "same"], ["s.txt", "same"]]
NOTES_READ = [
    "wrote a.txt",
    "wrote b.txt",
    "rejected by reviewer: c.txt is read-only",
    "Reviewer guidance: put it in e.txt",
    "wrote s.txt",
    "wrote s.txt",
]


async def assert_one_waiver_on_record(db: object, total: int) -> None:
    """Every request completed, one of them by the session's waiver, with its one audit row."""
    async with SQLHITLBackend(str(db), reviewer="observer") as reviewer:
        every = await every_request(reviewer)
        waived = [r for r in every if (r["user_response"] or {}).get("reviewer", "").startswith("session-rule:")]
        assert len(waived) == 1 and len(await reviewer.audit(waived[0]["hitl_id"])) == 1
        assert all(r["status"] == "completed" for r in every) and len(every) == total


async def report_of(agent: asyncio.subprocess.Process) -> dict[str, list[object]]:
    """The JSON line a framework example prints last, once it exited 0."""
    import json

    out, err = await asyncio.wait_for(agent.communicate(), 60)
    assert agent.returncode == 0, err.decode()
    result: dict[str, list[object]] = json.loads(out.decode().strip().splitlines()[-1])
    return result
