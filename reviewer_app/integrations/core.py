"""The adapter core every outside agent goes through: one call in, one decided outcome out.

An integration turns what its host sends (a Claude Code hook event, an MCP ``tools/call``, a LangGraph
interrupt) into an :class:`ExternalCall`, hands it to :meth:`ReviewClient.review`, and turns the
:class:`Outcome` back into its host's answer. Requests are keyed by a stable ``hitl_id`` chosen by the
integration (an interrupt id, a tool-use id), so asking again after a crash finds the same request instead of
raising a duplicate: a decided one returns at once, a pending one is waited on. A decision belongs to the
arguments it was made on: the same id with other arguments (a host or model endpoint repeating a call id) is a
new request under an id derived from both, never the old decision (:func:`rebound_call`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from reviewer_app.domain.decisions import DecisionKind, args_digest
from reviewer_app.domain.hitl import (
    DecisionNotOnRecord,
    HITLConflict,
    HITLRecord,
    HITLStatus,
    HITLType,
    shown_arguments,
)
from reviewer_app.domain.hook_lease import ANSWERED_ELSEWHERE
from reviewer_app.domain.limits import check_request
from reviewer_app.domain.outcome import Outcome
from reviewer_app.domain.runs import InvalidTransition, RunState
from reviewer_app.domain.timeline import BlockKind, BlockOp
from reviewer_app.hitl import RequestQuery, SQLHITLBackend
from reviewer_app.integrations.rules import settle_by_rules, settle_by_waiver

TOOL_DECISIONS = (
    DecisionKind.APPROVE,
    DecisionKind.APPROVE_FOR_SESSION,
    DecisionKind.EDIT,
    DecisionKind.REJECT,
    DecisionKind.STEER,
)
"""Every decision on a tool call but "answer instead of the tool", which most hosts cannot carry."""

Database = SQLHITLBackend | str | os.PathLike[str]
"""Where an integration finds Reviewer: an open backend, or a database path or URL it opens itself."""

REPEATED_CALL_ID = "a repeated call id came with different arguments"
"""The timeline's words for a call whose id an earlier, different call already used."""

__all__ = ["ANSWERED_ELSEWHERE", "ExternalCall", "Outcome", "ReviewClient", "open_client", "stable_id"]


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
    block_id: str | None = None
    """The timeline block (the tool call) the request belongs to."""
    tool_state: Mapping[str, Any] | None = None
    """What the host needs to continue after a restart (a serialised run state), stored with the request."""

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

    def request_columns(self) -> dict[str, Any]:
        """What the call's request row holds, as keywords for ``SQLHITLBackend.create`` (and ``NewRequest``)."""
        return {
            "hitl_id": self.hitl_id,
            "hitl_type": self.hitl_type,
            "session_id": self.session_id,
            "invocation_id": self.invocation_id,
            "data": self.request_data(),
            "metadata": self.request_metadata(),
            "block_id": self.block_id,
            "tool_state": dict(self.tool_state) if self.tool_state is not None else None,
            "tool_name": self.tool_name,
            "tool_call_id": self.tool_call_id,
            "expires_at": self.expires_at,
        }

    def request_block(self) -> dict[str, Any]:
        """The data of the request's timeline block, as it is asked (still pending)."""
        return {
            "hitl_id": self.hitl_id,
            "hitl_type": self.hitl_type,
            "tool_name": self.tool_name,
            "call_id": self.tool_call_id,
            "arguments": self.arguments,
            "status": "pending",
        }

    def shown_digest(self) -> str:
        """The SHA-256 of the arguments a reviewer will see (and an approval names) for this call."""
        return args_digest(shown_arguments({"hitl_type": self.hitl_type, "data": self.request_data()}))


