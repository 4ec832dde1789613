"""The public integration point for agent authors: aury-agent's ``HITLBackend`` on SQL.

::

    from reviewer_app.hitl import SQLHITLBackend, HITLConflict, HITLNotFound

    backend = SQLHITLBackend("reviews.db")  # a path or a SQLAlchemy URL; creates/migrates the DB
    await backend.create(hitl_id="h1", hitl_type="tool_approval", session_id="s1", invocation_id="i1",
                         data={"arguments": {"path": "notes.txt"}}, tool_name="write_file")
    record = await backend.wait_for_response("h1")

Every database call runs on one worker thread owned by the backend (Anki's
pattern), so the event loop — and the Qt thread under qasync — never waits on
SQLite. Decisions are compare-and-set: they apply only while the request is
pending, and they are committed before anything acts on them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import getpass
import logging
import os
import queue
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, TypeVar

from reviewer_app.domain.decisions import Decision, DecisionError, DecisionKind, args_digest
from reviewer_app.domain.habits import (
    LintFinding,
    OperatorNumbers,
    Suggestion,
    lint_rules,
    operator_numbers,
    suggest_rules,
)
from reviewer_app.domain.history import HistoryCursor, HistoryEntry, HistoryPage, HistoryQuery
from reviewer_app.domain.hitl import (
    DecisionNotOnRecord,
    HITLConflict,
    HITLError,
    HITLNotFound,
    HITLRecord,
    HITLStatus,
    HITLType,
    SchemaTooNew,
    WriteRetriesExhausted,
    shown_arguments,
)
from reviewer_app.domain.hook_lease import ANSWERED_ELSEWHERE, abandoned_by_hook, answered_elsewhere
from reviewer_app.domain.identity import recorded_reviewer
from reviewer_app.domain.limits import RequestRejected, check_request
from reviewer_app.domain.policy import SessionRule, rule_for
from reviewer_app.domain.records import AuditEntry, AuditReport, NewRequest, RequestQuery, RequestSummary, RunRecord
from reviewer_app.domain.risk import Risk, assess
from reviewer_app.domain.rule_outcome import call_of_record
from reviewer_app.domain.rules import Rule, Verdict, evaluate, prevailing_verdict
from reviewer_app.domain.settlement import settlement_for
from reviewer_app.domain.stats import DecisionStats
from reviewer_app.domain.timeline import BlockEvent, BlockKind, BlockOp
from reviewer_app.domain.toolcall import ToolCall as PolicyCall
from reviewer_app.domain.toolcall import is_shell_tool
from reviewer_app.domain.why import PreviewInputs, why_asked
from reviewer_app.persistence.changes import ChangeFeed, change_feed_for
from reviewer_app.persistence.engine import BUSY_TIMEOUT_MS
from reviewer_app.persistence.retry import with_retry
from reviewer_app.persistence.store import Store, StoreTx, now_ms
from reviewer_app.persistence.store.policy import StoredRule

__all__ = [
    "Decision",
    "DecisionError",
    "DecisionKind",
    "HITLConflict",
    "HITLError",
    "HITLNotFound",
    "RequestQuery",
    "RequestRejected",
    "SQLHITLBackend",
    "SchemaTooNew",
    "WriteRetriesExhausted",
    "default_reviewer",
    "shown_arguments",
]

T = TypeVar("T")
HISTORY_PAGE = 500  # records read per query when the whole history is judged
log = logging.getLogger(__name__)


def default_reviewer() -> str:
    """Who decisions are recorded as: ``REVIEWER_NAME`` or the OS user."""
    name = os.environ.get("REVIEWER_NAME")
    if name:
        return name
    try:
        return getpass.getuser()
    except Exception:  # no user database entry (some containers)
        return f"uid-{os.getuid()}" if hasattr(os, "getuid") else "unknown"


def _reviewer_identity(store: Store, label: str | None) -> str:
    """Who this backend's decisions are recorded as.

    SQLite: ``label`` (``--reviewer``), else ``REVIEWER_NAME`` or the OS user: anyone who can write the file is
    trusted anyway. PostgreSQL: the database login, with the display name only as a label after it
    (``alice``, ``alice (Alice Smith)``; see :mod:`reviewer_app.domain.identity`), which the database enforces.
    """
    login = store.database_login()
    if login is None:
        return label or default_reviewer()
    return recorded_reviewer(login, label or os.environ.get("REVIEWER_NAME") or None)


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class _DatabaseThread:
    """The backend's single database thread: runs jobs in order, hands results back to the caller's loop.

    A plain queue and ``call_soon_threadsafe`` rather than ``loop.run_in_executor``: the executor's
    future chaining cost ~10 µs more per call, and a decision's round trip pays it at every step
    (see bench/store_throughput.py). Like the executor it skips jobs whose caller was cancelled
    before they started, and :meth:`shutdown` lets queued jobs finish.
    """

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[tuple[asyncio.AbstractEventLoop, asyncio.Future[Any], Callable[[], Any]] | None]
        self._jobs = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the HITL backend is closed")
            self._jobs.put((loop, future, fn))
        return future

    def _main(self) -> None:
        while (job := self._jobs.get()) is not None:
            loop, future, fn = job
            if future.cancelled():
                continue
            result: Any = None
            error: BaseException | None = None
            try:
                result = fn()
            except BaseException as exc:  # handed to the awaiting caller, as an executor would
                error = exc
            try:
                loop.call_soon_threadsafe(_settle, future, result, error)
            except RuntimeError:  # the caller's loop is closed: nobody is waiting any more
                pass
            del job, future, fn, result, error

    def shutdown(self) -> None:
        """Finish the queued jobs, then stop the thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._jobs.put(None)
        if threading.current_thread() is not self._thread:
            self._thread.join()


