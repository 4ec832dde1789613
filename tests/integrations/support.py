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
