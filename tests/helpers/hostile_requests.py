"""Requests whose texts are hostile: what any process that can write the database may store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.domain.records import NewRequest
from reviewer_app.persistence.store import Store

# What an agent (or anyone who can write the file) may put in a row: control characters, bidi overrides and
# isolates, a zero-width joiner, a lone combining mark, a line break, markup.
HOSTILE = [
    "rm -rf ~\u202e/etc/passwd\u202c",
    "echo \x1b[31mred\x1b[0m \x07\x08",
    "\u2067isolate\u2069 \u200f rtl mark \u200e",
    "line one\nline two\r\nthree",
    "<b>markup</b> &amp; \u0301",
    "zero\u200dwidth\ufeff bom",
]


def seed_hostile_requests(store: Store, count: int) -> None:
    with store.transaction() as tx:
        for index in range(count):
            hostile = HOSTILE[index % len(HOSTILE)]
            tx.requests.create(
                NewRequest(
                    hitl_id=f"r{index:03d}",
                    hitl_type="ask_user" if index % 5 == 0 else "tool_approval",
                    session_id=f"s{index % 3}\u202e",
                    invocation_id=f"i{index % 7}",
                    data={"arguments": {"command": f"{hostile} {index}"}, "question": hostile},
                    metadata={"agent": f"bot\x1b{index % 2}", "external": index % 2 == 0},
                    tool_name=None if index % 5 == 0 else f"run_shell{hostile[:3]}",
                    external=index % 2 == 0,
                    expires_at=None if index % 4 else 4_000_000_000 + index,
                )
            )
    with store.transaction() as tx:  # a decided one is not on the first screen
        tx.requests.decide("r001", {"decision": "reject"}, status=HITLStatus.COMPLETED, reviewer="x")


def overwrite_summaries(db_path: Path, count: int) -> None:
    """Every third stored summary replaced by a hostile text, as any writer of the file could (the store builds
    summaries itself when it creates a request)."""
    with sqlite3.connect(db_path) as raw:
        raw.executemany(
            "UPDATE hitl_requests SET summary = ? WHERE hitl_id = ?",
            [(HOSTILE[i % len(HOSTILE)] * 3, f"r{i:03d}") for i in range(0, count, 3)],
        )
