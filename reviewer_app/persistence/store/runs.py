"""Runs: sessions, invocations (state, owner, heartbeat) and the runs board's listing.

A run's conversation and checkpoints are their own aggregate (:mod:`.checkpoints`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from types import EllipsisType
from typing import Any

from sqlalchemy import ColumnElement, and_, bindparam, func, select, update

from reviewer_app.domain.hitl import (
    HITLStatus,
)
from reviewer_app.domain.records import NewRequest, RunRecord
from reviewer_app.domain.runs import RunState, RunStateConflict, check_transition
from reviewer_app.persistence.core_tables import (
    events_t,
    invocations_t,
    requests_t,
    sessions_t,
)
from reviewer_app.persistence.store.base import Reader, Statements
from reviewer_app.persistence.store.records import now_ms

_SELECT_RUN_STATE = select(invocations_t.c.state).where(invocations_t.c.id == bindparam("match_id"))

_SELECT_RUN_STATE_OWNER = select(invocations_t.c.state, invocations_t.c.owner).where(
    invocations_t.c.id == bindparam("match_id")
)

# PostgreSQL: the run's row stays locked until the transaction ends, so a concurrent cancel and a step commit
# take turns (SQLite's BEGIN IMMEDIATE already serialises every writer; FOR UPDATE does not exist there).
_SELECT_RUN_STATE_FOR_UPDATE = _SELECT_RUN_STATE.with_for_update()
_SELECT_RUN_STATE_OWNER_FOR_UPDATE = _SELECT_RUN_STATE_OWNER.with_for_update()

_SELECT_SESSION = select(sessions_t).where(sessions_t.c.id == bindparam("match_id"))

# Conditional on the state the writer read: a stale read updates nothing instead of overwriting a newer state.
_UPDATE_RUN = (
    update(invocations_t)
    .where(invocations_t.c.id == bindparam("match_id"), invocations_t.c.state == bindparam("match_state"))
    .values(active_ms=invocations_t.c.active_ms + bindparam("add_active_ms"))
)


def _runs_query(where: Any, limit: int | None) -> Any:
    """Runs with their workspace and pending, expired and cancelled request counts, newest first."""

    # Answered from ix_hitl_invocation_status (migration 0004), never by walking every pending row.
    def requests_in(status: HITLStatus) -> Any:
        return (
            select(func.count())
            .where(requests_t.c.invocation_id == invocations_t.c.id, requests_t.c.status == status.value)
            .scalar_subquery()
        )

    query = select(
        invocations_t,
        sessions_t.c.workspace,
        requests_in(HITLStatus.PENDING).label("pending"),
        requests_in(HITLStatus.EXPIRED).label("expired"),
        requests_in(HITLStatus.CANCELLED).label("aborted"),
    ).join(sessions_t, sessions_t.c.id == invocations_t.c.session_id)
    if where is not None:
        query = query.where(where)
    query = query.order_by(invocations_t.c.created_at.desc(), invocations_t.c.updated_at_ms.desc())
    return query.limit(limit) if limit is not None else query


_SELECT_RUN = _runs_query(invocations_t.c.id == bindparam("match_id"), 1)


class RunWrites:
    """``tx.runs``: session and run writes inside one transaction (and the reads that guard them)."""

    __slots__ = ("_db",)

    def __init__(self, db: Statements) -> None:
        self._db = db

    def ensure_session(
        self, session_id: str, *, agent: str | None = None, workspace: str | None = None, external: bool = False
    ) -> None:
        now = int(time.time())
        self._db.insert_ignore(
            sessions_t,
            {
                "id": session_id,
                "agent": agent,
                "workspace": workspace,
                "external": external,
                "created_at": now,
                "updated_at": now,
            },
            ["id"],
        )

    def ensure_with_session(
        self,
        invocation_id: str,
        session_id: str,
        *,
        agent: str | None = None,
        workspace: str | None = None,
        prompt: str | None = None,
        external: bool = False,
    ) -> bool:
        """Create the invocation and its session unless they exist, so the window lists them before their first
        request or block; True if the invocation was created."""
        self.ensure_session(session_id, agent=agent, workspace=workspace, external=external)
        return self.ensure(invocation_id, session_id, agent=agent, prompt=prompt, external=external)

    def ensure_for(self, request: NewRequest, *, workspace: str | None = None, prompt: str | None = None) -> None:
        """The request's invocation and session, created unless they exist (before the request is written)."""
        self.ensure_with_session(
            request.invocation_id,
            request.session_id,
            agent=request.agent_name,
            workspace=workspace,
            prompt=prompt,
            external=request.external,
        )

    def ensure(
        self,
        invocation_id: str,
        session_id: str,
        *,
        agent: str | None = None,
        prompt: str | None = None,
        state: RunState = RunState.RUNNING,
        parent_id: str | None = None,
        external: bool = False,
        owner: str | None = None,
    ) -> bool:
        """Create the invocation unless it exists; True if it was created."""
        ms = now_ms()
        return (
            self._db.insert_ignore(
                invocations_t,
                {
                    "id": invocation_id,
                    "session_id": session_id,
                    "agent": agent,
                    "prompt": prompt,
                    "state": str(state),  # a StrEnum: its text, without ``.value``'s two Python calls
                    "parent_id": parent_id,
                    "external": external,
                    "owner": owner,
                    "created_at": ms // 1000,
                    "started_at": ms // 1000 if state is RunState.RUNNING else None,
                    "updated_at_ms": ms,
                    "active_ms": 0,
                    "heartbeat_ms": ms if owner else None,
                },
                ["id"],
            )
            > 0
        )

    def set_state(
        self,
        invocation_id: str,
        state: RunState,
        *,
        error: str | None = None,
        owner: str | EllipsisType | None = ...,
        add_active_ms: int = 0,
        current: RunState | None = None,
    ) -> RunState:
        """Move a run to ``state`` (checked against the allowed transitions); returns the old state.

        ``current``: the state the caller has just read in this transaction (saves reading it again). The
        update applies only while the run is still in that state; otherwise :class:`RunStateConflict`.
        """
        if current is None:
            rows = self._db.rows(
                self._locking(_SELECT_RUN_STATE, _SELECT_RUN_STATE_FOR_UPDATE), {"match_id": invocation_id}
            )
            current_raw = rows[0]["state"] if rows else None
            if current_raw is None:
                raise KeyError(f"no run with id {invocation_id!r}")
            current = RunState(current_raw)
        check_transition(current, state)
        ms = now_ms()
        values: dict[str, Any] = {
            "match_id": invocation_id,
            "match_state": current.value,
            "add_active_ms": add_active_ms,
            "state": state.value,
            "updated_at_ms": ms,
        }
        if state is RunState.RUNNING and current is RunState.QUEUED:
            values["started_at"] = ms // 1000
        if state.finished:
            values["finished_at"] = ms // 1000
        elif current.finished or state is RunState.QUEUED:
            values["finished_at"] = None
        if error is not None or state in (RunState.RUNNING, RunState.QUEUED):
            values["error"] = error
        if owner is not ...:
            values["owner"] = owner
        if not self._db.write(_UPDATE_RUN, values):
            rows = self._db.rows(_SELECT_RUN_STATE, {"match_id": invocation_id})
            now = rows[0]["state"] if rows else "deleted"
            raise RunStateConflict(
                f"run {invocation_id} changed from {current.value} to {now} meanwhile; not moved to {state.value}"
            )
        return current

    def fill_in(self, invocation_id: str, session_id: str, *, prompt: str | None, workspace: str | None) -> None:
        """Give a run the prompt, and its session the workspace, they were created without (a host told them
        later); what either already has is kept. The run's ``updated_at_ms`` moves, so the board shows it."""
        if prompt:
            self._db.connection.execute(
                update(invocations_t)
                .where(invocations_t.c.id == invocation_id, invocations_t.c.prompt.is_(None))
                .values(prompt=prompt, updated_at_ms=now_ms())
            )
        if workspace:
            filled = self._db.connection.execute(
                update(sessions_t)
                .where(sessions_t.c.id == session_id, sessions_t.c.workspace.is_(None))
                .values(workspace=workspace)
            )
            if filled.rowcount:
                self._db.connection.execute(
                    update(invocations_t).where(invocations_t.c.session_id == session_id).values(updated_at_ms=now_ms())
                )

    def _locking(self, plain: Any, for_update: Any) -> Any:
        return for_update if self._db.dialect == "postgresql" else plain

    def state_and_owner(self, invocation_id: str) -> tuple[RunState, str | None] | None:
        """A run's state and driving process, read (row-locked on PostgreSQL) by the transaction about to change it."""
        query = self._locking(_SELECT_RUN_STATE_OWNER, _SELECT_RUN_STATE_OWNER_FOR_UPDATE)
        rows = self._db.rows(query, {"match_id": invocation_id})
        return (RunState(rows[0]["state"]), rows[0]["owner"]) if rows else None

    def claim(self, invocation_id: str, owner: str | None, *, expected_owner: str | None) -> bool:
        """Compare-and-set the process that drives a run (None releases it); False if someone changed it first."""
        condition = (
            invocations_t.c.owner.is_(None) if expected_owner is None else invocations_t.c.owner == expected_owner
        )
        result = self._db.connection.execute(
            update(invocations_t)
            .where(invocations_t.c.id == invocation_id, condition)
            .values(owner=owner, updated_at_ms=now_ms(), heartbeat_ms=now_ms() if owner else None, process_group=None)
        )
        return bool(result.rowcount)

    def heartbeat(self, owner: str, process_groups: dict[str, int | None]) -> int:
        """``owner`` is alive and drives these runs (with the tool process group each runs, if any).

        Touches neither ``updated_at_ms`` nor the state: a heartbeat is not a change the runs board shows.
        Returns how many of the runs this owner still holds.
        """
        if not process_groups:
            return 0
        result = self._db.connection.execute(
            update(invocations_t)
            .where(invocations_t.c.id == bindparam("match_id"), invocations_t.c.owner == owner)
            .values(heartbeat_ms=bindparam("beat_ms"), process_group=bindparam("group")),
            [{"match_id": inv, "beat_ms": now_ms(), "group": group} for inv, group in process_groups.items()],
        )
        return int(result.rowcount or 0)


