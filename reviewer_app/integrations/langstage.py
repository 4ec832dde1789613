"""The langstage task board (langgraph-stream-parser 1.x is a shim over langstage-core) under review.

::

    from reviewer_app.integrations.langstage import ReviewedTaskStore, serve_decisions

    store = ReviewedTaskStore(InMemoryTaskStore(), db="reviews.db")     # any TaskStore
    runner = TaskRunner(SessionAdapter(graph=agent), store)
    await runner.start()
    decisions = asyncio.create_task(serve_decisions(runner, db="reviews.db"))
    task_id = await runner.enqueue(title="Tidy", prompt="Tidy my notes")

Every task shows on Reviewer's Runs board and follows the board (queued → running → waiting for review →
done/failed/cancelled). A task that stops at ``review_needed`` on ``HumanInTheLoopMiddleware``'s interrupt files one
request per action; once all are decided — in the window, by ``reviewer-app decide``, by a rule or a session's
waiver — :func:`serve_decisions` resumes it through ``TaskRunner.resume`` with LangChain's decisions
(:mod:`.langchain_hitl`, the mapping :mod:`.langgraph` uses too): approve and approve-for-session → approve, edit →
edit, reject → reject with its reason, steer → reject carrying the guidance, an answer → respond.

What the board cannot express: it holds one interrupt per task and LangChain decides per action, so each action
gets exactly the kinds its ``allowed_decisions`` name. The board lives in the ``TaskStore`` you give it and the
graph's place in its checkpointer: with in-memory ones (the defaults) nothing survives the process; the requests do,
and a durable store and saver make ``TaskRunner.start()`` requeue and resume.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Mapping
from typing import Any

from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.domain.runs import RunState
from reviewer_app.integrations.core import Database, ExternalCall, LazyClient, Outcome, stable_id
from reviewer_app.integrations.langchain_hitl import langchain_decision, reviewer_kinds
from reviewer_app.integrations.versions import require_version

DISTRIBUTION = "langstage-core"
SUPPORTED = ("1.0.0", "2")
"""Releases whose ``TaskRunner``/``TaskStore`` board was tried (langgraph-stream-parser 1.0.0 re-exports it)."""
BOARD_TO_RUN = {
    "queued": RunState.QUEUED,
    "ongoing": RunState.RUNNING,
    "review_needed": RunState.WAITING,
    "done": RunState.DONE,
    "failed": RunState.FAILED,
    "cancelled": RunState.CANCELLED,
}
"""The board's states as Reviewer's run states."""


class _Board:
    """What the store wrapper and the decision loop share: one client, the ids of a task's run and requests."""

    def __init__(self, db: Database, agent_name: str) -> None:
        self.agent_name = agent_name
        self.client = LazyClient(db, agent=agent_name).get

    @staticmethod
    def ids(task: Mapping[str, Any]) -> tuple[str, str]:
        """The Reviewer session and run of a task (its thread, and the task itself)."""
        return f"langstage-{task.get('thread_id') or task['task_id']}", stable_id("langstage", str(task["task_id"]))

    def calls(self, task: Mapping[str, Any], round_: int) -> list[tuple[ExternalCall, list[str]]]:
        """The requests of a task's interrupt, each with the LangChain decisions its action allows."""
        interrupt = task.get("interrupt") if isinstance(task.get("interrupt"), Mapping) else {}
        assert isinstance(interrupt, Mapping)
        actions = [a for a in interrupt.get("action_requests") or [] if isinstance(a, Mapping)]
        configs = [c for c in interrupt.get("review_configs") or [] if isinstance(c, Mapping)]
        session_id, invocation_id = self.ids(task)
        calls = []
        for index, action in enumerate(actions):
            name = str(action.get("name") or action.get("action") or "")
            config = next((c for c in configs[index:] + configs if c.get("action_name") == name), {})
            allowed = [
                str(kind) for kind in config.get("allowed_decisions") or interrupt.get("allowed_decisions") or ()
            ]
            call = ExternalCall(
                hitl_id=stable_id("langstage", str(task["task_id"]), str(round_), str(index)),
                agent=self.agent_name,
                session_id=session_id,
                invocation_id=invocation_id,
                tool_name=name,
                arguments=dict(action.get("args") or {}),
                description=str(action.get("description") or "") or None,
                allowed_decisions=reviewer_kinds(allowed),
                title=str(task.get("title") or "") or None,
                metadata={"task_id": task["task_id"], "round": round_, "index": index},
            )
            calls.append((call, allowed))
        return calls


