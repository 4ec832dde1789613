"""Expiry: pending requests whose ``expires_at`` has passed are settled with their default decision.

Each is settled in its own compare-and-set transaction by ``system:expiry``, so a request a reviewer decided
meanwhile keeps that decision and one unreadable row never stops the others.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from reviewer_app.domain.hitl import HITLConflict, HITLRecord, HITLStatus
from reviewer_app.hitl.core import BackendCore

log = logging.getLogger(__name__)


class ExpirySweep(BackendCore):
    """The sweep that expires due requests."""

    async def expire_due(
        self, now: int | None = None, *, default_decision: Callable[[HITLRecord], str] | str = "reject"
    ) -> list[HITLRecord]:
        """Expire pending requests whose ``expires_at`` has passed; returns them as expired.

        Each receives a default decision (``reject`` unless the caller says
        otherwise per request), recorded in the audit log as the expiry's.
        """
        moment = int(time.time()) if now is None else int(now)

        def work() -> list[HITLRecord]:
            expired = []
            for record in self.store.requests.due_for_expiry(moment):
                kind = default_decision(record) if callable(default_decision) else default_decision
                response = {
                    "decision": kind,
                    "message": f"expired without a decision at unix time {record['expires_at']}",
                    "reviewer": "system:expiry",
                    "expired": True,
                }
                try:
                    with self.store.transaction() as tx:
                        expired.append(
                            tx.requests.decide(
                                record["hitl_id"],
                                response,
                                status=HITLStatus.EXPIRED,
                                reviewer="system:expiry",
                                decision=kind,
                            )
                        )
                except HITLConflict:
                    continue  # decided by someone else in the meantime: that decision stands
                except (ValueError, TypeError, RecursionError) as exc:  # one bad row never stops the others
                    log.warning("could not expire request %r: %s", record.get("hitl_id"), exc)
            if self.store.rules.expiries_to_audit(moment):  # a rule past its time: its expiry goes on the log once
                with self.store.transaction() as tx:
                    tx.rules.audit_expired(moment)
            return expired

        def work_and_tell() -> list[HITLRecord]:
            expired = work()
            if expired:
                self.feed.committed()
            return expired

        result = await self.run(work_and_tell)
        if result:
            self.feed.notify()
        return result
