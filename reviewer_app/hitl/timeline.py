"""Runs and timelines written by agents in other processes.

An agent that is not our runtime declares its run (so the window lists it before its first request) and
appends its own timeline events through the backend, in the same database and with the same wake-up.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from reviewer_app.domain.timeline import BlockEvent, BlockKind, BlockOp
from reviewer_app.hitl.core import BackendCore
from reviewer_app.persistence.store import StoreTx, now_ms


class TimelineWrites(BackendCore):
    """Declaring a run and appending its timeline events."""

    async def append_blocks(self, events: Iterable[BlockEvent]) -> list[BlockEvent]:
        """Append timeline events (from this or another process); returns them with their ``seq``."""
        batch = list(events)
        return await self.write(lambda tx: tx.timeline.append(batch))

    async def emit_block(
        self,
        *,
        session_id: str,
        invocation_id: str,
        kind: BlockKind | str,
        data: dict[str, Any],
        op: BlockOp | str = BlockOp.APPLY,
        block_id: str | None = None,
        parent_id: str | None = None,
    ) -> BlockEvent:
        """Append one timeline event; the small API for agents in other processes.

        ``block_id`` defaults to a new id: pass the returned event's
        ``block_id`` to later ``delta``/``patch`` calls of the same block.
        """
        event = BlockEvent(
            block_id=block_id or f"blk_{uuid.uuid4().hex[:16]}",
            kind=BlockKind(kind),
            op=BlockOp(op),
            data=data,
            session_id=session_id,
            invocation_id=invocation_id,
            ts_ms=now_ms(),
            parent_id=parent_id,
        )
        stored = await self.append_blocks([event])
        return stored[0]

    async def register_run(
        self,
        *,
        session_id: str,
        invocation_id: str,
        agent: str | None = None,
        prompt: str | None = None,
        external: bool = True,
        workspace: str | None = None,
    ) -> bool:
        """Declare a run (and its session) before its first block or request, so the window lists it.

        Returns False when the run already existed: then only a prompt or workspace it lacked is filled in (a host
        may tell them after the run was first seen).
        """

        def work(tx: StoreTx) -> bool:
            created = tx.runs.ensure_with_session(
                invocation_id, session_id, agent=agent, workspace=workspace, prompt=prompt, external=external
            )
            if not created:
                tx.runs.fill_in(invocation_id, session_id, prompt=prompt, workspace=workspace)
            return created

        return await self.write(work)
