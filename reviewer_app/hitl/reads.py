"""The backend's plain reads: each one forwards to one store read on the database thread, nothing more.

They are grouped here, out of the way of the parts that decide things, because callers (the window, the CLI,
the runtime, the integrations) need them as service calls: nothing above the backend talks to the store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from reviewer_app.domain.history import HistoryCursor, HistoryEntry, HistoryPage, HistoryQuery
from reviewer_app.domain.hitl import HITLRecord
from reviewer_app.domain.records import AuditEntry, AuditReport, RequestQuery, RequestSummary, RunRecord
from reviewer_app.domain.stats import DecisionStats
from reviewer_app.domain.timeline import BlockEvent
from reviewer_app.domain.waivers import SessionRule
from reviewer_app.hitl.core import BackendCore
from reviewer_app.persistence.store import now_ms
from reviewer_app.persistence.store.rules import StoredRule


class StoreReads(BackendCore):
    """Thin delegations to the store's reads, one per method."""

    # -- requests ----------------------------------------------------------------------------------
    async def get(self, hitl_id: str) -> HITLRecord | None:
        return await self.run(self.store.requests.get, hitl_id)

    def get_soon(self, hitl_id: str) -> asyncio.Future[HITLRecord | None]:
        """:meth:`get`, read on the database thread from now on (:meth:`BackendCore.run_soon`)."""
        return self.run_soon(self.store.requests.get, hitl_id)

    async def get_pending_by_session(self, session_id: str) -> list[HITLRecord]:
        return await self.run(self.store.requests.pending, session_id=session_id)

    async def get_pending_by_invocation(self, invocation_id: str) -> list[HITLRecord]:
        return await self.run(self.store.requests.pending, invocation_id=invocation_id)

    async def list_records(self, query: RequestQuery | None = None) -> list[HITLRecord]:
        return await self.run(self.store.requests.query, query or RequestQuery())

    async def list_summaries(self, query: RequestQuery | None = None) -> list[RequestSummary]:
        return await self.run(self.store.requests.summaries, query or RequestQuery())

    async def count_pending(self) -> int:
        return await self.run(self.store.requests.count_pending)

    async def summary_page(
        self, statuses: Sequence[str], *, after: tuple[int, int, str] | None = None, limit: int | None = None
    ) -> list[RequestSummary]:
        """One keyset page of inbox rows (oldest first), after the ``(created_at, updated_at_ms, hitl_id)`` key."""
        return await self.run(self.store.requests.summary_page, statuses, after=after, limit=limit)

    async def data_size(self, hitl_id: str) -> int | None:
        """Bytes of the request's stored data, read without loading it (None: no such request)."""
        return await self.run(self.store.requests.data_size, hitl_id)

    async def decided_among(self, hitl_ids: Sequence[str]) -> list[HITLRecord]:
        """The requests among ``hitl_ids`` that are no longer pending (one query however many)."""
        return await self.run(self.store.requests.decided_among, hitl_ids)

    # -- runs, sessions and timelines ----------------------------------------------------------------
    async def list_runs(self, **kwargs: Any) -> list[RunRecord]:
        return await self.run(self.store.runs.list, **kwargs)

    async def get_run(self, invocation_id: str) -> RunRecord | None:
        return await self.run(self.store.runs.get, invocation_id)

    async def session_info(self, session_id: str) -> dict[str, Any] | None:
        """The session's row (agent, workspace, external) as a dict, or None."""
        return await self.run(self.store.runs.session_info, session_id)

    async def latest_checkpoint(self, invocation_id: str) -> tuple[str, dict[str, Any]] | None:
        """The run's newest checkpoint as ``(checkpoint_id, state)``."""
        return await self.run(self.store.checkpoints.latest, invocation_id)

    async def events(self, invocation_id: str, *, after_seq: int = 0) -> list[BlockEvent]:
        return await self.run(self.store.timeline.of_run, invocation_id, after_seq=after_seq)

    async def events_since(self, after_seq: int, *, limit: int = 10_000) -> list[BlockEvent]:
        """Timeline events of every run after ``after_seq`` (the CLI's progress lines follow these)."""
        return await self.run(self.store.timeline.since, after_seq, limit=limit)

    async def last_event_seq(self) -> int:
        return await self.run(self.store.timeline.last_seq)

    # -- idle runs: liveness sweeps ----------------------------------------------------------------------
    async def last_activity_ms(self, invocation_id: str, *, ignoring_block: str) -> tuple[int, bool]:
        """When the run last showed life, and whether ``ignoring_block`` is on its timeline (see the store's)."""
        return await self.run(self.store.runs.last_activity_ms, invocation_id, ignoring_block=ignoring_block)

    async def stale_owned_runs(self, states: Sequence[str], *, stale_after_ms: int) -> list[RunRecord]:
        """Runs in ``states`` whose owner has not sent a heartbeat for ``stale_after_ms`` (liveness sweeps)."""
        before = now_ms() - stale_after_ms
        return await self.run(self.store.runs.stale_owned, states, beat_before_ms=before)

    # -- rules and waivers ------------------------------------------------------------------------------
    async def list_rules(self, *, include_inactive: bool = False) -> list[StoredRule]:
        """The rules in force now (or every rule, revoked and expired ones too), oldest first."""
        return await self.run(lambda: self.store.rules.list(include_inactive=include_inactive))

    async def session_rules(self, session_id: str) -> list[SessionRule]:
        """The approve-for-session waivers in force for ``session_id``."""
        return await self.run(self.store.waivers.of_session, session_id)

    # -- the audit log, statistics and history ---------------------------------------------------------
    async def audit(self, hitl_id: str | None = None) -> list[AuditEntry]:
        return await self.run(self.store.audit.entries, hitl_id=hitl_id)

    async def audit_page(self, *, after_id: int = 0, limit: int = 1000) -> list[AuditEntry]:
        """One page of the decision log after ``after_id`` (keyset paging for exports)."""
        return await self.run(self.store.audit.page, after_id=after_id, limit=limit)

    async def verify_audit(self) -> AuditReport:
        return await self.run(self.store.audit.verify)

    async def audit_count(self) -> int:
        """The number of rows in the decision log."""
        return await self.run(self.store.audit.count)

    async def decision_stats(self, *, since_s: int | None, until_s: int | None = None) -> DecisionStats:
        """Aggregates for the Statistics view over ``[since_s, until_s)`` (None: since the beginning), by SQL."""
        return await self.run(lambda: self.store.stats.decisions(since_s=since_s, until_s=until_s))

    async def history_page(
        self, query: HistoryQuery | None = None, *, after: HistoryCursor | None = None, limit: int = 100
    ) -> HistoryPage:
        """One page of decided requests, newest first, searched and filtered; pass ``page.next_cursor`` on.

        The search text is matched as literal word prefixes (full-text index: FTS5 on SQLite, tsvector on
        PostgreSQL), whatever it contains. Entries leave the arguments out; :meth:`history_entry` has them.
        """
        return await self.run(self.store.history.page, query or HistoryQuery(), after=after, limit=limit)

    async def history_entry(self, audit_id: int) -> HistoryEntry | None:
        """One decision with the arguments as shown and as edited when it was made, and its rule's pattern."""
        return await self.run(self.store.history.entry, audit_id)
