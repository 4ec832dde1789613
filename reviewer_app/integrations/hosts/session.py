"""Whole sessions, not single calls: a host's tool results and session ends written onto its runs.

``hook install`` adds these events next to the gating one, running ``reviewer-app hook <host> --event <name>``:
a tool result (Gemini ``AfterTool``, Qwen/Factory ``PostToolUse``, Copilot ``postToolUse``, OpenCode's plugin
``tool.execute.after``) becomes the call's ``tool_use`` block and its result on the run's timeline; a prompt
(Claude Code ``UserPromptSubmit``) names its run and the session's project on the Runs board; a turn end
(``Stop``) finishes the run it names, a session end (``SessionEnd``, Copilot ``sessionEnd``) finishes every run of
the session still open, so they leave the Runs board's active columns. These events never gate anything: the hook
prints nothing, always exits 0, and a failure is one line on stderr.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from reviewer_app.integrations.claude_code.events import Host
from reviewer_app.integrations.hosts.lifecycle_wire import (
    LIFECYCLE_EVENT_KINDS,
    PROMPT,
    RUN_END,
    TOOL_RESULT,
    lifecycle_fields,
)

if TYPE_CHECKING:
    from reviewer_app.hitl import SQLHITLBackend

LIFECYCLE_EVENTS: dict[Host, dict[str, str]] = {Host(host): kinds for host, kinds in LIFECYCLE_EVENT_KINDS.items()}
"""Per host, the lifecycle events Reviewer follows and what each means."""


@dataclass(frozen=True, slots=True)
class Lifecycle:
    kind: str
    session_id: str
    run_id: str | None
    tool_name: str | None = None
    call_id: str | None = None
    arguments: Any = None
    result: str = ""
    ok: bool = True
    transcript_path: str | None = None
    cwd: str | None = None
    prompt: str | None = None


def parse_lifecycle(host: Host, name: str, payload: bytes) -> Lifecycle:
    """Read one lifecycle event of ``host``; :class:`HookInputError` when it is not one Reviewer follows."""
    return Lifecycle(**lifecycle_fields(host.value, name, payload))


async def _claude_result(backend: SQLHITLBackend, event: Lifecycle, state_dir: Path | None) -> None:
    """Claude's transcript copied up to now, then the call's result on the block its transcript names.

    The result line may not be in the transcript yet when PostToolUse fires (nor ever, for the session's last call):
    the event's own ``tool_response`` is written onto the same block, so copying the line later changes nothing.
    """
    from reviewer_app.domain.timeline import BlockEvent, BlockKind, BlockOp
    from reviewer_app.integrations.claude_code.timeline import copy_transcript
    from reviewer_app.integrations.claude_code.transcript import tool_block_id

    run = event.run_id or event.session_id
    if state_dir is not None and event.transcript_path:
        await copy_transcript(
            backend,
            agent=Host.CLAUDE_CODE.value,
            session_id=event.session_id,
            run_id=run,
            transcript=Path(event.transcript_path),
            state_dir=state_dir,
        )
    if event.kind != TOOL_RESULT:
        return
    assert event.call_id is not None
    block_id = tool_block_id(event.session_id, event.call_id)
    now = time.time_ns() // 1_000_000
    blocks = []
    if not any(e.block_id == block_id and e.op == BlockOp.APPLY for e in await backend.events(run)):
        called = {"name": event.tool_name, "call_id": event.call_id, "arguments": event.arguments, "status": "pending"}
        blocks.append(BlockEvent(block_id, BlockKind.TOOL_USE, BlockOp.APPLY, called, event.session_id, run, now))
    status = {"status": "success" if event.ok else "error", "result": event.result}
    blocks.append(BlockEvent(block_id, BlockKind.TOOL_USE, BlockOp.PATCH, status, event.session_id, run, now))
    await backend.append_blocks(blocks)


async def record(host: Host, event: Lifecycle, database: str, state_dir: Path | None = None) -> None:
    """Write ``event`` onto its session's runs (a tool result on its run's timeline, or the runs finished)."""
    from reviewer_app.integrations.claude_code.hook_backend import load_hook_backend

    backend_class = load_hook_backend()
    from reviewer_app.domain.runs import RunState
    from reviewer_app.integrations.core import ReviewClient, ToolCalled, ToolReturned

    backend = backend_class(database, checkpoint_on_commit=True)  # a process per tool result: see hitl/wal_checkpoints
    try:
        client = ReviewClient(backend, agent=host.value)
        if event.kind == PROMPT:  # without a prompt id there is no run to name (the calls will name theirs)
            if event.run_id is not None:
                await client.register_run(
                    session_id=event.session_id, invocation_id=event.run_id, title=event.prompt, workspace=event.cwd
                )
            return
        if host is Host.CLAUDE_CODE:
            if event.kind == TOOL_RESULT:  # a turn's end names no run of its own: it must not make one
                await client.register_run(
                    session_id=event.session_id, invocation_id=event.run_id or event.session_id, workspace=event.cwd
                )
            await _claude_result(backend, event, state_dir)
            if event.kind == TOOL_RESULT:
                return
        if event.kind == TOOL_RESULT:
            run = event.run_id or event.session_id
            await client.register_run(session_id=event.session_id, invocation_id=run, workspace=event.cwd)
            assert event.call_id is not None
            entries: list[ToolCalled | ToolReturned] = [
                ToolCalled(event.call_id, event.tool_name or "tool", event.arguments),
                ToolReturned(event.call_id, event.result, event.ok),
            ]
            await client.narrate_transcript(event.session_id, run, entries)
            return
        if event.kind == RUN_END:
            runs = [event.run_id] if event.run_id else []
        else:
            open_states = [RunState.QUEUED.value, RunState.RUNNING.value, RunState.WAITING.value]
            runs = [run.id for run in await backend.list_runs(states=open_states) if run.session_id == event.session_id]
        for run_id in runs:
            current = await backend.get_run(run_id)
            if current is None or current.state in (RunState.DONE.value, RunState.CANCELLED.value):
                continue
            await client.set_run_state(run_id, RunState.RUNNING)  # a run waiting on nothing more may finish
            await client.finish_run(event.session_id, run_id)
    finally:
        await backend.aclose()


def run_lifecycle(
    host: Host, name: str, database: str, stdin: Any, stderr: TextIO, state_dir: Path | None = None
) -> int:
    """The hook process for a lifecycle event: record it, print nothing, exit 0 whatever happens.

    ``state_dir`` holds the transcript cursors the gating hook keeps (Claude Code); None: the transcript is not read.
    """
    import asyncio

    from reviewer_app.integrations.claude_code.events import read_stdin_bytes

    try:
        event = parse_lifecycle(host, name, read_stdin_bytes(stdin))
        asyncio.run(record(host, event, database, state_dir))
    except BaseException as exc:  # never in the agent's way: these events decide nothing
        try:
            stderr.write(f"reviewer-app hook: {name} not recorded: {type(exc).__name__}: {exc}\n")
        except (OSError, ValueError):
            pass
    return 0
