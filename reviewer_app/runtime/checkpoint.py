"""A run's resumable state: the conversation plus the current turn's tool calls and their progress.

The checkpoint is what makes a decision resume the exact run that asked, exactly once. A call is
committed as ``running`` before its tool executes and ``done`` after, so a crash in between is
recognisable (the run becomes interrupted) instead of silently running the tool twice.

Stored append-only (``persistence/store/runs.py``): the conversation (OpenAI chat format) message by message,
each written once, and per commit only :meth:`Checkpoint.to_state` (pending calls, counters), which is small.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from reviewer_app.runtime.llm_clients import ModelTurn


class CallStatus(StrEnum):
    AWAITING_DECISION = "awaiting_decision"
    APPROVED = "approved"  # may run (decided, or not gated); not started yet
    RUNNING = "running"  # committed before the tool starts: found after a crash -> interrupted
    DONE = "done"
    REJECTED = "rejected"
    STEERED = "steered"
    ABORTED = "aborted"

    @property
    def finished(self) -> bool:
        return self in _FINISHED


_FINISHED = frozenset({CallStatus.DONE, CallStatus.REJECTED, CallStatus.STEERED, CallStatus.ABORTED})

GUIDANCE_PREFIX = "Reviewer guidance: "


@dataclass
class PendingCall:
    """One tool call of the current assistant turn and how far it got."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    status: CallStatus
    hitl_id: str | None = None
    hitl_type: str | None = None
    result: str | None = None
    ok: bool | None = None
    run_arguments: dict[str, Any] | None = None  # what runs: the reviewer's edit, else the original
    decision: str | None = None
    guidance: str | None = None
    # In memory only (never in the checkpoint): ``arguments`` passed the tool's schema in this process, at
    # the gate; a call loaded from a checkpoint is checked again when it runs.
    validated: bool = field(default=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "call_id": self.call_id,
            "name": self.name,
            "arguments": self.arguments,
            "status": self.status.value,
            "hitl_id": self.hitl_id,
        }
        for key in ("hitl_type", "result", "ok", "run_arguments", "decision", "guidance"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PendingCall:
        return cls(
            call_id=str(data["call_id"]),
            name=str(data["name"]),
            arguments=dict(data.get("arguments") or {}),
            status=CallStatus(data["status"]),
            hitl_id=data.get("hitl_id"),
            hitl_type=data.get("hitl_type"),
            result=data.get("result"),
            ok=data.get("ok"),
            run_arguments=data.get("run_arguments"),
            decision=data.get("decision"),
            guidance=data.get("guidance"),
        )


@dataclass
class Checkpoint:
    """The conversation plus the unfinished tool calls of its last assistant turn."""

    agent: str
    messages: list[dict[str, Any]]
    pending: list[PendingCall] = field(default_factory=list)
    turn: int = 0  # model calls made by this invocation
    active_ms: int = 0  # wall time spent running (not waiting for a reviewer)
    prompt_index: int = 0  # index of this invocation's prompt in ``messages`` (retry restarts from there)
    seq: int = 0  # checkpoint counter: ids sort in write order even within one millisecond
    script: Any = None  # a scripted model's turns given at start (``--script``), so any process can resume

    def to_json(self) -> dict[str, Any]:
        return {**self.to_state(), "messages": self.messages}

    def to_state(self) -> dict[str, Any]:
        """Everything but the conversation: what one commit writes besides the conversation's new messages."""
        data: dict[str, Any] = {
            "agent": self.agent,
            "pending": [p.to_json() for p in self.pending],
            "turn": self.turn,
            "active_ms": self.active_ms,
            "prompt_index": self.prompt_index,
            "seq": self.seq,
        }
        if self.script is not None:
            data["script"] = self.script
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Checkpoint:
        return cls(
            agent=str(data["agent"]),
            messages=list(data.get("messages") or []),
            pending=[PendingCall.from_json(p) for p in data.get("pending") or []],
            turn=int(data.get("turn", 0)),
            active_ms=int(data.get("active_ms", 0)),
            prompt_index=int(data.get("prompt_index", 0)),
            seq=int(data.get("seq", 0)),
            script=data.get("script"),
        )

    def next_id(self, invocation_id: str) -> str:
        """A new checkpoint id; zero-padded so the store's tie-break on id keeps write order."""
        self.seq += 1
        return f"{invocation_id}:ckpt:{self.seq:06d}"

    def running_calls(self) -> list[PendingCall]:
        return [p for p in self.pending if p.status is CallStatus.RUNNING]

    def add_assistant_turn(self, turn: ModelTurn) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": turn.text}
        if turn.thinking:
            message["thinking"] = turn.thinking
        if turn.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)},
                }
                for call in turn.tool_calls
            ]
        self.messages.append(message)

    def close_turn(self) -> None:
        """Every call is finished: their results become tool messages, then any reviewer guidance."""
        guidance = []
        for call in self.pending:
            self.messages.append({"role": "tool", "tool_call_id": call.call_id, "content": call.result or ""})
            if call.guidance:
                guidance.append(call.guidance)
        for text in guidance:
            self.messages.append({"role": "user", "content": GUIDANCE_PREFIX + text})
        self.pending = []

    def abort_unfinished(self, reason: str) -> None:
        """Give every unfinished call an ``<aborted: reason>`` result (power-loop's abort_pending)."""
        for call in self.pending:
            if not call.status.finished:
                call.status = CallStatus.ABORTED
                call.result = f"<aborted: {reason}>"
                call.ok = False

    def conversation_for_follow_up(self, reason: str) -> list[dict[str, Any]]:
        """The messages a new invocation in this session continues from (valid even if this run stopped mid-turn)."""
        copy = Checkpoint.from_json(json.loads(json.dumps(self.to_json())))
        if copy.pending:
            copy.abort_unfinished(reason)
            copy.close_turn()
        return copy.messages
