"""The Runs tab: the runs board and what an operator can do to a run (start, cancel, retry, abort, follow up)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeyEvent, QKeySequence, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QHBoxLayout,
    QHeaderView,
    QMessageBox,
    QPushButton,
    QStyle,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from reviewer_app.domain.records import RunRecord
from reviewer_app.domain.runs import RunState
from reviewer_app.ui.common.buttons import named_button
from reviewer_app.ui.common.keepers import DialogKeeper, TaskKeeper
from reviewer_app.ui.detail.pane import DetailPane
from reviewer_app.ui.dialogs.new_run import NewRunDialog
from reviewer_app.ui.dialogs.submit import TextDialog
from reviewer_app.ui.runs.model import (
    COL_ACTIVE,
    COL_PENDING,
    COL_PROMPT,
    COL_RUN,
    COL_STARTED,
    RUN_ROLE,
    RunsModel,
    run_label,
)
from reviewer_app.ui.window.live import LiveController

if TYPE_CHECKING:
    from reviewer_app.runtime.runner import Runtime

STATUS_MS = 4000
CHECKING = "checking whether the runtime would accept it…"
NO_RUN_SELECTED = "No run selected. Pick one (j/k or the mouse) to see its timeline; Ctrl+N starts a new run."
PROMPT_CHARS = 160
RUN_COLUMN_PX = (120, 160)
"""The Run column's width: at least enough for an agent and a short id, widened to the longest label (agent and
project) up to the second figure or :data:`RUN_COLUMN_SHARE` of the room it shares with the prompt, whichever is
more: the prompt keeps about 90 px at 1,024 px, and at 1,920 px "external-python-agent · payments-service" is whole
with 250 px of prompt. The prompt gets the rest."""
RUN_COLUMN_SHARE = 0.6


def run_title(run: RunRecord) -> str:
    """The run in words: its prompt (short), its agent and its id."""
    prompt = " ".join((run.prompt or "").split())
    if len(prompt) > PROMPT_CHARS:
        prompt = prompt[: PROMPT_CHARS - 1] + "…"
    return f"“{prompt}” ({run.agent or 'agent'} run {run.id})" if prompt else f"{run.agent or 'agent'} run {run.id}"


class RunsView(QTreeView):
    """The runs board's tree: letters are commands (the window's decision keys), never type-ahead.

    Signals:
        resized(): its width changed (the Run column's share of it is worked out again).
    """

    resized = Signal()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self.resized.emit()

    def keyboardSearch(self, search: str) -> None:
        """No type-ahead: a letter typed here is a shortcut, not a search."""


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
        self.new_button = named_button("New run…", "newRunButton", "Start an agent run", accessible="New run")
        self.cancel_button = named_button("Cancel", "cancelRunButton", "Stop the run", accessible="Cancel run")
        self.retry_button = named_button(
            "Retry", "retryRunButton", "Run a failed run again, or re-run an interrupted call", accessible="Retry run"
        )
        self.abort_button = named_button(
            "Abort calls",
            "abortRunButton",
            "Give up the calls a crash interrupted",
            accessible="Abort interrupted calls",
        )
        self.follow_up_button = named_button(
            "Follow-up…", "followUpButton", "Continue a finished run's conversation", accessible="Follow up"
        )
        self.cancel_action = self._action("&Cancel run…", "Delete", "cancelRunAction", self.cancel_selected)
        self.retry_action = self._action("&Retry run", "Ctrl+R", "retryRunAction", self.retry_selected)
        self.abort_action = self._action(
            "&Abort interrupted calls", "Ctrl+Shift+Delete", "abortRunAction", self.abort_selected
        )
        self.follow_up_action = self._action("&Follow up…", "Ctrl+U", "followUpAction", self.open_follow_up)
        self.run_actions = [self.cancel_action, self.retry_action, self.abort_action, self.follow_up_action]
        self._confirming: QMessageBox | None = None
        self._cancelling: set[str] = set()
        self._retry_verdicts: dict[tuple[str, str, int], str | None] = {}
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
        # Seen at 1,024 px: 170 px of run id left the prompt (what the run is doing) about 50 px.
        self.view.header().resizeSection(COL_RUN, RUN_COLUMN_PX[0])
        for column, width in ((COL_PENDING, 58), (COL_STARTED, 72), (COL_ACTIVE, 62)):
            self.view.header().resizeSection(column, width)  # the prompt gets the rest of the width
        self.model.modelReset.connect(self.view.expandAll)
        self.view.resized.connect(self._fit_run_column)
        self._tidy_pending = False
        for changed in (self.model.modelReset, self.model.rowsInserted, self.model.rowsRemoved):
            changed.connect(self._schedule_tidy)
        layout.addWidget(self.view, 1)

        self.view.selectionModel().currentChanged.connect(self._on_current)
        self.new_button.clicked.connect(self.open_new_run)
        for button, action in (
            (self.cancel_button, self.cancel_action),
            (self.retry_button, self.retry_action),
            (self.abort_button, self.abort_action),
            (self.follow_up_button, self.follow_up_action),
        ):
            button.clicked.connect(action.trigger)
            button.setToolTip(
                f"{button.toolTip()} ({action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)})"
            )
            button.setProperty("baseTip", button.toolTip())
        self.addActions(self.run_actions)
        self.view.addActions(self.run_actions)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        live.runsLoaded.connect(self.model.set_runs)
        live.runsChanged.connect(self.on_runs_changed)
        self.update_buttons()

    def _action(self, text: str, keys: str, name: str, slot: Callable[[], None]) -> QAction:
        """A run action: a button, the board's context menu and a key (listed in the keymap by its text)."""
        action = QAction(text, self)
        action.setObjectName(name)
        action.setShortcut(QKeySequence(keys))
        action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)  # only on the Runs tab
        action.triggered.connect(slot)
        return action

    def set_runtime(self, runtime: Runtime | None) -> None:
        self.runtime = runtime
        self._retry_verdicts.clear()
        self.update_buttons()

    # -- the board --------------------------------------------------------------------------------
    def selected_run(self) -> RunRecord | None:
        index = self.view.currentIndex()
        run = index.siblingAtColumn(0).data(RUN_ROLE) if index.isValid() else None
        return run if isinstance(run, RunRecord) else None

    def _schedule_tidy(self, *_args: object) -> None:
        """Tidy once after a burst of row changes: each hide/span change makes the view lay out every row again,
        and doing it per inserted run held the GUI thread for up to 1.2 s under 100 concurrent runs
        (bench/ui_load.py)."""
        if not self._tidy_pending:
            self._tidy_pending = True
            QTimer.singleShot(0, self._tidy_groups)

    def _tidy_groups(self) -> None:
        """Empty state groups are hidden; a group's title spans the row instead of being cut to the first column."""
        self._tidy_pending = False
        root = QModelIndex()
        for row in range(self.model.rowCount(root)):
            group = self.model.index(row, 0, root)
            if not self.view.isFirstColumnSpanned(row, root):
                self.view.setFirstColumnSpanned(row, root, True)
            hidden = self.model.rowCount(group) == 0
            if self.view.isRowHidden(row, root) != hidden:
                self.view.setRowHidden(row, root, hidden)
        self._fit_run_column()

    def _fit_run_column(self) -> None:
        """Fit the Run column to its longest label (within :data:`RUN_COLUMN_PX`, or its share of a wider board);
        measured from the model, as the view measures nothing while its tab is behind another."""
        low, high = RUN_COLUMN_PX
        others = sum(self.view.header().sectionSize(column) for column in (COL_PENDING, COL_STARTED, COL_ACTIVE))
        high = max(high, int((self.view.viewport().width() - others) * RUN_COLUMN_SHARE))
        metrics = self.view.fontMetrics()
        text = max((metrics.horizontalAdvance(run_label(run)) for run in self.model.all_runs()), default=0)
        icon = self.view.style().pixelMetric(QStyle.PixelMetric.PM_SmallIconSize)
        chrome = 2 * self.view.indentation() + icon + 16  # the group's indent, the icon, the margins
        wanted = min(max(text + chrome, low), high)
        if wanted != self.view.header().sectionSize(COL_RUN):
            self.view.header().resizeSection(COL_RUN, wanted)

    def _on_current(self, _current: QModelIndex, _previous: QModelIndex) -> None:
        self.update_buttons()
        if self.active:
            self.show_current()

    def show_current(self) -> None:
        """Show the selected run's timeline (the tab is in front)."""
        run = self.selected_run()
        if run is None:
            self.detail.show_empty(NO_RUN_SELECTED)
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
        """j/k on the board: the next or previous row, as the arrow keys would.

        The board is tidied first if a change is waiting for it: a run that has just moved into an empty group sits
        in a hidden row until then, and the arrow keys pass hidden rows by (the key would be lost)."""
        if self._tidy_pending:
            self._tidy_groups()
        key = Qt.Key.Key_Down if step > 0 else Qt.Key.Key_Up
        for _ in range(self.model.rowCount() + 1):  # group rows are passed over: j/k go from run to run
            before = self.view.currentIndex()
            QApplication.sendEvent(self.view, QKeyEvent(QEvent.Type.KeyPress, key, Qt.KeyboardModifier.NoModifier))
            if self.selected_run() is not None or self.view.currentIndex() == before:
                return

    def update_buttons(self) -> None:
        run = self.selected_run()
        has_runtime = self.runtime is not None
        state = RunState(run.state) if run is not None else None
        self.new_button.setEnabled(has_runtime)
        if not has_runtime:
            self.new_button.setToolTip("No agent runtime in this window")
        cancellable = state is not None and not state.finished and run is not None and run.id not in self._cancelling
        self._enable(self.cancel_action, self.cancel_button, has_runtime and cancellable)
        retry_refusal = self._retry_refusal(run) if has_runtime and run is not None else "no run selected"
        self._enable(self.retry_action, self.retry_button, retry_refusal is None, retry_refusal)
        self._enable(self.abort_action, self.abort_button, has_runtime and state is RunState.INTERRUPTED)
        self._enable(self.follow_up_action, self.follow_up_button, has_runtime and state is not None and state.finished)

    def _enable(self, action: QAction, button: QPushButton, enabled: bool, refusal: str | None = None) -> None:
        action.setEnabled(enabled)
        button.setEnabled(enabled)
        tip = str(button.property("baseTip") or button.toolTip())
        if refusal and refusal != "no run selected" and not enabled:
            tip += f"\nNot possible now: {refusal}"
        if button.toolTip() != tip:
            button.setToolTip(tip)

    def _retry_refusal(self, run: RunRecord) -> str | None:
        """Why Retry would be refused for ``run`` (the runtime's own answer, asked once per state of the run)."""
        if run.state not in (RunState.FAILED.value, RunState.INTERRUPTED.value):
            return f"run {run.id} is {run.state}; only a failed or interrupted run can be retried"
        key = (run.id, run.state, run.updated_at_ms)
        if key not in self._retry_verdicts:
            self._retry_verdicts[key] = CHECKING
            runtime = self.runtime
            if runtime is not None:
                self.tasks.spawn(self._ask_retry(runtime, key))
        return self._retry_verdicts[key]

    async def _ask_retry(self, runtime: Runtime, key: tuple[str, str, int]) -> None:
        try:
            verdict = await runtime.retry_refusal(key[0])
        except Exception as exc:
            verdict = f"cannot tell: {exc}"
        self._retry_verdicts[key] = verdict
        self.update_buttons()

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
        """Ask first, naming the run; the answer cancels the run it was asked about, whatever is selected by then."""
        run = self.selected_run()
        if run is None or self.runtime is None or RunState(run.state).finished or run.id in self._cancelling:
            return
        if self._confirming is not None:  # a second click while the first question is open: same question
            self._confirming.activateWindow()
            return
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Cancel run",
            f"Cancel {run_title(run)}?\n\nThe agent stops and its pending requests are cancelled.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            self,
        )
        box.setObjectName("cancelRunConfirm")
        box.setDefaultButton(QMessageBox.StandardButton.No)
        box.setEscapeButton(QMessageBox.StandardButton.No)
        yes = box.button(QMessageBox.StandardButton.Yes)
        yes.setText("Cancel the run")
        box.button(QMessageBox.StandardButton.No).setText("Keep it running")
        self._confirming = box

        def answered(_result: int) -> None:
            self._confirming = None
            if box.clickedButton() is yes:
                self._cancel(run)

        box.finished.connect(answered)
        self.dialogs.open(box)

    def _cancel(self, run: RunRecord) -> None:
        self._cancelling.add(run.id)
        self.update_buttons()

        async def cancel(runtime: Runtime, target: RunRecord) -> None:
            try:
                await runtime.cancel_run(target.id)
            finally:
                self._cancelling.discard(target.id)

        self._act("cancel", cancel, run)

    def retry_selected(self) -> None:
        run = self.selected_run()
        if run is not None and run.state == RunState.INTERRUPTED.value:
            self._act("re-run", lambda runtime, r: runtime.rerun_or_abort(r.id, "rerun"))
        else:
            self._act("retry", lambda runtime, r: runtime.retry_run(r.id))

    def abort_selected(self) -> None:
        self._act("abort the interrupted calls of", lambda runtime, r: runtime.rerun_or_abort(r.id, "abort"))

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
