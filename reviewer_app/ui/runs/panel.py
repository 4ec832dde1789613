"""The Runs tab: the runs board and what an operator can do to a run (start, cancel, retry, abort, follow up)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QModelIndex, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QHBoxLayout,
    QHeaderView,
    QPushButton,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from reviewer_app.domain.records import RunRecord
from reviewer_app.domain.runs import RunState
from reviewer_app.ui.decision_dialogs import NewRunDialog, TextDialog
from reviewer_app.ui.detail.pane import DetailPane
from reviewer_app.ui.keepers import DialogKeeper, TaskKeeper
from reviewer_app.ui.live import LiveController
from reviewer_app.ui.runs.model import COL_PROMPT, RUN_ROLE, RunsModel

if TYPE_CHECKING:
    from reviewer_app.runtime.runner import Runtime

STATUS_MS = 4000


class RunsView(QTreeView):
    """The runs board's tree: letters are commands (the window's decision keys), never type-ahead."""

    def keyboardSearch(self, search: str) -> None:
        """No type-ahead: a letter typed here is a shortcut, not a search."""


def _button(text: str, name: str, accessible: str, tip: str) -> QPushButton:
    button = QPushButton(text)
    button.setObjectName(name)
    button.setAccessibleName(accessible)
    button.setToolTip(tip)
    return button


class RunsPanel(QWidget):
    """The runs board with its action buttons; shows the selected run's timeline in the detail pane.

    Run actions need the agent runtime, which the app attaches after the first screen
    (:meth:`set_runtime`); until then the buttons are disabled. ``active`` is False while
    another tab is in front.

    Signals:
        failed(str): an action failed; the message is for the banner.
        message(str): an action went through; the message is for the status bar.
    """

    failed = Signal(str)
    message = Signal(str)

    def __init__(
        self,
        live: LiveController,
        detail: DetailPane,
        tasks: TaskKeeper,
        dialogs: DialogKeeper,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.live = live
        self.detail = detail
        self.tasks = tasks
        self.dialogs = dialogs
        self.runtime: Runtime | None = None
        self.active = False
        self.model = RunsModel(self)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        bar = QHBoxLayout()
        self.new_button = _button("New run…", "newRunButton", "New run", "Start an agent run")
        self.cancel_button = _button("Cancel", "cancelRunButton", "Cancel run", "Stop the run")
        self.retry_button = _button(
            "Retry", "retryRunButton", "Retry run", "Run a failed run again, or re-run an interrupted call"
        )
        self.abort_button = _button(
            "Abort calls", "abortRunButton", "Abort interrupted calls", "Give up the calls a crash interrupted"
        )
        self.follow_up_button = _button(
            "Follow-up…", "followUpButton", "Follow up", "Continue a finished run's conversation"
        )
        for button in (
            self.new_button,
            self.cancel_button,
            self.retry_button,
            self.abort_button,
            self.follow_up_button,
        ):
            bar.addWidget(button)
        bar.addStretch(1)
        layout.addLayout(bar)
        self.view = RunsView()
        self.view.setObjectName("runsView")
        self.view.setAccessibleName("Runs")
        self.view.setUniformRowHeights(True)
        self.view.setAllColumnsShowFocus(True)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setModel(self.model)
        self.view.header().setSectionResizeMode(COL_PROMPT, QHeaderView.ResizeMode.Stretch)
        self.view.header().setStretchLastSection(False)
        self.view.header().resizeSection(0, 170)
        self.model.modelReset.connect(self.view.expandAll)
        layout.addWidget(self.view, 1)

        self.view.selectionModel().currentChanged.connect(self._on_current)
        self.new_button.clicked.connect(self.open_new_run)
        self.cancel_button.clicked.connect(self.cancel_selected)
        self.retry_button.clicked.connect(self.retry_selected)
        self.abort_button.clicked.connect(self.abort_selected)
        self.follow_up_button.clicked.connect(self.open_follow_up)
        live.runsLoaded.connect(self.model.set_runs)
        live.runsChanged.connect(self.on_runs_changed)
        self.update_buttons()

    def set_runtime(self, runtime: Runtime | None) -> None:
        self.runtime = runtime
        self.update_buttons()

    # -- the board --------------------------------------------------------------------------------
    def selected_run(self) -> RunRecord | None:
        index = self.view.currentIndex()
        run = index.siblingAtColumn(0).data(RUN_ROLE) if index.isValid() else None
        return run if isinstance(run, RunRecord) else None

    def _on_current(self, _current: QModelIndex, _previous: QModelIndex) -> None:
        self.update_buttons()
        if self.active:
            self.show_current()

    def show_current(self) -> None:
        """Show the selected run's timeline (the tab is in front)."""
        run = self.selected_run()
        if run is None:
            self.detail.show_empty("Select a run to see its timeline.")
            self.detail.decision_bar.hide()
            self.live.watch_invocation(None)
            return
        self.detail.show_run(run)
        self.live.watch_invocation(run.id)

    def on_runs_changed(self, runs: list[RunRecord]) -> None:
        self.model.apply_changes(runs)
        shown = self.detail.run_record
        if shown is not None:
            for run in runs:
                if run.id == shown.id:
                    self.detail.update_run(run)
        self.update_buttons()

    def move_selection(self, step: int) -> None:
        """j/k on the board: the next or previous row, as the arrow keys would."""
        key = Qt.Key.Key_Down if step > 0 else Qt.Key.Key_Up
        QApplication.sendEvent(self.view, QKeyEvent(QEvent.Type.KeyPress, key, Qt.KeyboardModifier.NoModifier))

    def update_buttons(self) -> None:
        run = self.selected_run()
        has_runtime = self.runtime is not None
        state = RunState(run.state) if run is not None else None
        self.new_button.setEnabled(has_runtime)
        if not has_runtime:
            self.new_button.setToolTip("No agent runtime in this window")
        self.cancel_button.setEnabled(has_runtime and state is not None and not state.finished)
        self.retry_button.setEnabled(has_runtime and state in (RunState.FAILED, RunState.INTERRUPTED))
        self.abort_button.setEnabled(has_runtime and state is RunState.INTERRUPTED)
        self.follow_up_button.setEnabled(has_runtime and state is not None and state.finished)

    # -- actions ----------------------------------------------------------------------------------
    def open_new_run(self) -> None:
        runtime = self.runtime
        if runtime is None:
            self.failed.emit("This window has no agent runtime: it cannot start runs.")
            return
        dialog = NewRunDialog(list(runtime.agents), self)
        dialog.submitted.connect(lambda agent, prompt: self.tasks.spawn(self._start_run(runtime, agent, prompt)))
        self.dialogs.open(dialog)

    async def _start_run(self, runtime: Runtime, agent: str, prompt: str) -> None:
        try:
            invocation_id = await runtime.start_run(agent, prompt)
        except Exception as exc:
            self.failed.emit(f"Could not start the run: {exc}")
            return
        self.message.emit(f"Started {agent} run {invocation_id}")

    def _act(
        self, what: str, action: Callable[[Runtime, RunRecord], Awaitable[object]], run: RunRecord | None = None
    ) -> None:
        """Apply ``action`` to ``run`` (default: the run selected now, not the one selected when the task runs)."""
        run = run or self.selected_run()
        runtime = self.runtime
        if run is None or runtime is None:
            return

        async def act() -> None:
            try:
                result = await action(runtime, run)
            except Exception as exc:
                self.failed.emit(f"Could not {what} run {run.id}: {exc}")
                return
            suffix = f": new run {result}" if isinstance(result, str) else ""
            self.message.emit(f"{what.capitalize()} {run.id}{suffix}")

        self.tasks.spawn(act())

    def cancel_selected(self) -> None:
        self._act("cancel", lambda runtime, run: runtime.cancel_run(run.id))

    def retry_selected(self) -> None:
        run = self.selected_run()
        if run is not None and run.state == RunState.INTERRUPTED.value:
            self._act("re-run", lambda runtime, r: runtime.resolve_interrupted(r.id, "rerun"))
        else:
            self._act("retry", lambda runtime, r: runtime.retry_run(r.id))

    def abort_selected(self) -> None:
        self._act("abort the interrupted calls of", lambda runtime, r: runtime.resolve_interrupted(r.id, "abort"))

    def open_follow_up(self) -> None:
        run = self.selected_run()
        if run is None or self.runtime is None:
            return
        dialog = TextDialog(
            "Follow-up",
            f"Continue the conversation of run {run.id}",
            "Start follow-up",
            required=True,
            object_name="followUpDialog",
            parent=self,
        )
        dialog.submitted.connect(  # the run the dialog was opened for, whatever is selected by then
            lambda prompt: self._act("follow up", lambda runtime, r: runtime.follow_up(r.id, prompt), run)
        )
        self.dialogs.open(dialog)
