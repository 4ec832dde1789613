"""The runs board: runs grouped by state (waiting first), newest first inside a state, updated in place."""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterable
from pathlib import PurePath
from typing import Any

from PySide6.QtCore import QModelIndex, QObject, Qt
from PySide6.QtGui import QFont

from reviewer_app.domain.records import RunRecord
from reviewer_app.domain.runs import RunState
from reviewer_app.ui.common import theme
from reviewer_app.ui.common.texts import format_age, short_id
from reviewer_app.ui.detail.timeline import ACTIVE_NOT_KNOWN_TIP, active_known, active_text
from reviewer_app.ui.models.tree_model import ROOT_KEY, ModelIndex, TreeItemModel

RUN_ID_ROLE = Qt.ItemDataRole.UserRole + 1
STATE_ROLE = Qt.ItemDataRole.UserRole + 2
RUN_ROLE = Qt.ItemDataRole.UserRole + 3
EXTERNAL_ROLE = Qt.ItemDataRole.UserRole + 4
EXTERNAL_RUN_TIP = "external: run by an agent in another process (its requests are raised from there)"

# A run that finished "done" while one of its requests expired or was cancelled did not simply succeed:
# it gets its own group (and colour) instead of the green Done.
ENDED_EXPIRED = "expired"
ENDED_ABORTED = "aborted"
GROUP_ORDER: tuple[str, ...] = (
    RunState.WAITING.value,
    RunState.RUNNING.value,
    RunState.QUEUED.value,
    RunState.INTERRUPTED.value,
    RunState.FAILED.value,
    ENDED_ABORTED,
    ENDED_EXPIRED,
    RunState.DONE.value,
    RunState.CANCELLED.value,
)
GROUP_TITLES = {
    RunState.WAITING.value: "Waiting for review",
    RunState.RUNNING.value: "Running",
    RunState.QUEUED.value: "Queued",
    RunState.INTERRUPTED.value: "Interrupted",
    RunState.FAILED.value: "Failed",
    ENDED_ABORTED: "Aborted calls",
    ENDED_EXPIRED: "Expired requests",
    RunState.DONE.value: "Done",
    RunState.CANCELLED.value: "Cancelled",
}
GROUP_TIPS = {
    ENDED_ABORTED: "Finished, but some of their calls were aborted (their requests were cancelled)",
    ENDED_EXPIRED: "Finished, but some of their requests expired without a decision (the default applied)",
}


def board_state(run: RunRecord) -> str:
    """The group a run is listed under: its state, except a done run that had calls aborted or requests expire,
    and an outside agent's running run with a request pending: waiting for review, as the window's own runs are.

    An outside agent's hook asks from its own process and stores no state change for it (the hook's latency
    budget has no room for one more write): the pending count the board already reads is the fact.
    """
    if run.external and run.pending and run.state == RunState.RUNNING.value:
        return RunState.WAITING.value
    if run.state == RunState.DONE.value:
        if run.aborted:
            return ENDED_ABORTED
        if run.expired:
            return ENDED_EXPIRED
    return run.state


def state_words(run: RunRecord) -> str:
    """The run's state with the group the board lists it under when they differ ("running, waiting for review")."""
    shown = board_state(run)
    return run.state if shown == run.state else f"{run.state}, {GROUP_TITLES[shown].lower()}"


OUTSIDE_ID_CHARS = 20  # as the request header shows ids


def run_label(run: RunRecord) -> str:
    """The Run column: the agent first (operators triage by agent), then what tells its runs apart: an outside
    agent's project (the icon says it is external), the window's own run's id (their workspace is a directory
    Reviewer made), else an outside run's id. A narrow column cuts the end, so the agent stays."""
    agent = run.agent or "agent"
    if run.external and run.workspace:
        return f"{agent} · {PurePath(run.workspace).name or run.workspace}"
    if run.external:  # its id is all that tells it apart: 8 characters read "aider…un0" for every session's run
        return f"{agent} · {short_id(run.id, OUTSIDE_ID_CHARS)}"
    return f"{agent} · {short_id(run.id.removeprefix('inv_'), 8)}"


