"""Signed decisions: a decided request is acted on only as its audit row signed it.

Someone with write access to the database could change a decided request afterwards (its edit, its message, the
arguments shown); the audit chain's row for the decision still says what the reviewer saw and chose. Readers that
are about to act on a decision (an agent waiting, the runtime resuming a run) check the record against that row.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from reviewer_app.domain.hitl import DecisionNotOnRecord, HITLRecord
from reviewer_app.hitl.core import BackendCore

log = logging.getLogger(__name__)


class SignedDecisions(BackendCore):
    """The audit-signature check of decided records."""

    async def unsigned_decisions(self, records: Iterable[HITLRecord]) -> dict[str, str]:
        """Of these records, the decided ones that are not what their audit rows signed: ``hitl_id`` → why."""
        return await self.run_lookup(self.store.audit.decision_problems, list(records))

    def signed_decided_among_now(self, hitl_ids: Sequence[str]) -> tuple[list[HITLRecord], dict[str, str]]:
        """The requests among ``hitl_ids`` that are no longer pending, and of those the ones their audit rows do not
        sign (``hitl_id`` → why), read on the calling thread and tried once: the requests with their audit rows in
        one statement, on a connection kept for look-ups (at 20 reviewers and 200 agents on one server each round
        trip showed in the slowest wake-ups). The PostgreSQL listener's own look-up; see
        :meth:`signed_decided_among` for everyone else."""
        if self._closed:
            raise RuntimeError("the HITL backend is closed")
        with self.store.sharing_one_connection():
            return self.store.audit.signed_decided_among(hitl_ids)

    async def signed_decided_among(self, hitl_ids: Sequence[str]) -> tuple[list[HITLRecord], dict[str, str]]:
        """:meth:`signed_decided_among_now` as one job on the look-up thread (:meth:`run_lookup`, with its retries)
        for every waiting agent of the process."""
        return await self.run_lookup(self.signed_decided_among_now, hitl_ids)

    async def signed(self, record: HITLRecord) -> HITLRecord:
        """``record`` once its decision is checked against its audit row (edit, message, shown arguments), so an
        agent runs what the chain signed; :class:`DecisionNotOnRecord` when someone changed it afterwards."""
        problem = (await self.unsigned_decisions([record])).get(str(record["hitl_id"]))
        if problem is not None:
            log.error("%s", problem)
            raise DecisionNotOnRecord(str(record["hitl_id"]), problem)
        return record
