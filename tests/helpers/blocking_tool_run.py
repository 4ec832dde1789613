"""``reviewer-app run`` with one extra tool whose (synchronous) handler never returns.

Usage: python -m tests.helpers.blocking_tool_run DB WORKSPACES

Drives the run exactly as the CLI's ``run`` command does (same signal handling, same shutdown), so a test
can check that SIGTERM ends the process while a tool thread is stuck for good.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path
from typing import Any

from reviewer_app.cli.runs import drive_until_finished
from reviewer_app.domain.waivers import ApprovalPolicy
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.runtime.agents import AgentCatalog, AgentSpec
from reviewer_app.runtime.runner import Runtime
from reviewer_app.runtime.tools import ToolContext, ToolSpec, builtin_tools


def block_forever(args: dict[str, Any], ctx: ToolContext) -> str:
    print("tool blocked", file=sys.stderr, flush=True)
    threading.Event().wait()  # a handler stuck in a system call that never returns
    return "unreachable"


async def main(db: str, workspaces: str) -> int:
    tools = builtin_tools()
    tools.register(
        ToolSpec(
            name="block",
            description="never returns",
            parameters={"type": "object", "properties": {}},
            handler=block_forever,
        )
    )
    agent = AgentSpec(
        name="blocker",
        system_prompt="test",
        model={"type": "scripted", "script": [{"tool_calls": [{"name": "block", "args": {}}]}]},
        tools=["block"],
        policy=ApprovalPolicy(),
    )
    backend = SQLHITLBackend(db)
    runtime = Runtime(backend, AgentCatalog([agent]), workspaces_dir=Path(workspaces), tools=tools)
    try:
        await runtime.start(recover=False)
        invocation_id = await runtime.start_run("blocker", "go")
        return await drive_until_finished(runtime, backend, invocation_id, quiet=True, timeout=None)
    finally:
        await runtime.stop()
        await backend.aclose()


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2])))
