"""The adapter core every outside agent goes through: one call in, one decided outcome out.

An integration turns what its host sends (a Claude Code hook event, an MCP ``tools/call``, a LangGraph
interrupt) into an :class:`ExternalCall`, hands it to :meth:`ReviewClient.review`, and turns the
:class:`Outcome` back into its host's answer. Requests are keyed by a stable ``hitl_id`` chosen by the
integration (an interrupt id, a tool-use id), so asking again after a crash finds the same request instead of
raising a duplicate: a decided one returns at once, a pending one is waited on.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reviewer_app.domain.decisions import Decision, DecisionKind
from reviewer_app.domain.hitl import HITLConflict, HITLRecord, HITLStatus, HITLType, shown_arguments
from reviewer_app.domain.timeline import BlockKind, BlockOp
from reviewer_app.hitl import SQLHITLBackend

ANSWERED_ELSEWHERE = "answered elsewhere"
"""The cancel reason recorded when the host settled the call itself (its own prompt, Esc, a time-out)."""


def stable_id(*parts: str) -> str:
    """A request id derived from the host's own ids, so the same call always maps to the same request."""
    return "ext_" + uuid.uuid5(uuid.NAMESPACE_URL, "\x1f".join(parts)).hex


@dataclass(frozen=True, slots=True)
class ExternalCall:
    """One call an outside agent wants to make, as Reviewer will show and record it."""

    hitl_id: str
    agent: str
    session_id: str
    invocation_id: str
    tool_name: str | None
    arguments: Any
    hitl_type: str = HITLType.TOOL_APPROVAL.value
    tool_call_id: str | None = None
    description: str | None = None
    schema: dict[str, Any] | None = None
    allowed_decisions: tuple[DecisionKind, ...] | None = None
    """None: every decision the request type admits. Otherwise the window and CLI offer only these."""
    title: str | None = None
    """The run's human title (its first prompt), shown instead of ids."""
    cwd: str | None = None
    expires_at: int | None = None
    extra_data: Mapping[str, Any] = field(default_factory=dict)
    """More keys of the request's ``data`` (a question's options, MCP annotations, a transcript path)."""
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def request_data(self) -> dict[str, Any]:
        data: dict[str, Any] = dict(self.extra_data)
        if self.hitl_type == HITLType.ASK_USER.value and isinstance(self.arguments, dict):
            data.update(self.arguments)
        else:
            data["arguments"] = self.arguments
        if self.description:
            data["description"] = self.description
        if self.schema is not None:
            data["schema"] = self.schema
        if self.allowed_decisions is not None:
            data["allowed_decisions"] = [kind.value for kind in self.allowed_decisions]
        if self.cwd:
            data["cwd"] = self.cwd
        return data

    def request_metadata(self) -> dict[str, Any]:
        return {**self.metadata, "agent": self.agent, "external": True}


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a call was settled, read back from the committed record."""

    record: HITLRecord
    kind: DecisionKind
    arguments: Any
    """What runs if :attr:`runs_tool`: the shown arguments, or the reviewer's edit."""
    message: str | None
    reviewer: str | None

    @property
    def runs_tool(self) -> bool:
        return self.kind.runs_tool

    @property
    def hitl_id(self) -> str:
        return str(self.record["hitl_id"])

    def text_for_model(self) -> str:
        """What the agent's model should read when the call does not run (or the answer, for a question)."""
        if self.kind is DecisionKind.STEER:
            return f"Reviewer guidance: {self.message or ''}".strip()
        if self.kind is DecisionKind.RESPOND:
            return self.message or ""
        if self.kind is DecisionKind.REJECT:
            return f"rejected by reviewer: {self.message}" if self.message else "rejected by reviewer"
        if self.kind is DecisionKind.EXPIRE or self.record.get("status") == HITLStatus.EXPIRED.value:
            return "no reviewer decided in time; the call was not run"
        if self.kind is DecisionKind.CANCEL:
            return "the request was cancelled; the call was not run"
        return ""

    @classmethod
    def from_record(cls, record: HITLRecord) -> Outcome:
        status = record.get("status")
        response = record.get("user_response")
        if status == HITLStatus.CANCELLED.value or (response is None and status != HITLStatus.PENDING.value):
            kind = DecisionKind.EXPIRE if status == HITLStatus.EXPIRED.value else DecisionKind.CANCEL
            return cls(record, kind, None, None, None)
        decision = Decision.from_user_response(response)
        kind = decision.kind
        if status == HITLStatus.EXPIRED.value and kind.runs_tool is False:
            kind = DecisionKind.REJECT if kind is DecisionKind.REJECT else kind
        shown = shown_arguments(record)
        arguments = decision.edited_args if kind is DecisionKind.EDIT and decision.edited_args is not None else shown
        return cls(record, kind, arguments, decision.message, decision.reviewer)