class ReviewedTaskStore:
    """A ``TaskStore`` that mirrors its tasks on Reviewer's Runs board and files each review as requests."""

    def __init__(self, inner: Any, *, db: Database, agent_name: str = "langstage") -> None:
        require_version(DISTRIBUTION, *SUPPORTED)
        self._inner = inner
        self._board = _Board(db, agent_name)

    async def setup(self) -> None:
        await self._inner.setup()

    async def create(self, task: Any) -> Any:
        created = await self._inner.create(task)
        session_id, invocation_id = self._board.ids(task)
        title = str(task.get("title") or task.get("prompt") or "") or None
        await self._board.client().register_run(session_id=session_id, invocation_id=invocation_id, title=title)
        return created

    async def get(self, task_id: str) -> Any:
        return await self._inner.get(task_id)

    async def list(self, *, state: str | None = None, parent_id: str | None = None) -> Any:
        return await self._inner.list(state=state, parent_id=parent_id)

    async def claim_next(self) -> Any:
        task = await self._inner.claim_next()
        if task is not None:
            await self._mirror(task)
        return task

    async def update(self, task_id: str, **fields: Any) -> Any:
        if "state" in fields:  # the Runs board first: nobody sees a state (a finished task) before the board has it
            current = await self._inner.get(task_id)
            if current is not None:
                await self._mirror({**current, **fields})
        task = await self._inner.update(task_id, **fields)
        if task is not None and fields.get("state") == "review_needed":
            await self._file_review(task)
        return task

    async def requeue_orphans(self) -> int:
        return int(await self._inner.requeue_orphans())

    async def append_events(self, task_id: str, events: builtins.list[dict[str, Any]]) -> None:
        await self._inner.append_events(task_id, events)

    async def get_events(self, task_id: str) -> builtins.list[dict[str, Any]]:
        return list(await self._inner.get_events(task_id))

    async def _mirror(self, task: Mapping[str, Any]) -> None:
        state = BOARD_TO_RUN.get(str(task.get("state")))
        if state is not None:
            error = str(task.get("error") or "") or None
            await self._board.client().set_run_state(self._board.ids(task)[1], state, error=error)

    async def _file_review(self, task: Mapping[str, Any]) -> None:
        round_ = await _round(self._inner, str(task["task_id"]))
        for call, _ in self._board.calls(task, round_):
            await self._board.client().submit(call)


async def resume_decided(runner: Any, *, db: Database, agent_name: str = "langstage") -> list[str]:
    """One pass over the board: every ``review_needed`` task whose requests are all decided is resumed with
    their decisions (``TaskRunner.resume``). Returns the ids of the tasks resumed."""
    board = _Board(db, agent_name)
    resumed = []
    for task in await runner.store.list(state="review_needed"):
        round_ = await _round(runner.store, str(task["task_id"]))
        decisions = []
        for call, allowed in board.calls(task, round_):
            record = await board.client().submit(call)  # filed already, or now if the process died in between
            if record["status"] == HITLStatus.PENDING.value:
                break
            decisions.append(langchain_decision(Outcome.from_record(record), str(call.tool_name), allowed))
        else:
            if decisions and await runner.resume(task["task_id"], decisions):
                resumed.append(str(task["task_id"]))
    return resumed


async def serve_decisions(
    runner: Any, *, db: Database, agent_name: str = "langstage", poll_interval: float = 0.1
) -> None:
    """Resume decided tasks until cancelled (run it as a task next to the runner)."""
    require_version(DISTRIBUTION, *SUPPORTED)
    while True:
        await resume_decided(runner, db=db, agent_name=agent_name)
        await asyncio.sleep(poll_interval)


async def _round(store: Any, task_id: str) -> int:
    """Which interrupt of the task this is (its requests are keyed by it): the board keeps no id of its own."""
    events = await store.get_events(task_id)
    return max(0, sum(1 for event in events if event.get("type") == "interrupt") - 1)