COL_RUN, COL_PROMPT, COL_PENDING, COL_STARTED, COL_ACTIVE = range(5)
HEADERS = ("Run", "Prompt", "Pending", "Started", "Active")


def _key(run: RunRecord) -> tuple[int, str]:
    """Newest first: negated creation time, then id (never changes for a run)."""
    return (-run.created_at, run.id)


class RunsModel(TreeItemModel):
    """State groups (fixed top-level rows) holding their runs; a state change moves a run between groups."""

    headers = HEADERS

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._groups: list[list[RunRecord]] = [[] for _ in GROUP_ORDER]
        self._keys: list[list[tuple[int, str]]] = [[] for _ in GROUP_ORDER]
        self._where: dict[str, int] = {}  # run id -> group row
        self._runs: dict[str, RunRecord] = {}
        self.now = time.time
        self._bold = QFont()
        self._bold.setBold(True)

    # -- content -------------------------------------------------------------------------
    def set_runs(self, runs: Iterable[RunRecord]) -> None:
        self.beginResetModel()
        self._groups = [[] for _ in GROUP_ORDER]
        self._keys = [[] for _ in GROUP_ORDER]
        self._where, self._runs = {}, {}
        for run in sorted(runs, key=_key):
            group = self._group_row(board_state(run))
            self._groups[group].append(run)
            self._keys[group].append(_key(run))
            self._where[run.id] = group
            self._runs[run.id] = run
        self.endResetModel()

    def apply_changes(self, runs: Iterable[RunRecord]) -> None:
        for run in runs:
            old = self._runs.get(run.id)
            if old == run:
                continue
            group = self._group_row(board_state(run))
            if old is not None and self._where[run.id] == group:
                row = bisect_left(self._keys[group], _key(run))
                self._groups[group][row] = run
                self._runs[run.id] = run
                self.dataChanged.emit(
                    self.index(row, 0, self.index(group, 0)), self.index(row, 4, self.index(group, 0))
                )
                continue
            if old is not None:
                self._remove(old)
            self._insert(run)

    def all_runs(self) -> list[RunRecord]:
        """Every run on the board (any state)."""
        return list(self._runs.values())

    def run(self, run_id: str) -> RunRecord | None:
        return self._runs.get(run_id)

    def index_for(self, run_id: str, column: int = 0) -> QModelIndex:
        group = self._where.get(run_id)
        run = self._runs.get(run_id)
        if group is None or run is None:
            return QModelIndex()
        row = bisect_left(self._keys[group], _key(run))
        return self.createIndex(row, column, group + 1)

    def count(self, state: RunState | str) -> int:
        """Runs listed under ``state`` (a run state, or ``expired`` / ``aborted``)."""
        return len(self._groups[self._group_row(str(state.value if isinstance(state, RunState) else state))])

    def _group_row(self, state: str) -> int:
        try:
            return GROUP_ORDER.index(state)
        except ValueError:
            return GROUP_ORDER.index(RunState.FAILED.value)

    def _insert(self, run: RunRecord) -> None:
        group = self._group_row(board_state(run))
        key = _key(run)
        row = bisect_left(self._keys[group], key)
        self.beginInsertRows(self.index(group, 0), row, row)
        self._groups[group].insert(row, run)
        self._keys[group].insert(row, key)
        self._where[run.id] = group
        self._runs[run.id] = run
        self.endInsertRows()
        self._group_changed(group)

    def _remove(self, run: RunRecord) -> None:
        group = self._where[run.id]
        row = bisect_left(self._keys[group], _key(run))
        self.beginRemoveRows(self.index(group, 0), row, row)
        del self._groups[group][row], self._keys[group][row]
        del self._where[run.id], self._runs[run.id]
        self.endRemoveRows()
        self._group_changed(group)

    def _group_changed(self, group: int) -> None:
        self.dataChanged.emit(self.index(group, 0), self.index(group, 0))

    # -- Qt model (index plumbing: TreeItemModel) ------------------------------------------
    # Keys: 0 the root, group row + 1 for a state group (the parent key of its runs); runs have no children.
    def child_total(self, key: int) -> int:
        return len(GROUP_ORDER) if key == ROOT_KEY else len(self._groups[key - 1])

    def child_key(self, parent_key: int, row: int) -> int | None:
        return row + 1 if parent_key == ROOT_KEY and 0 <= row < len(GROUP_ORDER) else None

    def place_of(self, key: int) -> tuple[int, int] | None:
        return (key - 1, ROOT_KEY)

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        flags = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        if index.internalId() != 0:
            flags |= Qt.ItemFlag.ItemNeverHasChildren
        return flags

    def _run_at(self, index: ModelIndex) -> RunRecord | None:
        if not index.isValid() or index.internalId() == 0:
            return None
        group = self._groups[index.internalId() - 1]
        return group[index.row()] if index.row() < len(group) else None

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        if index.internalId() == 0:
            state = GROUP_ORDER[index.row()] if index.row() < len(GROUP_ORDER) else None
            if state is None:
                return None
            if role == Qt.ItemDataRole.DisplayRole and index.column() == COL_RUN:
                return f"{GROUP_TITLES[state]} ({len(self._groups[index.row()])})"
            if role == Qt.ItemDataRole.FontRole:
                return self._bold
            if role == Qt.ItemDataRole.ForegroundRole and index.column() == COL_RUN:
                return theme.current().status_color(state)
            if role == Qt.ItemDataRole.ToolTipRole and state in GROUP_TIPS:
                return GROUP_TIPS[state]
            if role == STATE_ROLE:
                return state
            return None
        run = self._run_at(index)
        if run is None:
            return None
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if column == COL_RUN:
                return run_label(run)
            if column == COL_PROMPT:
                text = " ".join(
                    (run.error if run.state == RunState.FAILED.value and run.error else run.prompt or "").split()
                )
                return text[:200]
            if column == COL_PENDING:
                return str(run.pending) if run.pending else ""
            if column == COL_STARTED:
                return format_age(self.now() - run.created_at) + " ago"
            if column == COL_ACTIVE:
                return active_text(run)
            return None
        if role == Qt.ItemDataRole.DecorationRole and column == COL_RUN:
            return theme.icon("external" if run.external else "run")
        if role == Qt.ItemDataRole.ToolTipRole:
            lines = [
                f"{run.agent or 'agent'} run {run.id} ({state_words(run)})",
                f"session {run.session_id}",
                f"prompt: {run.prompt or ''}",
            ]
            if run.workspace:
                lines.insert(2, f"workspace {run.workspace}")
            if run.expired:
                lines.append(f"{run.expired} request(s) expired without a decision")
            if run.aborted:
                lines.append(f"{run.aborted} request(s) cancelled: their calls were aborted")
            if run.external:
                lines.append(EXTERNAL_RUN_TIP)
                if not active_known(run):
                    lines.append(ACTIVE_NOT_KNOWN_TIP)
            if run.error:
                lines.append(f"error: {run.error}")
            if run.parent_id:
                lines.append(f"continues {run.parent_id}")
            return "\n".join(lines)
        if role == Qt.ItemDataRole.ForegroundRole and column == COL_PENDING and run.pending:
            return theme.current().wait
        if role == Qt.ItemDataRole.AccessibleTextRole and column == COL_RUN:
            origin = "external " if run.external else ""
            return f"{origin}run of {run.agent} {board_state(run)}: {run.prompt or ''}"
        if role == EXTERNAL_ROLE:
            return run.external
        if role == RUN_ID_ROLE:
            return run.id
        if role == STATE_ROLE:
            return run.state
        if role == RUN_ROLE:
            return run
        return None
