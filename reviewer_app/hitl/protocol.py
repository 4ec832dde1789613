"""The aury-agent ``HITLBackend`` protocol's own writes and wait: create a request, cancel it, wait for its decision.

``respond`` is the protocol's too, but it records a decision, so it lives in the decision gate
(:mod:`reviewer_app.hitl.gate`); ``get`` and the pending listings are plain reads (:mod:`reviewer_app.hitl.reads`).
"""

from __future__ import annotations

import functools
from typing import Any

from reviewer_app.domain.decisions import DecisionKind
from reviewer_app.domain.hitl import HITLNotFound, HITLRecord, HITLStatus
from reviewer_app.domain.limits import check_request
from reviewer_app.domain.records import NewRequest
from reviewer_app.hitl.reads import StoreReads
from reviewer_app.hitl.signed import SignedDecisions
from reviewer_app.hitl.waiting import SharedDecidedLookup


class ProtocolMethods(StoreReads, SignedDecisions):
    """Requests created, cancelled and waited on."""

    async def create(
        self,
        *,
        hitl_id: str,
        hitl_type: str,
        session_id: str,
        invocation_id: str,
        data: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        block_id: str | None = None,
        resume_mode: str = "response",
        tool_state: dict[str, Any] | None = None,
        checkpoint_id: str | None = None,
        tool_name: str | None = None,
        tool_call_id: str | None = None,
        node_id: str | None = None,
        expires_at: int | None = None,
    ) -> None:
        """Create a pending request. An existing ``hitl_id`` raises :class:`HITLConflict`.

        Data that could not be stored and shown raises :class:`RequestRejected` naming the limit.
        """
        check_request(locals())  # every argument: identifiers, names, data, metadata, tool_state
        request = NewRequest(
            hitl_id=hitl_id,
            hitl_type=hitl_type,
            session_id=session_id,
            invocation_id=invocation_id,
            data={} if data is None else data,
            metadata={} if metadata is None else metadata,
            block_id=block_id,
            resume_mode=resume_mode,
            tool_state=tool_state,
            checkpoint_id=checkpoint_id,
            tool_name=tool_name,
            tool_call_id=tool_call_id,
            node_id=node_id,
            expires_at=expires_at,
            external=bool((metadata or {}).get("external", False)),
        )
        await self.write(lambda tx: tx.requests.create(request))

    async def cancel(self, hitl_id: str, *, reason: str | None = None, by: str | None = None) -> None:
        """Cancel a pending request (compare-and-set).

        As in aury-agent's backend, ``user_response`` stays ``None``; who cancelled (``by``, default this
        backend's reviewer) is kept in ``decided_by`` and the audit row, with ``reason`` as its message.
        """
        who = by or self.reviewer
        await self.write(
            lambda tx: tx.requests.decide(
                hitl_id,
                None,
                status=HITLStatus.CANCELLED,
                reviewer=who,
                decision=DecisionKind.CANCEL.value,
                message=reason,
            )
        )

    async def wait_for_response(self, hitl_id: str, timeout: float | None = None) -> HITLRecord:
        """Return the record once it is no longer pending, whichever process decided it.

        Raises :class:`HITLNotFound` for an unknown id, :class:`TimeoutError` when ``timeout`` seconds pass first,
        and :class:`DecisionNotOnRecord` when the decided record is not what its audit row signed.
        """
        record = await self.run_lookup(self.store.requests.get, hitl_id)  # not behind this process's writes
        if record is None:
            raise HITLNotFound(hitl_id)
        if record["status"] != HITLStatus.PENDING.value:
            return await self.signed(record)
        decided = await self._decided_lookups.wait(hitl_id, timeout)  # signed by then
        if decided is None:
            raise TimeoutError(f"no decision on {hitl_id!r} within {timeout} s")
        return decided

    @functools.cached_property
    def _decided_lookups(self) -> SharedDecidedLookup:
        """The process's one look-up for its waiting agents, made on first use."""
        return SharedDecidedLookup(self)

    def close(self) -> None:
        if "_decided_lookups" in self.__dict__:  # only a backend that had waiters has a look-up to stop
            self._decided_lookups.stop()
        super().close()
