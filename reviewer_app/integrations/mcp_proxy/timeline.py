"""The proxy session's timeline: tool-use and request blocks, written off the message path in batches.

The host's traffic never waits for the database: blocks go on a queue and one writer turns each wake-up's
blocks into one transaction. A failed write is logged and dropped; the timeline is a record, never a reason
to hold or lose a message.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from reviewer_app.domain.timeline import BlockEvent, BlockKind, BlockOp, ToolStatus
from reviewer_app.integrations.core import ReviewClient

log = logging.getLogger("reviewer_app.mcp_proxy")

RESULT_PREVIEW_CHARS = 4000


class ProxyTimeline:
    """Blocks of one proxy session's run; nothing is recorded without a Reviewer database (``client`` None)."""

    def __init__(
        self,
        client: ReviewClient | None,
        *,
        session_id: str,
        invocation_id: str,
        registered: Callable[[], Awaitable[None]],
    ) -> None:
        self.client = client
        self.session_id = session_id
        self.invocation_id = invocation_id
        self._registered = registered  # the run exists before its first block is written
        self._blocks: asyncio.Queue[BlockEvent] = asyncio.Queue()

    def block(self, block_id: str, kind: BlockKind, op: BlockOp, data: dict[str, Any]) -> None:
        if self.client is None:
            return
        event = BlockEvent(
            block_id=block_id,
            kind=kind,
            op=op,
            data=data,
            session_id=self.session_id,
            invocation_id=self.invocation_id,
            ts_ms=int(time.time() * 1000),
        )
        self._blocks.put_nowait(event)

    def call_finished(self, block_id: str, started: float, message: Mapping[str, Any]) -> None:
        """The upstream answered a tools/call: its status, duration and a short text of the result."""
        data: dict[str, Any] = {"duration_ms": int((time.monotonic() - started) * 1000)}
        outcome = message.get("result")
        if "error" in message or not isinstance(outcome, dict):
            data["status"] = ToolStatus.ERROR.value
            data["result"] = json.dumps(message.get("error"), ensure_ascii=False)[:RESULT_PREVIEW_CHARS]
        else:
            data["status"] = ToolStatus.ERROR.value if outcome.get("isError") is True else ToolStatus.SUCCESS.value
            data["result"] = _result_text(outcome)
        self.block(block_id, BlockKind.TOOL_USE, BlockOp.PATCH, data)

    async def write(self) -> None:
        """One writer, off the message path: blocks are batched into one transaction per wake-up."""
        while True:
            first = await self._blocks.get()
            if self.client is None:
                continue
            batch = [first]
            while not self._blocks.empty():
                batch.append(self._blocks.get_nowait())
            try:
                await self._registered()
                await self.client.backend.append_blocks(batch)
            except Exception as exc:  # the timeline is a record, never a reason to drop the host's traffic
                log.warning(f"mcp-proxy: timeline write failed: {exc}")

    async def flush(self) -> None:
        """Write what is still queued (the session is ending); best effort."""
        if self.client is not None and not self._blocks.empty():
            batch = []
            while not self._blocks.empty():
                batch.append(self._blocks.get_nowait())
            with contextlib.suppress(Exception):
                await self._registered()
                await self.client.backend.append_blocks(batch)


def _result_text(result: Mapping[str, Any]) -> str:
    """A short text form of a CallToolResult for the timeline."""
    parts = []
    content = result.get("content")
    for item in content if isinstance(content, list) else []:
        if isinstance(item, dict) and item.get("type") == "text":
            parts.append(str(item.get("text", "")))
        elif isinstance(item, dict):
            parts.append(f"[{item.get('type', 'content')}]")
    if not parts and "structuredContent" in result:
        parts.append(json.dumps(result["structuredContent"], ensure_ascii=False))
    return "\n".join(parts)[:RESULT_PREVIEW_CHARS]
