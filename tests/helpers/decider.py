"""A reviewer process for concurrency tests: decides every listed request, counts wins and losses.

Usage: python -m tests.helpers.decider DB_URL REVIEWER START_FILE ID_PREFIX COUNT
Waits for START_FILE to exist (so competing processes start together), then
responds to ID_PREFIX0 .. ID_PREFIX{COUNT-1} and prints one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from reviewer_app.domain.decisions import args_digest
from reviewer_app.hitl import HITLConflict, SQLHITLBackend


async def decide_all(url: str, reviewer: str, start_file: Path, prefix: str, count: int) -> dict[str, object]:
    backend = SQLHITLBackend(url, reviewer=reviewer)
    won: list[str] = []
    lost = 0
    errors: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while not start_file.exists():
            if time.monotonic() > deadline:
                raise SystemExit("start signal never came")
            await asyncio.sleep(0.005)
        for index in range(count):
            hitl_id = f"{prefix}{index}"
            try:
                # the seeded arguments are {"n": index}: an approval names their hash, as every approval must
                response = {"decision": "approve", "args_sha256": args_digest({"n": index})}
                await backend.respond(hitl_id, response)
                won.append(hitl_id)
            except HITLConflict:
                lost += 1
            except Exception as exc:  # anything else is a bug the test reports
                errors.append(f"{hitl_id}: {type(exc).__name__}: {exc}")
    finally:
        await backend.aclose()
    return {"reviewer": reviewer, "won": won, "lost": lost, "errors": errors}


def main() -> None:
    url, reviewer, start_file, prefix, count = sys.argv[1:6]
    result = asyncio.run(decide_all(url, reviewer, Path(start_file), prefix, int(count)))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
