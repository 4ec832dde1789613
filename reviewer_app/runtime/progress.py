"""Readable progress lines for the headless commands, read from the timeline in the database.

It follows the database rather than the runtime, so ``reviewer-app run`` shows decisions made by other
processes the same way as its own steps.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from reviewer_app.domain.hitl import summarize_arguments
from reviewer_app.domain.sanitize import terminal_safe
from reviewer_app.domain.timeline import BlockEvent, BlockKind, BlockOp
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.runtime.watcher import wait_for_change


def _one_line(text: Any, limit: int = 160) -> str:
    value = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    value = " ".join(value.split())
    return value if len(value) <= limit else value[: limit - 3] + "..."


class ProgressPrinter:
    """Turns block events into one line each; ``invocation_id`` limits it to one run."""

    def __init__(
        self,
        backend: SQLHITLBackend,
        write: Callable[[str], Any],
        *,
        invocation_id: str | None = None,
        after_seq: int = 0,
        decide_hint: str = "reviewer-app decide",
    ) -> None:
        self.backend = backend
        self.write = write
        self.invocation_id = invocation_id
        self.seq = after_seq
        self.decide_hint = decide_hint
        self._tool_names: dict[str, str] = {}
        self._texts_seen: set[str] = set()

    async def follow(self, stop: asyncio.Event | None = None) -> None:
        """Print new events as they are committed, until ``stop`` is set (or the task is cancelled)."""
        feed = self.backend.feed
        while stop is None or not stop.is_set():
            token = feed.token()
            await self.poll()
            await wait_for_change(feed, token, 0.25 if stop is not None else 1.0)

    async def poll(self) -> None:
        if self.invocation_id is not None:
            events = await self.backend.events(self.invocation_id, after_seq=self.seq)
        else:
            events = await self.backend.events_since(self.seq)
        for line in self.lines(events):
            self.write(terminal_safe(line) + "\n")  # model text and arguments may carry escape sequences

    def lines(self, events: list[BlockEvent]) -> list[str]:
        """One line per step; streamed text of a block is gathered into one line per batch."""
        out: list[str] = []
        texts: dict[str, tuple[BlockEvent, str]] = {}

        def flush() -> None:
            for block_id, (first, text) in texts.items():
                label = "thinking" if first.kind is BlockKind.THINKING else "assistant"
                more = "... " if block_id in self._texts_seen else ""
                self._texts_seen.add(block_id)
                out.append(f"{self._prefix(first)}{label}: {more}{_one_line(text, 240)}")
            texts.clear()

        for event in events:
            self.seq = max(self.seq, event.seq)
            if event.kind in (BlockKind.TEXT, BlockKind.THINKING):
                text = event.data.get("text")
                if isinstance(text, str) and text:
                    first, so_far = texts.get(event.block_id, (event, ""))
                    texts[event.block_id] = (first, so_far + text)
                continue
            flush()
            line = self.describe(event)
            if line:
                out.append(line)
        flush()
        return out

    def _prefix(self, event: BlockEvent) -> str:
        return f"[{event.invocation_id}] " if self.invocation_id is None else ""

    def describe(self, event: BlockEvent) -> str | None:
        """The line for one non-text event (text and thinking are gathered by :meth:`lines`)."""
        prefix = self._prefix(event)
        data = event.data
        if event.kind in (BlockKind.TEXT, BlockKind.THINKING):
            text = data.get("text")
            label = "thinking" if event.kind is BlockKind.THINKING else "assistant"
            return f"{prefix}{label}: {_one_line(text)}" if text else None
        if event.kind is BlockKind.TOOL_USE:
            return prefix + self._tool_line(event)
        if event.kind is BlockKind.HITL:
            return prefix + self._hitl_line(event)
        if event.kind is BlockKind.ERROR:
            return f"{prefix}error: {_one_line(data.get('message', data))}"
        if event.kind is BlockKind.END:
            state = data.get("state", "?")
            extra = f": {_one_line(data['error'])}" if data.get("error") else ""
            active = f" (active {data['active_ms']} ms)" if "active_ms" in data else ""
            return f"{prefix}run {state}{active}{extra}"
        return None

    def _tool_line(self, event: BlockEvent) -> str:
        data = event.data
        if event.op is BlockOp.APPLY:
            name = str(data.get("name", "?"))
            self._tool_names[event.block_id] = name
            gate = ""
            if data.get("gated"):
                gate = " (asks the operator)" if name == "ask_user" else " (needs approval)"
            return f"tool call {name}: {summarize_arguments(data.get('arguments', {}))}{gate}"
        name = self._tool_names.get(event.block_id, "tool")
        status = data.get("status")
        if status == "running":
            edited = " with edited arguments" if data.get("edited_arguments") else ""
            return f"running {name}{edited}"
        if status in ("success", "error"):
            took = f" in {data['duration_ms']} ms" if data.get("duration_ms") else ""
            outcome = data.get("outcome") or ("ok" if status == "success" else "error")
            return f"{name} {outcome}{took}: {_one_line(data.get('result', ''))}"
        if data.get("interrupted"):
            return f"{name} was interrupted by a crash"
        return f"{name}: {_one_line(data)}"

    def _hitl_line(self, event: BlockEvent) -> str:
        data = event.data
        if event.op is BlockOp.APPLY:
            hitl_id = data.get("hitl_id", "?")
            if data.get("hitl_type") == "ask_user":
                return (
                    f"question {hitl_id}: {_one_line(data.get('question', ''))}  "
                    f"-> {self.decide_hint} {hitl_id} respond --message 'answer'"
                )
            return (
                f"approval needed {hitl_id} for {data.get('tool_name')}  "
                f"-> {self.decide_hint} {hitl_id} approve|reject|steer|edit"
            )
        if data.get("status") == "decided":
            who = f" by {data['reviewer']}" if data.get("reviewer") else ""
            expired = " (expired)" if data.get("expired") else ""
            message = f": {_one_line(data['message'], 100)}" if data.get("message") else ""
            return f"decision {data.get('decision')}{who}{expired}{message}"
        return f"request update: {_one_line(data)}"
