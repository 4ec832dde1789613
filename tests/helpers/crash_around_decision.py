"""A runtime that decides its own run's request, then dies by SIGKILL at a chosen point around that decision.

Usage: python -m tests.helpers.crash_around_decision DB WORKSPACES POINT [MODE]

The run's one gated call is ``count`` (appends a line to ``count.txt`` in the run's workspace: each line is one time
the tool ran). The process approves the request through ``Runtime.decide_and_resume`` (a decision made here for a
run driven here) and kills itself:

* ``before-commit``: inside the transaction that records the decision, before its COMMIT;
* ``after-commit``: right after that transaction commits, before anything else runs;
* ``in-tool``: inside the tool, after it appended its line (before ``done`` is committed).

MODE ``thread`` (the default) or ``loop``: the backend made with ``writes_on_loop`` (write transactions on the loop's
own thread). Before dying it says on stderr on which thread the decision's transaction ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.waivers import ApprovalPolicy
from reviewer_app.hitl import SQLHITLBackend, shown_arguments
from reviewer_app.persistence.store import StoreTx
from reviewer_app.runtime.agents import AgentCatalog, AgentSpec
from reviewer_app.runtime.runner import Runtime
from reviewer_app.runtime.tools import ToolContext, ToolRegistry, ToolSpec, builtin_tools
from tests.runtime.test_runner_support import pending_requests, run_state

POINTS = ("before-commit", "after-commit", "in-tool")
MODES = ("thread", "loop")


def counting_tools(*, die_inside: bool) -> ToolRegistry:
    """The built-in tools plus ``count``, which records each time it runs (and dies there when asked)."""

    def count(args: dict[str, Any], ctx: ToolContext) -> str:
        with (ctx.workspace / "count.txt").open("a") as counter:
            counter.write("ran\n")
        if die_inside:
            os.kill(os.getpid(), signal.SIGKILL)
        return "counted"

    tools = builtin_tools()
    tools.register(
        ToolSpec(
            name="count",
            description="Counts one run of itself.",
            parameters={"type": "object", "properties": {}},
            handler=count,
            side_effects=True,
            idempotent=True,
        )
    )
    return tools


def counting_agent() -> AgentSpec:
    return AgentSpec(
        name="counter",
        system_prompt="test",
        model={"type": "scripted", "script": [{"tool_calls": [{"name": "count", "args": {}}]}]},
        tools=["count"],
        policy=ApprovalPolicy(),
    )


class _NotingDecisions:
    """The transaction's requests aggregate, noting each decision it records."""

    def __init__(self, inner: Any, decided: list[bool]) -> None:
        self._inner = inner
        self._decided = decided

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def decide(self, *args: Any, **kwargs: Any) -> Any:
        self._decided.append(True)
        return self._inner.decide(*args, **kwargs)


def die_around_decisions(backend: SQLHITLBackend, point: str) -> None:
    """SIGKILL this process before or after the COMMIT of the transaction that records a decision (whichever of the
    store's write transactions records it: the database thread's or the loop's)."""
    store = backend.store

    def dying(original: Any) -> Any:
        @contextlib.contextmanager
        def transaction() -> Iterator[StoreTx]:
            decided: list[bool] = []
            with original() as tx:
                tx._requests = _NotingDecisions(tx.requests, decided)  # type: ignore[attr-defined]
                yield tx
                if decided:
                    print(f"decision on {threading.current_thread().name}", file=sys.stderr, flush=True)
                if decided and point == "before-commit":
                    os.kill(os.getpid(), signal.SIGKILL)
            if decided and point == "after-commit":
                os.kill(os.getpid(), signal.SIGKILL)

        return transaction

    store.transaction = dying(store.transaction)  # type: ignore[method-assign]
    store.loop_transaction = dying(store.loop_transaction)  # type: ignore[method-assign]


async def main(db: str, workspaces: str, point: str, mode: str = "thread") -> int:
    if point not in POINTS or mode not in MODES:
        raise SystemExit(f"point must be one of {POINTS}, mode one of {MODES}")
    if mode == "loop":
        from reviewer_app.hitl.loop_writes import LoopWrites

        # This helper is about a crash around a decision written on the loop: a write slowed by a loaded machine
        # must not send the decision to the database thread (tests/persistence/test_loop_writes.py covers that).
        LoopWrites.SLOW_S = float("inf")
    backend = SQLHITLBackend(db, writes_on_loop=mode == "loop")
    tools = counting_tools(die_inside=point == "in-tool")
    runtime = Runtime(backend, AgentCatalog([counting_agent()]), workspaces_dir=Path(workspaces), tools=tools)
    await runtime.start(recover=False)
    invocation_id = await runtime.start_run("counter", "count once")
    (request,) = await pending_requests(backend, invocation_id)
    await run_state(backend, invocation_id, "waiting")  # the run waits here: the decision is handed to it
    print(invocation_id, flush=True)
    die_around_decisions(backend, point)
    decision = Decision(DecisionKind.APPROVE, args_sha256=args_digest(shown_arguments(request)))
    await runtime.decide_and_resume(request["hitl_id"], decision)
    await runtime.wait_for_run(invocation_id, timeout=30)
    return 3  # not reached: every point kills the process first


if __name__ == "__main__":
    sys.exit(asyncio.run(main(*sys.argv[1:5])))
