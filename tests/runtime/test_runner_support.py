"""Helpers shared by the runtime tests (no tests here): a started runtime, waiting on the database, decisions."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.hitl import HITLRecord
from reviewer_app.domain.timeline import Block, fold_events
from reviewer_app.domain.waivers import ApprovalPolicy
from reviewer_app.hitl import SQLHITLBackend, shown_arguments
from reviewer_app.runtime.agents import DEFAULT_TOOLS, AgentCatalog, AgentSpec
from reviewer_app.runtime.runner import Runtime

T = TypeVar("T")


def agent(name: str = "tester", *, policy: ApprovalPolicy | None = None, **extra: Any) -> AgentSpec:
    """A scripted agent; each test gives the turns with ``start_run(script=...)``."""
    return AgentSpec(
        name=name,
        system_prompt="You are a test agent.",
        model=extra.pop("model", {"type": "scripted", "script": []}),
        tools=list(extra.pop("tools", DEFAULT_TOOLS)),
        policy=policy or ApprovalPolicy(),
        **extra,
    )


@asynccontextmanager
async def started_runtime(
    backend: SQLHITLBackend, tmp_path: Path, *agents: AgentSpec, recover: bool = True, **kwargs: Any
) -> AsyncIterator[Runtime]:
    catalog = AgentCatalog(agents or (agent(),))
    runtime = Runtime(backend, catalog, workspaces_dir=tmp_path / "workspaces", **kwargs)
    await runtime.start(recover=recover)
    try:
        yield runtime
    finally:
        await runtime.stop()


async def eventually(probe: Callable[[], Awaitable[T | None]], backend: SQLHITLBackend, timeout: float = 10.0) -> T:
    """Re-run ``probe`` on every database change until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        token = backend.feed.token()
        value = await probe()
        if value:
            return value
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"condition not met within {timeout} s")
        await backend.feed.wait(token, min(remaining, 0.5))


async def pending_requests(backend: SQLHITLBackend, invocation_id: str, count: int = 1) -> list[HITLRecord]:
    """Wait until the run has ``count`` pending requests (a turn's siblings share a timestamp: match by tool)."""

    async def probe() -> list[HITLRecord] | None:
        records = await backend.get_pending_by_invocation(invocation_id)
        return records if len(records) >= count else None

    return await eventually(probe, backend)


async def run_state(backend: SQLHITLBackend, invocation_id: str, *states: str, timeout: float = 10.0) -> Any:
    async def probe() -> Any:
        record = await backend.run(backend.store.runs.get, invocation_id)
        return record if record is not None and record.state in states else None

    return await eventually(probe, backend, timeout)


def approval(record: HITLRecord, kind: DecisionKind = DecisionKind.APPROVE, **extra: Any) -> Decision:
    """A decision that names the hash of the arguments the record shows, as a reviewer's would."""
    return Decision(kind, args_sha256=args_digest(shown_arguments(record)), **extra)


async def messages(backend: SQLHITLBackend, invocation_id: str) -> list[dict[str, Any]]:
    latest = await backend.run(backend.store.checkpoints.latest, invocation_id)
    assert latest is not None
    return list(latest[1]["messages"])


def tool_results(conversation: list[dict[str, Any]]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in conversation if m["role"] == "tool"}


async def timeline(backend: SQLHITLBackend, invocation_id: str) -> list[Block]:
    return fold_events(await backend.events(invocation_id))


async def gather_all(*coros: Awaitable[T]) -> list[T]:
    return list(await asyncio.gather(*coros))
