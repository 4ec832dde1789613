"""What the parts of ``Runtime`` share: its attributes, and the small helpers every part calls.

``Runtime`` (runner.py) is assembled from layers, one concept each: turns.py drives one run,
supervision.py watches over all of them, runner.py is the public API. The attributes are declared
here, once, so each layer type-checks on its own; ``Runtime.__init__`` sets them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.runtime.agents import AgentCatalog, AgentSpec
from reviewer_app.runtime.run_state import _Run
from reviewer_app.runtime.tools import ToolContext, ToolRegistry
from reviewer_app.runtime.watcher import DecisionWatcher


class RuntimeCore:
    """The state one ``Runtime`` keeps, shared by its layers (set by ``Runtime.__init__``)."""

    backend: SQLHITLBackend
    catalog: AgentCatalog
    workspaces_dir: Path
    max_concurrent_runs: int
    owner: str
    tools: ToolRegistry
    expiry_interval_s: float
    recovery_interval_s: float | None
    heartbeat_interval_s: float
    idle_limits_s: tuple[float, float]
    _idle_swept_at: float
    _slots: asyncio.Semaphore | None
    _watcher: DecisionWatcher | None
    _tasks: dict[str, asyncio.Task[None]]
    _driven: dict[str, _Run]  # the runs of _tasks: whose agent (the operator's configuration) asked what
    _service_tasks: list[asyncio.Task[None]]
    _started: bool
    _process_groups: dict[str, set[int]]  # per run: shell tools running now (see liveness.py)
    _given_up: dict[str, str]  # runs whose state the database could not record (see RunDriver._give_up)

    def active_runs(self) -> list[str]:
        """Invocations this runtime is driving right now (running, queued for a slot or waiting)."""
        return [inv for inv, task in self._tasks.items() if not task.done()]

    def _tool_context(self, spec: AgentSpec, workspace: Path, session_id: str, invocation_id: str) -> ToolContext:
        return ToolContext(
            workspace=workspace,
            session_id=session_id,
            invocation_id=invocation_id,
            shell_timeout_s=spec.shell_timeout_s,
            process_groups=self._process_groups.setdefault(invocation_id, set()),
        )

    def _require_started(self) -> None:
        if not self._started or self._slots is None or self._watcher is None:
            raise RuntimeError("the runtime is not started (await runtime.start() first)")
