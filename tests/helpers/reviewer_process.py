"""A reviewer in its own OS process, deciding through the reviewer API as the window does.

Usage: python -m tests.helpers.reviewer_process DB REVIEWER READY_FILE GO_FILE SEED

Loads every pending request (to hash the arguments it approves), touches
READY_FILE, waits for GO_FILE, then approves each request in an order shuffled by
SEED with :meth:`SQLHITLBackend.decide`. Prints one JSON line: the ids it won,
how many it lost, who each loss named as the winner, and any other error.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.hitl import HITLConflict, RequestQuery, SQLHITLBackend, shown_arguments


async def review(db: str, reviewer: str, ready: Path, go: Path, seed: int) -> dict[str, Any]:
    backend = SQLHITLBackend(db, reviewer=reviewer)
    won: list[str] = []
    winners_named: Counter[str] = Counter()
    errors: list[str] = []
    try:
        pending = await backend.list_records(RequestQuery())
        digests = {record["hitl_id"]: args_digest(shown_arguments(record)) for record in pending}
        order = sorted(digests)
        random.Random(seed).shuffle(order)
        await asyncio.to_thread(ready.touch)
        deadline = time.monotonic() + 120
        while not await asyncio.to_thread(go.exists):
            if time.monotonic() > deadline:
                raise SystemExit("the start signal never came")
            await asyncio.sleep(0.002)
        began = time.perf_counter()
        for hitl_id in order:
            try:
                await backend.decide(hitl_id, Decision(DecisionKind.APPROVE, args_sha256=digests[hitl_id]))
                won.append(hitl_id)
            except HITLConflict as lost:
                winners_named[lost.decided_by or "?"] += 1
            except Exception as exc:  # anything else is a bug the test reports
                errors.append(f"{hitl_id}: {type(exc).__name__}: {exc}")
        elapsed = time.perf_counter() - began
    finally:
        await backend.aclose()
    return {
        "reviewer": backend.reviewer,  # as recorded: on PostgreSQL under the database login
        "loaded": len(digests),
        "won": won,
        "lost": sum(winners_named.values()),
        "winners_named": dict(winners_named),
        "errors": errors,
        "seconds": elapsed,
    }


def main() -> None:
    db, reviewer, ready, go, seed = sys.argv[1:6]
    print(json.dumps(asyncio.run(review(db, reviewer, Path(ready), Path(go), int(seed)))))


if __name__ == "__main__":
    main()
