"""Requests whose hook process is gone: withdrawn as "answered elsewhere", never decided afterwards.

A hook that answered its host without a decision (a fallback, a time-out it could not record, a kill) leaves
nobody to receive one: a decision recorded now would contradict what the agent was told. Such a request is
settled (cancelled, by the agent's system identity) by a sweep, and by the decision gate itself when a reviewer
tries to decide it, which then refuses the decision.
"""

from __future__ import annotations

import dataclasses

from reviewer_app.domain.decisions import DecisionKind
from reviewer_app.domain.hitl import HITLConflict, HITLRecord, HITLStatus
from reviewer_app.domain.hook_lease import ANSWERED_ELSEWHERE, abandoned_by_hook, answered_elsewhere
from reviewer_app.hitl.core import BackendCore
from reviewer_app.persistence.store import StoreTx


def settle_if_abandoned(tx: StoreTx, record: HITLRecord) -> HITLRecord | None:
    """In the caller's transaction: cancel the pending ``record`` as answered elsewhere when its hook is gone."""
    metadata = record.get("metadata")
    why = abandoned_by_hook(metadata)
    if why is None:
        return None
    return tx.requests.decide(
        record["hitl_id"],
        None,
        status=HITLStatus.CANCELLED,
        reviewer=withdrawn_by(record),
        decision=DecisionKind.CANCEL.value,
        message=answered_elsewhere(why),
    )


@dataclasses.dataclass(frozen=True, slots=True)
class AbandonedRequest:
    """What a decision's transaction returns when it found the request's hook gone and settled it instead."""

    record: HITLRecord


def refuse_if_abandoned(result: HITLRecord | AbandonedRequest, attempted: str) -> HITLRecord:
    """After the commit: the decided record, or the refusal of a decision whose request's hook had answered."""
    if not isinstance(result, AbandonedRequest):
        return result
    conflict = HITLConflict(
        f"request {result.record['hitl_id']!r} was {ANSWERED_ELSEWHERE}: its hook already answered the agent "
        f"without a decision and is gone, so a decision now would contradict what the agent was told; "
        f"cannot {attempted} it",
        result.record,
    )
    conflict._decided_by = withdrawn_by(result.record)
    raise conflict


def withdrawn_by(record: HITLRecord) -> str:
    """Who a withdrawal for a gone hook is recorded as: the agent's system identity, as the watchdog's."""
    metadata = record.get("metadata")
    agent = metadata.get("agent") if isinstance(metadata, dict) else None
    return f"system:{agent if isinstance(agent, str) and agent else 'hook'}"


class AbandonedHookSweep(BackendCore):
    """The sweep that settles the requests of gone hooks."""

    async def settle_abandoned_hooks(self) -> list[HITLRecord]:
        """Settle "answered elsewhere" every pending request whose hook process on this host is gone.

        A hook that answered its host without a decision (a fallback, a time-out it could not record, a kill)
        leaves nobody to receive one; its watchdog normally withdraws the request, and this sweep — run by the
        window's and workers' supervision, the CLI and each hook — makes sure of it when the watchdog died too.
        """
        candidates = [
            hitl_id
            for hitl_id, metadata in await self.run(self.store.requests.pending_external_metadata)
            if abandoned_by_hook(metadata) is not None
        ]
        settled = []
        for candidate in candidates:

            def work(tx: StoreTx, hitl_id: str = candidate) -> HITLRecord | None:
                current = tx.requests.get(hitl_id)
                if current is None or current["status"] != HITLStatus.PENDING.value:
                    return None
                return settle_if_abandoned(tx, current)

            done = await self.write(work)
            if done is not None:
                settled.append(done)
        return settled