def rebound_call(call: ExternalCall, existing: HITLRecord) -> ExternalCall | None:
    """None when ``existing`` (the request stored under ``call.hitl_id``) was asked for this very call: the same
    tool and byte-identical shown arguments, so its decision (or its wait) is this call's. Otherwise the call under
    an id of its own, derived from the old id and its argument hash: asking again after a crash finds it."""
    digest = call.shown_digest()
    if existing.get("tool_name") == call.tool_name and args_digest(shown_arguments(existing)) == digest:
        return None
    return dataclasses.replace(call, hitl_id=stable_id(call.hitl_id, digest))


class ReviewClient:
    """Asks Reviewer about outside calls on one backend; one instance per integration process."""

    def __init__(self, backend: SQLHITLBackend, *, agent: str) -> None:
        self.backend = backend
        self.agent = agent

    async def register_run(
        self, *, session_id: str, invocation_id: str, title: str | None = None, workspace: str | None = None
    ) -> None:
        """Show the run (and its session) on the runs board before its first request; a title or workspace
        it was first seen without is filled in."""
        await self.backend.register_run(
            session_id=session_id,
            invocation_id=invocation_id,
            agent=self.agent,
            prompt=title,
            external=True,
            workspace=workspace,
        )

    async def submit(self, call: ExternalCall) -> HITLRecord:
        """Create the request unless it exists already; returns the stored record either way.

        A persistent allow or deny rule settles a new call here (:func:`.rules.settle_by_rules`): the record
        returned is then already decided by ``rule:<id>``. Else an approve-for-session waiver of the session that
        covers it approves it, by ``session-rule:<id>`` (:meth:`_settle_by_waiver`). A stored request is
        returned only for the same call (:func:`rebound_call`); its ``hitl_id`` is the one to wait on.
        """
        call, existing = await self._stored_for(call)
        if existing is not None:
            return existing
        settled = await settle_by_rules(self.backend, call)  # a persistent allow/deny rule decides, on the record
        if settled is not None:
            return settled
        waived = await self._settle_by_waiver(call)
        if waived is not None:
            return waived
        await self.register_run(session_id=call.session_id, invocation_id=call.invocation_id, title=call.title)
        try:
            await self.backend.create(**call.request_columns())
        except HITLConflict:
            pass  # created by another process between the look-up and the insert: same call, same request
        record = await self.backend.get(call.hitl_id)
        assert record is not None
        if rebound_call(call, record) is not None:  # another process stored another call under this id meanwhile
            raise HITLConflict(f"request {call.hitl_id} holds other arguments than the call it is named for")
        return record

    async def _settle_by_waiver(self, call: ExternalCall) -> HITLRecord | None:
        """A new call the session's approve-for-session waiver covers, settled on the record (else None).

        Its own step of :meth:`submit` so every adapter, hook and proxy honours waivers as the runtime does.
        """
        return await settle_by_waiver(self.backend, call)

    async def _stored_for(self, call: ExternalCall) -> tuple[ExternalCall, HITLRecord | None]:
        """The call as it will be asked (under its own id when its id was used by another call) and the request
        already stored for it, if any: checked at the door like a new one."""
        existing = await self.backend.get(call.hitl_id)
        if existing is not None:
            rebound = rebound_call(call, existing)
            if rebound is not None:
                await self.register_run(session_id=call.session_id, invocation_id=call.invocation_id, title=call.title)
                await self.narrate(
                    call,
                    BlockKind.ERROR,
                    {
                        "message": f"{REPEATED_CALL_ID}: asked again as a new request",
                        "hitl_id": call.hitl_id,
                        "new_hitl_id": rebound.hitl_id,
                        "tool_name": call.tool_name,
                    },
                )
                call, existing = rebound, await self.backend.get(rebound.hitl_id)
                if existing is not None and rebound_call(call, existing) is not None:
                    raise HITLConflict(f"request {call.hitl_id} holds other arguments than the call it is named for")
        if existing is not None:
            check_request(existing)
        return call, existing

    async def wait(self, hitl_id: str, timeout: float | None = None) -> Outcome:
        """The outcome once decided by anyone; :class:`TimeoutError` after ``timeout`` seconds.

        :class:`DecisionNotOnRecord` (also on the run's timeline) when the decided record is not what its audit
        row signed: the call must not run on it.
        """
        try:
            record = await self.backend.wait_for_response(hitl_id, timeout=timeout)
        except DecisionNotOnRecord as exc:
            await self._report_unsigned(hitl_id, exc)
            raise
        return Outcome.from_record(record)

    async def outcome_of(self, record: HITLRecord) -> Outcome:
        """The outcome of a decided ``record`` once checked against its audit row (see :meth:`wait`)."""
        try:
            return Outcome.from_record(await self.backend.signed(record))
        except DecisionNotOnRecord as exc:
            await self._report_unsigned(str(record["hitl_id"]), exc)
            raise

    async def _report_unsigned(self, hitl_id: str, error: DecisionNotOnRecord) -> None:
        record = await self.backend.get(hitl_id)
        if record is not None:
            ids = (str(record["session_id"]), str(record["invocation_id"]))
            await self.narrate(ids, BlockKind.ERROR, {"message": str(error), "hitl_id": hitl_id})

    async def review(self, call: ExternalCall, *, timeout: float | None = None) -> Outcome:
        """Submit ``call`` (or find it) and wait for its decision."""
        record = await self.submit(call)
        if record["status"] != HITLStatus.PENDING.value:
            return await self.outcome_of(record)
        return await self.wait(str(record["hitl_id"]), timeout=timeout)

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

    # -- what framework adapters share: batches, run states, the transcript, saved host state ----------
    async def review_batch(self, calls: Sequence[ExternalCall], *, timeout: float | None = None) -> list[Outcome]:
        """Submit every call of one pause (or find them), wait for all, and return outcomes in call order.

        Reviewers may decide them in any order; each outcome is matched to its call by ``hitl_id``. The run
        shows as waiting while any is pending, and each decision is written onto its timeline block.
        """
        if not calls:
            return []
        first = calls[0]
        await self.register_run(session_id=first.session_id, invocation_id=first.invocation_id, title=first.title)
        for call in calls:
            await self._narrate_request(call)
        known = [await self.backend.get(call.hitl_id) for call in calls]
        if any(record is None or record["status"] == HITLStatus.PENDING.value for record in known):
            await self.set_run_state(first.invocation_id, RunState.WAITING)
        # Each call goes through review() on its own, so whatever review() decides alone applies to batches too.
        waits = [asyncio.ensure_future(self.review(call, timeout=timeout)) for call in calls]
        try:
            outcomes = await asyncio.gather(*waits)
        except BaseException:  # a time-out or a cancel: stop the other waits too, and leave the requests pending
            for wait in waits:
                wait.cancel()
            await asyncio.gather(*waits, return_exceptions=True)
            raise
        for call, outcome in zip(calls, outcomes, strict=True):
            await self._narrate_outcome(call, outcome)
        await self.set_run_state(first.invocation_id, RunState.RUNNING)
        return list(outcomes)

    async def set_run_state(self, invocation_id: str, state: RunState, *, error: str | None = None) -> bool:
        """Move the run to ``state`` when that is a legal step from where it is; False when it was not."""
        try:
            await self.backend.write(lambda tx: tx.runs.set_state(invocation_id, state, error=error))
        except (InvalidTransition, KeyError):
            return False
        return True

    async def finish_run(
        self, session_id: str, invocation_id: str, state: RunState = RunState.DONE, *, error: str | None = None
    ) -> None:
        """Close the run: its ``end`` block (which also marks any saved host state as used up) and its state."""
        data: dict[str, Any] = {"state": state.value}
        if error:
            data["error"] = error
        await self.narrate((session_id, invocation_id), BlockKind.END, data, block_id=f"{invocation_id}:end")
        await self.set_run_state(invocation_id, state, error=error)

    async def narrate_transcript(self, session_id: str, invocation_id: str, entries: Iterable[TranscriptEntry]) -> int:
        """Write the host's conversation onto the run's timeline, skipping what an earlier call already wrote.

        Safe to call after every step and again after a restart: entries are keyed by the host's own ids.
        Returns how many events were appended.
        """
        written = {(event.block_id, event.op.value) for event in await self.backend.events(invocation_id)}
        events: list[tuple[str, BlockKind, BlockOp, dict[str, Any]]] = []
        for entry in entries:
            block_id = block_id_for(invocation_id, entry.key)
            if isinstance(entry, Said):
                if not entry.text.strip() or (block_id, BlockOp.APPLY.value) in written:
                    continue
                events.append((block_id, BlockKind.TEXT, BlockOp.APPLY, {"content": entry.text}))
            elif isinstance(entry, ToolCalled):
                if (block_id, BlockOp.APPLY.value) in written:
                    continue
                data = {"name": entry.name, "call_id": entry.key, "arguments": entry.arguments, "status": "pending"}
                events.append((block_id, BlockKind.TOOL_USE, BlockOp.APPLY, data))
            else:
                if (block_id, BlockOp.PATCH.value) in written:
                    continue
                status = "success" if entry.ok else "error"
                events.append((block_id, BlockKind.TOOL_USE, BlockOp.PATCH, {"status": status, "result": entry.result}))
            written.add((block_id, events[-1][2].value))
        for block_id, kind, op, data in events:
            await self.narrate((session_id, invocation_id), kind, data, block_id=block_id, op=op)
        return len(events)

    async def saved_batch(self, session_id: str, host: str) -> SavedBatch | None:
        """The newest pause of ``host`` in this session whose run has not finished since, with its saved state."""
        query = RequestQuery(statuses=tuple(status.value for status in HITLStatus), session_id=session_id)
        batches: dict[int, list[HITLRecord]] = {}
        for record in await self.backend.list_records(query):
            state = record.get("tool_state") or {}
            if state.get("host") == host and isinstance(state.get("round"), int):
                batches.setdefault(state["round"], []).append(record)
        if not batches:
            return None
        latest = max(batches)
        records = sorted(batches[latest], key=lambda r: int((r.get("tool_state") or {}).get("index", 0)))
        invocation_id = str(records[0]["invocation_id"])
        if any(event.kind is BlockKind.END for event in await self.backend.events(invocation_id)):
            return None
        head = records[0].get("tool_state") or {}
        return SavedBatch(invocation_id, latest, head.get("state"), records)

    async def start_paused_run(self, session_id: str, host: str, *, title: str | None) -> tuple[str, int]:
        """Register a new run of a host that saves its pauses; returns the run's id and its first pause's round."""
        round_ = await self.next_round(session_id, host)
        invocation_id = stable_id(host, session_id, "run", uuid.uuid4().hex)  # one per call: its own end
        await self.register_run(session_id=session_id, invocation_id=invocation_id, title=title)
        return invocation_id, round_

    async def paused_batch(self, session_id: str, host: str, state_type: type, framework: str) -> SavedBatch:
        """The session's pause to resume, whose saved state is a ``state_type``; :class:`LookupError` if none."""
        batch = await self.saved_batch(session_id, host)
        if batch is None or not isinstance(batch.state, state_type):
            raise LookupError(f"session {session_id!r} has no paused {framework} run to resume")
        return batch

    async def next_round(self, session_id: str, host: str) -> int:
        """The round number for this session's next saved pause (one more than any before)."""
        query = RequestQuery(statuses=tuple(status.value for status in HITLStatus), session_id=session_id)
        rounds = [-1]
        for record in await self.backend.list_records(query):
            state = record.get("tool_state") or {}
            if state.get("host") == host and isinstance(state.get("round"), int):
                rounds.append(state["round"])
        return max(rounds) + 1

    async def _narrate_request(self, call: ExternalCall) -> None:
        block_id = block_id_for(call.invocation_id, f"hitl:{call.hitl_id}")
        if any(event.block_id == block_id for event in await self.backend.events(call.invocation_id)):
            return
        await self.backend.emit_block(
            session_id=call.session_id,
            invocation_id=call.invocation_id,
            kind=BlockKind.HITL,
            data=call.request_block(),
            block_id=block_id,
            parent_id=call.block_id,
        )

    async def _narrate_outcome(self, call: ExternalCall, outcome: Outcome) -> None:
        patch: dict[str, Any] = {"status": "decided", "decision": outcome.kind.value, "reviewer": outcome.reviewer}
        if outcome.message:
            patch["message"] = outcome.message
        if outcome.kind is DecisionKind.EDIT:
            patch["edited_arguments"] = outcome.arguments
        block_id = block_id_for(call.invocation_id, f"hitl:{call.hitl_id}")
        await self.narrate(call, BlockKind.HITL, patch, block_id=block_id, op=BlockOp.PATCH)