class ReviewClient:
    """Asks Reviewer about outside calls on one backend; one instance per integration process."""

    def __init__(self, backend: SQLHITLBackend, *, agent: str) -> None:
        self.backend = backend
        self.agent = agent

    async def register_run(self, *, session_id: str, invocation_id: str, title: str | None = None) -> None:
        """Show the run (and its session) on the runs board before its first request."""
        await self.backend.register_run(
            session_id=session_id, invocation_id=invocation_id, agent=self.agent, prompt=title, external=True
        )

    async def submit(self, call: ExternalCall) -> HITLRecord:
        """Create the request unless it exists already; returns the stored record either way."""
        existing = await self.backend.get(call.hitl_id)
        if existing is not None:
            return existing
        await self.register_run(session_id=call.session_id, invocation_id=call.invocation_id, title=call.title)
        try:
            await self.backend.create(
                hitl_id=call.hitl_id,
                hitl_type=call.hitl_type,
                session_id=call.session_id,
                invocation_id=call.invocation_id,
                data=call.request_data(),
                metadata=call.request_metadata(),
                tool_name=call.tool_name,
                tool_call_id=call.tool_call_id,
                expires_at=call.expires_at,
            )
        except HITLConflict:
            pass  # created by another process between the look-up and the insert: same call, same request
        record = await self.backend.get(call.hitl_id)
        assert record is not None
        return record

    async def wait(self, hitl_id: str, timeout: float | None = None) -> Outcome:
        """The outcome once decided by anyone; :class:`TimeoutError` after ``timeout`` seconds."""
        return Outcome.from_record(await self.backend.wait_for_response(hitl_id, timeout=timeout))

    async def review(self, call: ExternalCall, *, timeout: float | None = None) -> Outcome:
        """Submit ``call`` (or find it) and wait for its decision."""
        record = await self.submit(call)
        if record["status"] != HITLStatus.PENDING.value:
            return Outcome.from_record(record)
        return await self.wait(call.hitl_id, timeout=timeout)

    async def abandon(self, hitl_id: str, reason: str = ANSWERED_ELSEWHERE) -> bool:
        """Take a still-pending request out of the inbox because its host settled the call itself.

        Returns False when it was already decided (that decision stands).
        """
        try:
            await self.backend.cancel(hitl_id, reason=reason, by=f"system:{self.agent}")
        except HITLConflict:
            return False
        return True

    async def narrate(
        self,
        call_or_ids: ExternalCall | tuple[str, str],
        kind: BlockKind | str,
        data: dict[str, Any],
        *,
        block_id: str | None = None,
        op: BlockOp | str = BlockOp.APPLY,
    ) -> None:
        """Append one block to the run's timeline (text, a tool call, its result)."""
        session_id, invocation_id = (
            (call_or_ids.session_id, call_or_ids.invocation_id)
            if isinstance(call_or_ids, ExternalCall)
            else call_or_ids
        )
        await self.backend.emit_block(
            session_id=session_id, invocation_id=invocation_id, kind=kind, data=data, block_id=block_id, op=op
        )


def allowed(kinds: Iterable[str]) -> tuple[DecisionKind, ...]:
    """Parse a host's list of allowed decision names into kinds (unknown names are ignored, never widened)."""
    result = []
    for name in kinds:
        try:
            result.append(DecisionKind(name))
        except ValueError:
            continue
    return tuple(result)
