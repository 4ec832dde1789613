"""Block events (aury-agent's model) and the pure fold that turns them into a timeline."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class BlockKind(StrEnum):
    TEXT = "text"
    THINKING = "thinking"
    TOOL_USE = "tool_use"
    HITL = "hitl"
    ERROR = "error"
    END = "end"


class BlockOp(StrEnum):
    """``apply`` sets a block's data, ``delta`` appends to its text fields, ``patch`` merges keys."""

    APPLY = "apply"
    DELTA = "delta"
    PATCH = "patch"


class ToolStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCESS = "success"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class BlockEvent:
    """One append-only timeline event. ``seq`` is assigned by the store (0 before)."""

    block_id: str
    kind: BlockKind
    op: BlockOp
    data: dict[str, Any]
    session_id: str
    invocation_id: str
    ts_ms: int
    parent_id: str | None = None
    seq: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "block_id": self.block_id,
            "parent_id": self.parent_id,
            "kind": self.kind.value,
            "op": self.op.value,
            "data": self.data,
            "ts_ms": self.ts_ms,
            "session_id": self.session_id,
            "invocation_id": self.invocation_id,
        }


@dataclass(slots=True)
class Block:
    """A timeline block as it stands after every event so far."""

    block_id: str
    kind: BlockKind
    data: dict[str, Any]
    parent_id: str | None
    started_ms: int
    updated_ms: int
    last_seq: int
    children: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "block_id": self.block_id,
            "kind": self.kind.value,
            "parent_id": self.parent_id,
            "data": self.data,
            "started_ms": self.started_ms,
            "updated_ms": self.updated_ms,
            "last_seq": self.last_seq,
            "children": list(self.children),
        }


def apply_event(blocks: dict[str, Block], order: list[str], event: BlockEvent) -> Block:
    """Fold one event into ``blocks`` (in place); returns the block it touched.

    Unknown blocks receiving a delta or patch are created, so a timeline read
    from the middle (or after a lost ``apply``) still shows what it can.
    """
    block = blocks.get(event.block_id)
    if block is None:
        block = Block(
            block_id=event.block_id,
            kind=event.kind,
            data={},
            parent_id=event.parent_id,
            started_ms=event.ts_ms,
            updated_ms=event.ts_ms,
            last_seq=event.seq,
        )
        blocks[event.block_id] = block
        order.append(event.block_id)
        parent = blocks.get(event.parent_id) if event.parent_id else None
        if parent is not None:
            parent.children.append(event.block_id)
    if event.op is BlockOp.APPLY:
        block.data = copy.deepcopy(event.data)
    elif event.op is BlockOp.DELTA:
        for key, value in event.data.items():
            current = block.data.get(key)
            appendable = isinstance(value, str | list) and type(current) is type(value)
            if appendable:
                block.data[key] = current + value
            else:
                block.data[key] = copy.deepcopy(value)
    else:
        block.data.update(copy.deepcopy(event.data))
    block.updated_ms = max(block.updated_ms, event.ts_ms)
    block.last_seq = max(block.last_seq, event.seq)
    return block


def fold_events(events: Iterable[BlockEvent]) -> list[Block]:
    """The current timeline: blocks in order of first appearance, events applied by ``seq``."""
    blocks: dict[str, Block] = {}
    order: list[str] = []
    for event in sorted(events, key=lambda e: e.seq):
        apply_event(blocks, order, event)
    return [blocks[block_id] for block_id in order]


def waiting_spans(blocks: Iterable[Block]) -> list[tuple[int, int]]:
    """(start_ms, end_ms) of each wait for a human, from the hitl blocks."""
    spans = []
    for block in blocks:
        if block.kind is BlockKind.HITL:
            end = block.data.get("resolved_ms") or block.updated_ms
            spans.append((block.started_ms, int(end)))
    return spans