@dataclass(frozen=True, slots=True)
class Said:
    """Text the agent wrote (an AI message)."""

    key: str
    text: str


@dataclass(frozen=True, slots=True)
class ToolCalled:
    """A tool call the agent's model made; ``key`` is the host's call id."""

    key: str
    name: str
    arguments: Any


@dataclass(frozen=True, slots=True)
class ToolReturned:
    """A tool call's result as the model will read it; ``key`` is the call id it answers."""

    key: str
    result: Any
    ok: bool = True


TranscriptEntry = Said | ToolCalled | ToolReturned


def block_id_for(invocation_id: str, key: str) -> str:
    """The timeline block of a host's message or tool call: the same one however often it is narrated."""
    return "blk_" + uuid.uuid5(uuid.NAMESPACE_URL, f"{invocation_id}\x1f{key}").hex[:24]


@dataclass(frozen=True, slots=True)
class SavedBatch:
    """One pause of a host whose state lives with its requests (``tool_state``), as found after a restart."""

    invocation_id: str
    round: int
    state: Any
    records: list[HITLRecord]
    """The pause's requests in the host's order."""


def new_session_id(host: str) -> str:
    """A fresh Reviewer session name for a host's run started without one."""
    return f"{host}-{uuid.uuid4().hex[:12]}"