class RunReads:
    """``store.runs``: runs and sessions, one or the runs board's listing."""

    def __init__(self, db: Reader) -> None:
        self._db = db

    def get(self, invocation_id: str) -> RunRecord | None:
        rows = self._db.rows(_SELECT_RUN, {"match_id": invocation_id})
        return RunRecord(**rows[0]) if rows else None

    def _runs(self, *, select_where: Any, limit: int | None) -> list[RunRecord]:
        query = _runs_query(select_where, limit)
        with self._db.reading() as connection:
            return [RunRecord(**dict(row._mapping)) for row in connection.execute(query)]

    def stale_owned(self, states: Sequence[str], *, beat_before_ms: int) -> list[RunRecord]:
        """Runs in ``states`` that have an owner whose last heartbeat is older than ``beat_before_ms`` (or none)."""
        stale = invocations_t.c.heartbeat_ms.is_(None) | (invocations_t.c.heartbeat_ms < beat_before_ms)
        where = and_(
            invocations_t.c.state.in_(list(states)),
            invocations_t.c.owner.is_not(None),
            invocations_t.c.external.is_(False),
            stale,
        )
        return self._runs(select_where=where, limit=None)

    def last_activity_ms(self, invocation_id: str, *, ignoring_block: str) -> tuple[int, bool]:
        """When the run last showed life (its row, its timeline but ``ignoring_block``, its requests), and whether
        ``ignoring_block`` is on its timeline already."""
        run_ms = select(invocations_t.c.updated_at_ms).where(invocations_t.c.id == invocation_id).scalar_subquery()
        on_run = events_t.c.invocation_id == invocation_id
        event_ms = (
            select(func.max(events_t.c.ts_ms)).where(on_run, events_t.c.block_id != ignoring_block).scalar_subquery()
        )
        request_ms = (
            select(func.max(requests_t.c.updated_at_ms))
            .where(requests_t.c.invocation_id == invocation_id)
            .scalar_subquery()
        )
        marked = select(func.count()).where(on_run, events_t.c.block_id == ignoring_block).scalar_subquery()
        with self._db.reading() as connection:
            row = connection.execute(select(run_ms, event_ms, request_ms, marked)).one()
        return max(int(value or 0) for value in row[:3]), bool(row[3])

    def session_info(self, session_id: str) -> dict[str, Any] | None:
        rows = self._db.rows(_SELECT_SESSION, {"match_id": session_id})
        return dict(rows[0]) if rows else None

    def list(
        self,
        *,
        states: Sequence[str] | None = None,
        limit: int | None = 500,
        updated_since_ms: int | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[RunRecord]:
        """Runs, newest first (only those of ``ids`` when given)."""
        conditions: list[ColumnElement[bool]] = []
        if states:
            conditions.append(invocations_t.c.state.in_(list(states)))
        if ids is not None:
            conditions.append(invocations_t.c.id.in_(list(ids)))
        if updated_since_ms is not None:
            conditions.append(invocations_t.c.updated_at_ms >= updated_since_ms)
        return self._runs(select_where=and_(*conditions) if conditions else None, limit=limit)