class SQLHITLBackend:
    """aury-agent's ``HITLBackend`` protocol, durable in SQLite or PostgreSQL.

    Extensions beyond the protocol: :meth:`wait_for_response`, :meth:`expire_due`,
    :meth:`decide` (validated reviewer decisions), listing for the UI, and
    :meth:`emit_block` for agents in other processes to write their timeline.
    """

    def __init__(
        self,
        target: str | os.PathLike[str] | None = None,
        *,
        store: Store | None = None,
        reviewer: str | None = None,
        feed: ChangeFeed | None = None,
        retry_until: float | None = None,
        on_db_status: Callable[[str | None], None] | None = None,
        busy_timeout_ms: int | None = None,
    ) -> None:
        self.retry_until = retry_until
        """A ``time.monotonic()`` deadline for riding out database trouble (a hook's budget); None: the default."""
        self.on_db_status = on_db_status
        """Told each :attr:`db_status` change, on the thread that saw it (a hook prints it on stderr)."""
        self._db_status: str | None = None
        if store is None:
            if target is None:
                raise ValueError("give a database path or URL, or a Store")
            # A server restarting (or a database locked by a migration) is ridden out like any transient fault.
            # ``busy_timeout_ms``: how long one statement waits for SQLite's lock before the retry policy (and its
            # deadline and status) takes over; a hook keeps it short so its budget holds.
            wait_ms = BUSY_TIMEOUT_MS if busy_timeout_ms is None else busy_timeout_ms
            store = with_retry(
                lambda: Store.open(target, busy_timeout_ms=wait_ms), on_status=self._set_db_status, deadline=retry_until
            )
            self._owns_store = True
        else:
            self._owns_store = False
        self.store = store
        self.reviewer = _reviewer_identity(store, reviewer)
        self.feed = feed or change_feed_for(store.engines)
        self._db_thread = _DatabaseThread("reviewer-db")
        self._closed = False

    # -- plumbing ------------------------------------------------------------------------------
    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` on the database thread and await its result on the caller's loop.

        A read that meets TEXT another program stored as invalid UTF-8 is read again leniently
        (see :meth:`Store.tolerating_bad_text`), so one such row never hides the others.
        A read that meets transient trouble (a PostgreSQL restart, a lock) is tried again like a write
        (:mod:`reviewer_app.persistence.retry`).
        """
        # Partials, not lambdas: no extra Python frames under a deeply nested read (json.loads counts them).
        read = functools.partial(self.store.tolerating_bad_text, functools.partial(fn, *args, **kwargs))
        return await self._on_db_thread(functools.partial(self._retried, read))

    def _retried(self, work: Callable[[], T]) -> T:
        return with_retry(work, on_status=self._set_db_status, deadline=self.retry_until)

    async def _on_db_thread(self, fn: Callable[[], T]) -> T:
        if self._closed:
            raise RuntimeError("the HITL backend is closed")
        return await self._db_thread.submit(fn)

    async def write(self, fn: Callable[[StoreTx], T], *, retry: bool = True) -> T:
        """Run ``fn`` inside one write transaction on the database thread; wakes waiters after commit.

        A busy database (another process holds the write lock past ``busy_timeout``) or a full disk rolls
        the transaction back and runs it again with backoff (:mod:`reviewer_app.persistence.retry`), with
        :attr:`db_status` saying so; after the retry budget it raises ``WriteRetriesExhausted``. ``retry=False``:
        one try (heartbeats, giving a run up).
        """

        def work() -> T:
            with self.store.transaction() as tx:
                result = fn(tx)
            self.feed.committed()  # other processes' waiters, straight from this thread: no hop first
            return result

        def retried() -> T:
            return self._retried(work)

        store = self.store
        once = retried if retry else work
        result = await self._on_db_thread(lambda: store.tolerating_bad_text(once))
        self.feed.notify()
        return result

    def _set_db_status(self, status: str | None) -> None:
        self._db_status = status
        if self.on_db_status is not None:
            self.on_db_status(status)

    @property
    def db_status(self) -> str | None:
        """Why database calls are being retried (:mod:`reviewer_app.persistence.retry`'s reasons), else None."""
        return self._db_status

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._db_thread.shutdown()
        self.feed.close()
        if self._owns_store:
            self.store.close()

    async def aclose(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    async def __aenter__(self) -> SQLHITLBackend:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- the aury-agent protocol -----------------------------------------------------------
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
        await self.write(lambda tx: tx.create_request(request))

    async def get(self, hitl_id: str) -> HITLRecord | None:
        return await self.run(self.store.get_request, hitl_id)

    async def respond(self, hitl_id: str, user_response: dict[str, Any]) -> None:
        """Complete a pending request with ``user_response`` (compare-and-set).

        A response that names a decision goes through the same gate as :meth:`decide`: one that would run
        a tool must name the SHA-256 of the arguments shown, and edits must pass the tool's schema. A bare
        protocol answer (no ``decision`` key) is stored as given. Either way the recorded reviewer is this
        backend's identity, never a name the response asserts.
        """
        if not isinstance(user_response, dict):
            raise TypeError("user_response must be a dict")
        response = dict(user_response)
        decision = None
        if "decision" in response:
            response["reviewer"] = self.reviewer
            decision = Decision.from_user_response(response)
        elif "reviewer" in response:
            response["reviewer"] = self.reviewer

        def work(tx: StoreTx) -> HITLRecord | _Abandoned:
            record = tx.get_request(hitl_id)
            if record is not None and record["status"] == HITLStatus.PENDING.value:
                abandoned = _settle_if_abandoned(tx, record)
                if abandoned is not None:
                    return _Abandoned(abandoned)
            if decision is not None:
                if record is None or record["status"] != HITLStatus.PENDING.value:
                    raise tx.conflict_for(hitl_id, decision.kind.value)
                validate_decision(record, decision)
                self._grant_session_rule(tx, record, decision)
            return tx.settle(hitl_id, response, reviewer=self.reviewer)

        _refuse_if_abandoned(await self.write(work), decision.kind.value if decision is not None else "respond to")

    async def cancel(self, hitl_id: str, *, reason: str | None = None, by: str | None = None) -> None:
        """Cancel a pending request (compare-and-set).

        As in aury-agent's backend, ``user_response`` stays ``None``; who cancelled (``by``, default this
        backend's reviewer) is kept in ``decided_by`` and the audit row, with ``reason`` as its message.
        """
        who = by or self.reviewer
        await self.write(
            lambda tx: tx.settle(
                hitl_id,
                None,
                status=HITLStatus.CANCELLED,
                reviewer=who,
                decision=DecisionKind.CANCEL.value,
                message=reason,
            )
        )

    async def get_pending_by_session(self, session_id: str) -> list[HITLRecord]:
        return await self.run(self.store.pending_records, session_id=session_id)

    async def get_pending_by_invocation(self, invocation_id: str) -> list[HITLRecord]:
        return await self.run(self.store.pending_records, invocation_id=invocation_id)

    # -- extensions --------------------------------------------------------------------------
    async def wait_for_response(self, hitl_id: str, timeout: float | None = None) -> HITLRecord:
        """Return the record once it is no longer pending, whichever process decided it.

        Raises :class:`HITLNotFound` for an unknown id, :class:`TimeoutError` when ``timeout`` seconds pass first,
        and :class:`DecisionNotOnRecord` when the decided record is not what its audit row signed.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            token = self.feed.token()
            record = await self.get(hitl_id)
            if record is None:
                raise HITLNotFound(hitl_id)
            if record["status"] != HITLStatus.PENDING.value:
                return await self.signed(record)
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise TimeoutError(f"no decision on {hitl_id!r} within {timeout} s")
            await self.feed.wait(token, remaining)

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
            for record in self.store.due_for_expiry(moment):
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
                            tx.settle(
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

    async def settle_abandoned_hooks(self) -> list[HITLRecord]:
        """Settle "answered elsewhere" every pending request whose hook process on this host is gone.

        A hook that answered its host without a decision (a fallback, a time-out it could not record, a kill)
        leaves nobody to receive one; its watchdog normally withdraws the request, and this sweep — run by the
        window's and workers' supervision, the CLI and each hook — makes sure of it when the watchdog died too.
        """
        candidates = [
            hitl_id
            for hitl_id, metadata in await self.run(self.store.pending_external_metadata)
            if abandoned_by_hook(metadata) is not None
        ]
        settled = []
        for candidate in candidates:

            def work(tx: StoreTx, hitl_id: str = candidate) -> HITLRecord | None:
                current = tx.get_request(hitl_id)
                if current is None or current["status"] != HITLStatus.PENDING.value:
                    return None
                return _settle_if_abandoned(tx, current)

            done = await self.write(work)
            if done is not None:
                settled.append(done)
        return settled

    async def decide(self, hitl_id: str, decision: Decision) -> HITLRecord:
        """Apply a reviewer's decision after checking it against what would run.

        Approvals must carry the SHA-256 of the arguments they approve; edits
        are validated against the tool's JSON schema when the request carries
        one (``data["schema"]``); approve-for-session adds its session rule in
        the same transaction.
        """
        reviewer = self.reviewer  # who decides is this backend's identity, not a name the caller asserts
        if decision.reviewer != reviewer:
            decision = dataclasses.replace(decision, reviewer=reviewer)

        def work(tx: StoreTx) -> HITLRecord | _Abandoned:
            record = tx.get_request(hitl_id)
            if record is None or record["status"] != HITLStatus.PENDING.value:
                raise tx.conflict_for(hitl_id, decision.kind.value)
            abandoned = _settle_if_abandoned(tx, record)
            if abandoned is not None:
                return _Abandoned(abandoned)
            validate_decision(record, decision)
            decided = tx.settle(hitl_id, decision.to_user_response(), reviewer=reviewer, message=decision.message)
            self._grant_session_rule(tx, record, decision)
            return decided

        decided = _refuse_if_abandoned(await self.write(work), decision.kind.value)
        if decision.kind is DecisionKind.APPROVE_FOR_SESSION:
            await self.settle_session_siblings(decided)
        return decided

    def _grant_session_rule(self, tx: StoreTx, record: HITLRecord, decision: Decision) -> None:
        """Approve-for-session adds its waiver in the decision's transaction; its scope comes from the call
        itself and the operator's fixed list of shell tools, never from anything in the request's data."""
        if decision.kind is not DecisionKind.APPROVE_FOR_SESSION or not record.get("tool_name"):
            return
        args = shown_arguments(record)
        rule = rule_for(record["tool_name"], args if isinstance(args, dict) else {})
        if rule is None:  # the command can never be waived (substitution, unparseable…): this call only
            return
        tx.add_session_rule(record["session_id"], rule, created_by=self.reviewer, hitl_id=record["hitl_id"])

    async def session_rules(self, session_id: str) -> list[SessionRule]:
        """The approve-for-session waivers in force for ``session_id``."""
        return await self.run(self.store.session_rules, session_id)

    async def list_records(self, query: RequestQuery | None = None) -> list[HITLRecord]:
        return await self.run(self.store.query_records, query or RequestQuery())

    async def list_summaries(self, query: RequestQuery | None = None) -> list[RequestSummary]:
        return await self.run(self.store.query_summaries, query or RequestQuery())

    async def list_runs(self, **kwargs: Any) -> list[RunRecord]:
        return await self.run(self.store.list_runs, **kwargs)

    async def events(self, invocation_id: str, *, after_seq: int = 0) -> list[BlockEvent]:
        return await self.run(self.store.events, invocation_id, after_seq=after_seq)

    async def get_run(self, invocation_id: str) -> RunRecord | None:
        return await self.run(self.store.get_run, invocation_id)

    async def session_info(self, session_id: str) -> dict[str, Any] | None:
        """The session's row (agent, workspace, external) as a dict, or None."""
        return await self.run(self.store.session_info, session_id)

    async def latest_checkpoint(self, invocation_id: str) -> tuple[str, dict[str, Any]] | None:
        """The run's newest checkpoint as ``(checkpoint_id, state)``."""
        return await self.run(self.store.latest_checkpoint, invocation_id)

    async def count_pending(self) -> int:
        return await self.run(self.store.count_pending)

    async def summary_page(
        self, statuses: Sequence[str], *, after: tuple[int, int, str] | None = None, limit: int | None = None
    ) -> list[RequestSummary]:
        """One keyset page of inbox rows (oldest first), after the ``(created_at, updated_at_ms, hitl_id)`` key."""
        return await self.run(self.store.summary_page, statuses, after=after, limit=limit)

    async def decided_among(self, hitl_ids: Sequence[str]) -> list[HITLRecord]:
        """The requests among ``hitl_ids`` that are no longer pending (one query however many)."""
        return await self.run(self.store.decided_among, hitl_ids)

    async def events_since(self, after_seq: int, *, limit: int = 10_000) -> list[BlockEvent]:
        """Timeline events of every run after ``after_seq`` (the CLI's progress lines follow these)."""
        return await self.run(self.store.events_since, after_seq, limit=limit)

    async def last_event_seq(self) -> int:
        return await self.run(self.store.last_event_seq)

    @property
    def database_url(self) -> str:
        """The database's URL (passwords are the caller's to mask before showing it)."""
        return self.store.url

    async def audit(self, hitl_id: str | None = None) -> list[AuditEntry]:
        return await self.run(self.store.audit_entries, hitl_id=hitl_id)

    async def audit_page(self, *, after_id: int = 0, limit: int = 1000) -> list[AuditEntry]:
        """One page of the decision log after ``after_id`` (keyset paging for exports)."""
        return await self.run(self.store.audit_page, after_id=after_id, limit=limit)

    async def verify_audit(self) -> AuditReport:
        return await self.run(self.store.verify_audit)

    async def unsigned_decisions(self, records: Iterable[HITLRecord]) -> dict[str, str]:
        """Of these records, the decided ones that are not what their audit rows signed: ``hitl_id`` → why."""
        return await self.run(self.store.decision_audit_problems, list(records))

    async def signed(self, record: HITLRecord) -> HITLRecord:
        """``record`` once its decision is checked against its audit row (edit, message, shown arguments), so an
        agent runs what the chain signed; :class:`DecisionNotOnRecord` when someone changed it afterwards."""
        problem = (await self.unsigned_decisions([record])).get(str(record["hitl_id"]))
        if problem is not None:
            log.error("%s", problem)
            raise DecisionNotOnRecord(str(record["hitl_id"]), problem)
        return record

    async def last_activity_ms(self, invocation_id: str, *, ignoring_block: str) -> tuple[int, bool]:
        """When the run last showed life, and whether ``ignoring_block`` is on its timeline (see the store's)."""
        return await self.run(self.store.last_activity_ms, invocation_id, ignoring_block=ignoring_block)

    async def append_blocks(self, events: Iterable[BlockEvent]) -> list[BlockEvent]:
        """Append timeline events (from this or another process); returns them with their ``seq``."""
        batch = list(events)
        return await self.write(lambda tx: tx.append_events(batch))

    async def emit_block(
        self,
        *,
        session_id: str,
        invocation_id: str,
        kind: BlockKind | str,
        data: dict[str, Any],
        op: BlockOp | str = BlockOp.APPLY,
        block_id: str | None = None,
        parent_id: str | None = None,
    ) -> BlockEvent:
        """Append one timeline event; the small API for agents in other processes.

        ``block_id`` defaults to a new id: pass the returned event's
        ``block_id`` to later ``delta``/``patch`` calls of the same block.
        """
        event = BlockEvent(
            block_id=block_id or f"blk_{uuid.uuid4().hex[:16]}",
            kind=BlockKind(kind),
            op=BlockOp(op),
            data=data,
            session_id=session_id,
            invocation_id=invocation_id,
            ts_ms=now_ms(),
            parent_id=parent_id,
        )
        stored = await self.append_blocks([event])
        return stored[0]

    async def register_run(
        self,
        *,
        session_id: str,
        invocation_id: str,
        agent: str | None = None,
        prompt: str | None = None,
        external: bool = True,
    ) -> bool:
        """Declare a run (and its session) before its first block or request, so the window lists it.

        Returns False when the run already existed (nothing is changed then).
        """

        def work(tx: StoreTx) -> bool:
            tx.ensure_session(session_id, agent=agent, external=external)
            return tx.ensure_invocation(invocation_id, session_id, agent=agent, prompt=prompt, external=external)

        return await self.write(work)

    # -- persistent policy rules (issue 14) ------------------------------------------------------------------
    async def add_rule(self, rule: Rule, *, created_by: str | None = None) -> StoredRule:
        """Store a persistent rule; :class:`HITLConflict` when its id is taken."""

        def work(tx: StoreTx) -> None:
            if not tx.add_policy_rule(rule, created_by=created_by or default_reviewer()):
                raise HITLConflict(f"a rule with id {rule.id!r} already exists")

        await self.write(work)
        return next(entry for entry in await self.list_rules(include_inactive=True) if entry.rule.id == rule.id)

    async def revoke_rule(self, rule_id: str) -> bool:
        """Revoke a rule (it stays on the record); False when unknown or already revoked."""
        return await self.write(lambda tx: tx.revoke_policy_rule(rule_id))

    async def import_rules(self, rules: Sequence[Rule], *, created_by: str | None = None) -> list[bool]:
        """Add several rules in one transaction; per rule, False when its id existed already (left unchanged)."""
        who = created_by or default_reviewer()
        return await self.write(lambda tx: [tx.add_policy_rule(rule, created_by=who) for rule in rules])

    async def list_rules(self, *, include_inactive: bool = False) -> list[StoredRule]:
        """The rules in force now (or every rule, revoked and expired ones too), oldest first."""
        return await self.run(lambda: self.store.policy_rules(include_inactive=include_inactive))

    async def active_rules(self) -> list[Rule]:
        return [entry.rule for entry in await self.list_rules()]

    async def preview_rule(
        self,
        rule: Rule,
        *,
        statuses: Sequence[str] | None = None,
        page_size: int = 500,
        limit: int = 200,
        max_scanned: int = 100_000,
    ) -> list[HITLRecord]:
        """The past and pending requests ``rule`` would have decided, newest first.

        Requests are read a page at a time (never all at once); at most ``limit`` matches are returned and at
        most ``max_scanned`` requests read. An allow rule previews what it would settle: a high-risk call is
        not listed for a wildcard allow, exactly as :func:`evaluate` would leave it to a human. ``statuses``:
        every status unless given.
        """
        wanted = tuple(statuses) if statuses is not None else tuple(status.value for status in HITLStatus)
        now = time.time()
        matches: list[HITLRecord] = []
        offset = 0
        while offset < max_scanned and len(matches) < limit:
            query = RequestQuery(statuses=wanted, limit=page_size, offset=offset, newest_first=True)
            page = await self.list_records(query)
            for record in page:
                call = call_of_record(record)
                if call is not None and evaluate([rule], call, now) is not None:
                    matches.append(record)
                    if len(matches) >= limit:
                        break
            if len(page) < page_size:
                break
            offset += page_size
        return matches

    async def prevailing_rules(self, rule: Rule, records: Iterable[HITLRecord]) -> dict[str, Verdict]:
        """For the records ``rule`` matches: ``hitl_id`` → the verdict of another rule in force that prevails over
        it (a deny or ask rule where ``rule`` allows, a deny where it asks). Absent: ``rule``'s effect stands."""
        in_force = await self.active_rules()
        now = time.time()
        held = {}
        for record in records:
            call = call_of_record(record)
            verdict = prevailing_verdict(rule, in_force, call, now) if call is not None else None
            if verdict is not None:
                held[str(record["hitl_id"])] = verdict
        return held

    async def settle_pending_by_rule(
        self, rule_id: str, *, limit: int = 1000, only: Collection[str] | None = None
    ) -> list[HITLRecord]:
        """Settle now the pending requests an allow or deny rule in force matches (the preview's "settle these").

        Each request is decided in its own compare-and-set transaction, by ``rule:<id>`` with its audit row and a
        hit: one a reviewer decided meanwhile keeps that decision. An ask rule settles nothing, and nor does a rule
        another deny or ask rule in force prevails over for that request (:func:`prevailing_verdict`). ``only``:
        settle no request outside these ids (the window settles exactly what its preview showed).
        :class:`HITLNotFound` when no rule with this id is in force.
        """
        rule = next((entry.rule for entry in await self.list_rules() if entry.rule.id == rule_id), None)
        if rule is None:
            raise HITLNotFound(f"no rule in force with id {rule_id!r}")
        if rule.effect == "ask":
            return []
        candidates = await self.preview_rule(rule, statuses=(HITLStatus.PENDING.value,), limit=limit)
        if only is not None:
            allowed = set(only)
            candidates = [record for record in candidates if record["hitl_id"] in allowed]

        def settle_one(tx: StoreTx, hitl_id: str) -> HITLRecord | None:
            current = tx.get_request(hitl_id)
            if current is None or current["status"] != HITLStatus.PENDING.value:
                return None
            call = call_of_record(current)
            now = time.time()
            settled = settlement_for(call, rules=[rule], now=now) if call is not None else None
            if settled is None or not settled.settles:
                return None
            assert call is not None
            if prevailing_verdict(rule, tx.active_policy_rules(now), call, now) is not None:
                return None  # another deny or ask rule in force covers it: the policy as a whole does not settle it
            decision = settled.decision(shown_arguments(current))
            assert decision.reviewer is not None
            decided = tx.settle(
                hitl_id, decision.to_user_response(), reviewer=decision.reviewer, message=decision.message
            )
            tx.record_rule_hit(rule.id)
            return decided

        settled: list[HITLRecord] = []
        for record in candidates:
            hitl_id = str(record["hitl_id"])
            decided = await self.write(lambda tx, hitl_id=hitl_id: settle_one(tx, hitl_id))  # type: ignore[misc]
            if decided is not None:
                settled.append(decided)
        return settled

    async def settle_by_rules(
        self, request: NewRequest, call: PolicyCall, *, title: str | None = None
    ) -> HITLRecord | None:
        """Settle a new call by the persistent rules, on the record, or return None to ask a human.

        An allow or deny rule creates ``request`` already decided by ``rule:<id>`` (with its audit row and the
        rule's hit) in one transaction; an ask rule, no rule, or an existing request with this id give None.
        ``call`` is the call as the rules judge it; ``title`` names the run when it is new.
        """
        check_request(dataclasses.asdict(request))
        rules = await self.active_rules()  # a plain read first: most calls meet no rule and need no write lock
        first = settlement_for(call, rules=rules) if rules else None
        if first is None or first.verdict is None or not first.settles:
            return None

        def work(tx: StoreTx) -> HITLRecord | None:  # again under the write lock: a rule may have changed
            if tx.get_request(request.hitl_id) is not None:
                return None
            now = time.time()
            rules = tx.active_policy_rules(now)
            settled = settlement_for(call, rules=rules, now=now) if rules else None
            verdict = settled.verdict if settled is not None and settled.settles else None
            if verdict is None:
                return None
            agent = request.agent_name
            tx.ensure_session(request.session_id, agent=agent, workspace=call.cwd, external=request.external)
            tx.ensure_invocation(
                request.invocation_id, request.session_id, agent=agent, prompt=title, external=request.external
            )
            arguments = request.data.get("arguments")
            return tx.settle_by_rule(request, verdict, arguments, ensure_parents=False)

        return await self.write(work)

    async def settle_by_waiver(
        self, request: NewRequest, call: PolicyCall, *, title: str | None = None
    ) -> HITLRecord | None:
        """Settle a new call an approve-for-session waiver of its session covers, on the record; None: ask a human.

        The request is created already approved by ``session-rule:<id>`` with its audit row, in one transaction,
        as the runtime's gate does. What settles the call is :func:`settlement_for`'s answer with the rules in
        force too: an ask rule keeps a waived call for a human, as on every other path. The waiver is matched by
        :meth:`SessionRule.matches` (a changed or compound shell command is not covered); questions and an
        existing request with this id give None.
        """
        if request.hitl_type != HITLType.TOOL_APPROVAL.value or not request.tool_name:
            return None
        check_request(dataclasses.asdict(request))
        arguments = call.arguments

        def covering(
            waivers: Iterable[tuple[int, SessionRule]], rules: Sequence[Rule]
        ) -> tuple[int, SessionRule] | None:
            settled = settlement_for(call, rules=rules, waivers=waivers) if waivers else None
            return settled.waiver if settled is not None else None

        # a plain read first: most calls have no waiver and need no write lock
        waivers = await self.run(self.store.session_rule_entries, request.session_id)
        if not waivers or covering(waivers, await self.active_rules()) is None:
            return None

        def work(tx: StoreTx) -> HITLRecord | None:  # again under the write lock: the waiver is read where it is used
            if tx.get_request(request.hitl_id) is not None:
                return None
            waiver = covering(tx.session_rule_entries(request.session_id), tx.active_policy_rules(time.time()))
            if waiver is None:
                return None
            agent = request.agent_name
            tx.ensure_session(request.session_id, agent=agent, workspace=call.cwd, external=request.external)
            tx.ensure_invocation(
                request.invocation_id, request.session_id, agent=agent, prompt=title, external=request.external
            )
            return tx.settle_by_waiver(request, waiver[0], waiver[1], arguments, ensure_parents=False)

        return await self.write(work)

    async def stale_owned_runs(self, states: Sequence[str], *, stale_after_ms: int) -> list[RunRecord]:
        """Runs in ``states`` whose owner has not sent a heartbeat for ``stale_after_ms`` (liveness sweeps)."""
        before = now_ms() - stale_after_ms
        return await self.run(self.store.stale_owned_runs, states, beat_before_ms=before)

    # -- approve-for-session settles its identical siblings (issue 14) --------------------------------------------
    async def settle_session_siblings(self, approved: HITLRecord) -> list[HITLRecord]:
        """Approve the pending requests of ``approved``'s session that ask for the same call, at once.

        A sibling is the same tool with identical arguments as shown, or (shell tools) a command the exact scope
        approve-for-session granted covers (``'git' status`` for ``git status``). Each is decided in its own
        compare-and-set transaction, validated like any decision (hash of its own shown arguments, its
        ``allowed_decisions``): one decided elsewhere meanwhile keeps that decision. Returns the ones approved.
        """
        tool = approved.get("tool_name")
        if not tool or approved.get("hitl_type") != HITLType.TOOL_APPROVAL.value:
            return []
        shown = shown_arguments(approved)
        digest = args_digest(shown)
        rule = rule_for(tool, shown) if is_shell_tool(tool) and isinstance(shown, dict) else None
        pending = await self.run(self.store.pending_records, session_id=approved["session_id"])

        def sibling(record: HITLRecord) -> bool:
            if record["hitl_id"] == approved["hitl_id"] or record.get("tool_name") != tool:
                return False
            if record.get("hitl_type") != HITLType.TOOL_APPROVAL.value:
                return False
            args = shown_arguments(record)
            if args_digest(args) == digest:
                return True
            return rule is not None and isinstance(args, dict) and rule.matches(tool, args)

        def approve_one(tx: StoreTx, hitl_id: str) -> HITLRecord | None:
            current = tx.get_request(hitl_id)
            if current is None or current["status"] != HITLStatus.PENDING.value or not sibling(current):
                return None
            decision = Decision(
                DecisionKind.APPROVE,
                message=f"approved for the session with {approved['hitl_id']}",
                args_sha256=args_digest(shown_arguments(current)),
                reviewer=self.reviewer,
            )
            try:
                validate_decision(current, decision)
            except DecisionError:
                return None  # it does not allow approve: left for a human
            return tx.settle(hitl_id, decision.to_user_response(), reviewer=self.reviewer, message=decision.message)

        settled: list[HITLRecord] = []
        for record in pending:
            if sibling(record):
                hitl_id = str(record["hitl_id"])
                decided = await self.write(lambda tx, hitl_id=hitl_id: approve_one(tx, hitl_id))  # type: ignore[misc]
                if decided is not None:
                    settled.append(decided)
        return settled

    async def assess_requests(self, hitl_ids: Sequence[str]) -> dict[str, Risk]:
        """The risk level and reasons of each request among ``hitl_ids`` (the window's risk chips).

        The records are read on the database thread and judged on a worker thread (the secret scan costs a
        little), so neither the loop nor the database waits on the other. A request that is not a tool call,
        or no longer exists, is left out.
        """
        wanted = list(dict.fromkeys(hitl_ids))
        records = await self.run(lambda: [self.store.get_request(hitl_id) for hitl_id in wanted])

        def judge() -> dict[str, Risk]:
            risks: dict[str, Risk] = {}
            for record in records:
                call = call_of_record(record) if record is not None else None
                if record is not None and call is not None:
                    risks[str(record["hitl_id"])] = assess(call)
            return risks

        return await asyncio.to_thread(judge)

    async def preview_inputs(self, hitl_id: str) -> PreviewInputs | None:
        """What one request's preview needs from the database (record, rules, waivers, workspace), in one call."""
        from reviewer_app.persistence.preview_inputs import read_inputs

        return await self.run(read_inputs, self.store, hitl_id)

    async def why_of(self, hitl_id: str) -> tuple[str, ...] | None:
        """Why ``hitl_id`` went to a person (``domain.why.why_asked``), without the preview's effects: the flat
        queue's tooltip. None when the request no longer exists."""
        inputs = await self.preview_inputs(hitl_id)
        if inputs is None:
            return None

        def judge(inputs: PreviewInputs) -> tuple[str, ...]:
            call = call_of_record(inputs.record)
            if call is not None and call.cwd is None and inputs.workspace is not None:
                call = dataclasses.replace(call, cwd=inputs.workspace)
            risk = assess(call) if call is not None else None
            return why_asked(
                inputs.record,
                rules=inputs.rules,
                expired_rules=inputs.expired_rules,
                session_rules=inputs.session_rules,
                risk=risk,
                now=time.time(),
            )

        return await asyncio.to_thread(judge, inputs)

    # -- operator views: statistics and the audit log's size (issue 19) ---------------------------------------
    async def decision_stats(self, *, since_s: int | None, until_s: int | None = None) -> DecisionStats:
        """Aggregates for the Statistics view over ``[since_s, until_s)`` (None: since the beginning), by SQL."""
        return await self.run(lambda: self.store.decision_stats(since_s=since_s, until_s=until_s))

    # -- the operator's habits: own numbers, rules worth making, rules to fix (issue 26) -------------------------
    async def decided_history(self, *, days: int | None = None, limit: int = 100_000) -> list[HITLRecord]:
        """Decided and expired requests, newest first (the last ``days`` days, at most ``limit``), a page at a time."""
        since = time.time() - days * 86_400 if days is not None else None
        decided = (HITLStatus.COMPLETED.value, HITLStatus.EXPIRED.value)
        found: list[HITLRecord] = []
        offset = 0
        while len(found) < limit:
            query = RequestQuery(statuses=decided, limit=HISTORY_PAGE, offset=offset, newest_first=True)
            page = await self.list_records(query)
            for record in page:
                if since is not None and float(record.get("created_at") or 0) < since:
                    return found
                found.append(record)
            if len(page) < HISTORY_PAGE:
                break
            offset += HISTORY_PAGE
        return found[:limit]

    async def operator_numbers(self, *, days: int | None = None, limit: int = 100_000) -> OperatorNumbers:
        """The operator's own numbers over the history (``domain.habits.operator_numbers``), off the loop."""
        records = await self.decided_history(days=days, limit=limit)
        return await asyncio.to_thread(operator_numbers, records)

    async def rule_advice(
        self, *, minimum: int = 5, days: int = 30, limit: int = 100_000
    ) -> tuple[list[Suggestion], list[LintFinding]]:
        """Rules the history argues for (``domain.habits.suggest_rules``: narrowest pattern, most approved first)
        and what is wrong with the rules in force (``lint_rules``: unused, shadowed, too wide), from one read of
        the history (reading is most of the cost), judged off the loop."""
        records = await self.decided_history(limit=limit)
        stored = await self.list_rules()
        entries = [(entry.rule, entry.hit_count, entry.last_hit_at) for entry in stored]
        now = time.time()

        def judge() -> tuple[list[Suggestion], list[LintFinding]]:
            active = [rule for rule, _hits, _last in entries]
            return suggest_rules(records, active, now, minimum=minimum), lint_rules(entries, records, now, days=days)

        return await asyncio.to_thread(judge)

    async def audit_count(self) -> int:
        """The number of rows in the decision log."""
        return await self.run(self.store.audit_row_count)

    # -- history (issue 18.4) ------------------------------------------------------------------------------
    async def history_page(
        self, query: HistoryQuery | None = None, *, after: HistoryCursor | None = None, limit: int = 100
    ) -> HistoryPage:
        """One page of decided requests, newest first, searched and filtered; pass ``page.next_cursor`` on.

        The search text is matched as literal word prefixes (full-text index: FTS5 on SQLite, tsvector on
        PostgreSQL), whatever it contains. Entries leave the arguments out; :meth:`history_entry` has them.
        """
        return await self.run(self.store.history_page, query or HistoryQuery(), after=after, limit=limit)

    async def history_entry(self, audit_id: int) -> HistoryEntry | None:
        """One decision with the arguments as shown and as edited when it was made, and its rule's pattern."""
        return await self.run(self.store.history_entry, audit_id)


def _settle_if_abandoned(tx: StoreTx, record: HITLRecord) -> HITLRecord | None:
    """In the caller's transaction: cancel the pending ``record`` as answered elsewhere when its hook is gone."""
    metadata = record.get("metadata")
    why = abandoned_by_hook(metadata)
    if why is None:
        return None
    return tx.settle(
        record["hitl_id"],
        None,
        status=HITLStatus.CANCELLED,
        reviewer=_withdrawn_by(record),
        decision=DecisionKind.CANCEL.value,
        message=answered_elsewhere(why),
    )


@dataclasses.dataclass(frozen=True, slots=True)
class _Abandoned:
    """What a decision's transaction returns when it found the request's hook gone and settled it instead."""

    record: HITLRecord


def _refuse_if_abandoned(result: HITLRecord | _Abandoned, attempted: str) -> HITLRecord:
    """After the commit: the decided record, or the refusal of a decision whose request's hook had answered."""
    if not isinstance(result, _Abandoned):
        return result
    conflict = HITLConflict(
        f"request {result.record['hitl_id']!r} was {ANSWERED_ELSEWHERE}: its hook already answered the agent "
        f"without a decision and is gone, so a decision now would contradict what the agent was told; "
        f"cannot {attempted} it",
        result.record,
    )
    conflict._decided_by = _withdrawn_by(result.record)
    raise conflict


def _withdrawn_by(record: HITLRecord) -> str:
    """Who a withdrawal for a gone hook is recorded as: the agent's system identity, as the watchdog's."""
    metadata = record.get("metadata")
    agent = metadata.get("agent") if isinstance(metadata, dict) else None
    return f"system:{agent if isinstance(agent, str) and agent else 'hook'}"


def validate_decision(record: HITLRecord, decision: Decision) -> None:
    """Check a decision against the request it decides; raises :class:`DecisionError`."""
    is_ask = record.get("hitl_type") == HITLType.ASK_USER.value
    if is_ask and decision.kind not in (DecisionKind.RESPOND, DecisionKind.REJECT, DecisionKind.STEER):
        raise DecisionError(f"an ask_user request is answered, not {decision.kind.value}d")
    allowed = (record.get("data") or {}).get("allowed_decisions")
    if isinstance(allowed, list) and decision.kind.value not in allowed:
        offered = ", ".join(str(kind) for kind in allowed) or "nothing"
        raise DecisionError(f"this request does not allow {decision.kind.value} (it allows {offered})")
    answers_for_tool = isinstance(allowed, list) and DecisionKind.RESPOND.value in allowed  # LangChain's "respond"
    if not is_ask and decision.kind is DecisionKind.RESPOND and record.get("tool_name") and not answers_for_tool:
        raise DecisionError("a tool approval is approved, edited, rejected or steered, not answered")
    shown = shown_arguments(record)
    decision.check_hash(shown)
    if decision.kind is DecisionKind.EDIT:
        schema = (record.get("data") or {}).get("schema")
        if isinstance(schema, dict):
            import jsonschema  # only edits need it: keeps ~40 ms of imports off the window's start

            try:
                jsonschema.validate(decision.edited_args, schema)
            except jsonschema.ValidationError as exc:
                where = "/".join(str(p) for p in exc.absolute_path) or "arguments"
                raise DecisionError(f"edited arguments are invalid at {where}: {exc.message}") from exc