def saved_state(host: str, round_: int, index: int, state: Any) -> dict[str, Any]:
    """The ``tool_state`` of request ``index`` of a pause: the host's state rides on the first one only."""
    saved: dict[str, Any] = {"host": host, "round": round_, "index": index}
    if index == 0:
        saved["state"] = state
    return saved


class LazyClient:
    """A :class:`ReviewClient` opened on first use, in the event loop of whoever uses it first.

    For hooks and middlewares a framework calls from its own loop: ``db`` is an open backend (borrowed) or a
    path or URL (opened then, and kept for the process's life).
    """

    def __init__(self, db: Database, *, agent: str) -> None:
        self.db = db
        self.agent = agent
        self._client: ReviewClient | None = None

    def get(self) -> ReviewClient:
        if self._client is None:
            backend = self.db if isinstance(self.db, SQLHITLBackend) else SQLHITLBackend(self.db)
            self._client = ReviewClient(backend, agent=self.agent)
        return self._client


@asynccontextmanager
async def open_client(db: Database, *, agent: str) -> AsyncIterator[ReviewClient]:
    """A client on ``db``: an open backend is borrowed, a path or URL is opened here and closed after."""
    if isinstance(db, SQLHITLBackend):
        yield ReviewClient(db, agent=agent)
        return
    backend = SQLHITLBackend(db)
    try:
        yield ReviewClient(backend, agent=agent)
    finally:
        await backend.aclose()


def allowed(kinds: Iterable[str]) -> tuple[DecisionKind, ...]:
    """Parse a host's list of allowed decision names into kinds (unknown names are ignored, never widened)."""
    result = []
    for name in kinds:
        try:
            result.append(DecisionKind(name))
        except ValueError:
            continue
    return tuple(result)
