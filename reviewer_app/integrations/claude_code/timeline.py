"""The run's timeline for a hook call: Claude's transcript copied in, and the request's own block."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from reviewer_app.domain.outcome import settled_block_patch
from reviewer_app.domain.timeline import BlockEvent, BlockKind, BlockOp
from reviewer_app.integrations.claude_code.events import HookEvent

if TYPE_CHECKING:
    from reviewer_app.hitl import SQLHITLBackend
    from reviewer_app.integrations.claude_code.request import RequestFields
    from reviewer_app.integrations.core import Outcome


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


async def copy_transcript(
    backend: SQLHITLBackend, *, agent: str, session_id: str, run_id: str, transcript: Path, state_dir: Path
) -> None:
    """Copy the transcript lines written since the last hook call of this session (any hook event's call)."""
    from reviewer_app.integrations.claude_code.transcript import read_new

    with read_new(transcript, session_id, state_dir) as chunk:
        for run, title in chunk.run_titles.items():  # new runs, and ``run_id`` if it was made before its prompt
            await backend.register_run(session_id=session_id, invocation_id=run, agent=agent, prompt=title)
        events = [
            BlockEvent(
                block_id=block.block_id,
                kind=BlockKind(block.kind),
                op=BlockOp(block.op),
                data=block.data,
                session_id=session_id,
                invocation_id=block.invocation_id,
                ts_ms=_now_ms(),
            )
            for block in chunk.blocks
        ]
        if events:
            await backend.append_blocks(events)


class TimelineWriter:
    """Appends blocks for one hook call; failures here never block the decision (the timeline is a courtesy)."""

    def __init__(self, backend: SQLHITLBackend, event: HookEvent, state_dir: Path | None) -> None:
        self.backend = backend
        self.event = event
        self.state_dir = state_dir
        self.block_id = ""

    def _event(self, block_id: str, kind: BlockKind, op: BlockOp, data: dict[str, object], run: str) -> BlockEvent:
        return BlockEvent(
            block_id=block_id,
            kind=kind,
            op=op,
            data=data,
            session_id=self.event.session_id,
            invocation_id=run,
            ts_ms=_now_ms(),
        )

    async def sync_transcript(self) -> None:
        """Copy the transcript lines written since the last hook call of this session."""
        if self.state_dir is None or not self.event.transcript_path:
            return
        await copy_transcript(
            self.backend,
            agent=self.event.host.value,
            session_id=self.event.session_id,
            run_id=self.event.run_id,
            transcript=Path(self.event.transcript_path),
            state_dir=self.state_dir,
        )

    async def request_shown(self, fields: RequestFields) -> None:
        self.block_id = f"hitl_{fields.hitl_id}"
        try:
            await self.sync_transcript()
        except Exception:  # an unreadable transcript must not stop the request
            pass
        data: dict[str, object] = {
            "hitl_id": fields.hitl_id,
            "hitl_type": fields.hitl_type,
            "tool_name": fields.tool_name,
            "call_id": fields.tool_call_id,
            "arguments": fields.arguments,
            "status": "pending",
            "expires_at": fields.expires_at,
        }
        await self.backend.append_blocks(
            [self._event(self.block_id, BlockKind.HITL, BlockOp.APPLY, data, self.event.run_id)]
        )

    async def settled(self, outcome: Outcome | None) -> None:
        if not self.block_id:
            return
        await self._patch(settled_block_patch(outcome, _now_ms()))

    async def abandoned(self, why: str) -> None:
        await self._patch(
            {
                "status": "cancelled",
                "decision": "cancel",
                "message": f"answered elsewhere ({why})",
                "resolved_ms": _now_ms(),
            }
        )

    async def _patch(self, patch: dict[str, object]) -> None:
        try:
            await self.backend.append_blocks(
                [self._event(self.block_id, BlockKind.HITL, BlockOp.PATCH, patch, self.event.run_id)]
            )
        except Exception:
            pass
