"""An external agent process that raises requests one at a time and waits for each decision.

Usage: python -m tests.helpers.waiting_agent DB COUNT [PREFIX]

For each request it prints ``{"created": ID}`` once the request is committed,
waits with :meth:`SQLHITLBackend.wait_for_response`, then prints
``{"woke": ID, "at": UNIX_TIME, "status": ..., "decision": ...}`` the moment it
wakes: the test on the other end measures decision-to-wake-up latency.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from reviewer_app.hitl import SQLHITLBackend


def say(message: dict[str, object]) -> None:
    print(json.dumps(message), flush=True)


async def run(db: str, count: int, prefix: str) -> None:
    backend = SQLHITLBackend(db, reviewer="waiting-agent")
    try:
        for index in range(count):
            hitl_id = f"{prefix}{index}"
            await backend.create(
                hitl_id=hitl_id,
                hitl_type="tool_approval",
                session_id="external-session",
                invocation_id="external-run",
                data={"arguments": {"command": f"echo {index}"}},
                metadata={"external": True, "agent": "waiting-agent"},
                tool_name="run_shell",
            )
            say({"created": hitl_id})
            record = await backend.wait_for_response(hitl_id, timeout=60)
            woke = time.time()
            say({"woke": hitl_id, "at": woke, "status": record["status"], "decision": record["user_response"]})
    finally:
        await backend.aclose()


def main() -> None:
    db, count = sys.argv[1], int(sys.argv[2])
    prefix = sys.argv[3] if len(sys.argv) > 3 else "wait-"
    asyncio.run(run(db, count, prefix))


if __name__ == "__main__":
    main()
