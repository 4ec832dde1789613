"""The detail pane: what the selected request asks, how the run got there, and the decision buttons.

The full record (possibly megabytes of arguments) is fetched only for the selected
request, and everything heavy about it is computed on a worker thread in two steps: what a
decision needs on screen (the hash of what is shown, the pretty text, the risk but for the
secret scan), then the checks that may take longer (the secret scan, the write_file diff),
while the risk chip says it is still checking. The secrets found are remembered per request
and hash (stored arguments never change).
"""

from __future__ import annotations

import asyncio
import html
import json
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import (
    QAction,
    QGuiApplication,
    QKeySequence,
)
from PySide6.QtWidgets import (
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from reviewer_app.domain.hitl import HITLRecord, HITLStatus, HITLType
from reviewer_app.domain.records import RequestSummary, RunRecord
from reviewer_app.domain.waivers import describe_session_approval
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.common import theme
from reviewer_app.ui.common.buttons import named_button
from reviewer_app.ui.common.flow_layout import FlowLayout
from reviewer_app.ui.common.screen_fit import scrolling_column
from reviewer_app.ui.detail.checks import RequestChecker
from reviewer_app.ui.detail.diff_highlighter import DiffHighlighter
from reviewer_app.ui.detail.explain import ExplainSection
from reviewer_app.ui.detail.header import DetailHeader
from reviewer_app.ui.detail.headline import HeadlineView, headline_of
from reviewer_app.ui.detail.json_view import JsonPanel, format_json, monospace_font
from reviewer_app.ui.detail.prepared import WRITE_TOOLS, PreparedRequest, needs_diff, prepare_request
from reviewer_app.ui.detail.risk_chip import CHECKING, RiskChip
from reviewer_app.ui.detail.settled import settled_phrase
from reviewer_app.ui.detail.strip import TimelineStrip
from reviewer_app.ui.detail.timeline import TimelineModel, TimelineView

DIFF_PENDING = "# Working out the diff…"
HOLD_PAINT_MS = 100
"""At most how long the pane keeps its last picture while the selected request is read (see ``_hold_paint``)."""
COMMAND_KEYS = ("command", "cmd")


def command_of(arguments: Any) -> str | None:
    """The shell command of a call (run_shell, Bash...), for the clipboard; None for other calls."""
    if isinstance(arguments, dict):
        for key in COMMAND_KEYS:
            value = arguments.get(key)
            if isinstance(value, str) and value.strip():
                return value
    return None


def _button(text: str, name: str, accessible: str, tip: str) -> QPushButton:
    button = named_button(text, name, tip, accessible)
    button.setFocusPolicy(Qt.FocusPolicy.TabFocus)
    return button


class DetailPane(QWidget):
    """Header, arguments / diff / question tabs, the invocation's timeline and the decision buttons.

    Signals:
        decisionRequested(str): a decision button was pressed: approve, approve_for_session, edit,
            reject, steer or answer.
        failed(str): loading the request failed; the message is for the banner.
        loaded(str): the selected request (its hitl_id) is fully shown and can be decided.
        requestChecked(str): the selected request's secret scan has ended (its risk is whole) and a write's
            diff is shown.
        copied(str): something was copied to the clipboard; the note says what (for the status bar).
    """

    decisionRequested = Signal(str)
    failed = Signal(str)
    loaded = Signal(str)
    requestChecked = Signal(str)
    copied = Signal(str)

    def __init__(
        self,
        backend: SQLHITLBackend,
        spawn: Callable[[Coroutine[Any, Any, Any]], Any],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("detailPane")
        self.setAccessibleName("Request details")
        self.backend = backend
        self._spawn = spawn
        self._generation = 0
        self.summary: RequestSummary | None = None
        self.prepared: PreparedRequest | None = None
        self.run_record: RunRecord | None = None
        self.busy = False
        self._reading: asyncio.Future[HITLRecord | None] | None = None  # the selected request's record, being read
        self.checker = RequestChecker()  # the secret scan and a write's diff, once the request is shown

        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        self.state_label = QLabel()
        self.state_label.setObjectName("detailState")
        self.state_label.setWordWrap(True)
        self.state_label.hide()
        self._build_copy_actions()
        self.header_box = DetailHeader(self.copy_actions)
        self.header = self.header_box.label
        self.external_badge = self.header_box.external_badge
        self.copy_button = self.header_box.copy_button
        layout.addWidget(self.header_box)
        self.risk_chip = RiskChip()  # its own row: beside the header both were squeezed to five lines at 1,024 px
        layout.addWidget(self.risk_chip)
        self.headline = HeadlineView()  # the command (path, URL) itself, before any JSON
        layout.addWidget(self.headline)
        self.explain = ExplainSection(backend, spawn)  # why, what it does, what it will touch (issue 26)
        middle = scrolling_column(layout, "detailMiddle")  # the why wraps: a small window scrolls, never overlaps
        middle.addWidget(self.explain.why_label)
        middle.addWidget(self.state_label)
        self.empty_label = QLabel()
        self.empty_label.setObjectName("detailEmpty")
        self.empty_label.setAccessibleName("Nothing selected")
        self.empty_label.setTextFormat(Qt.TextFormat.RichText)
        self.empty_label.setWordWrap(True)
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.hide()
        middle.addWidget(self.empty_label, 1)

        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setObjectName("detailSplitter")
        self.splitter.setChildrenCollapsible(False)
        self.tabs = QTabWidget()
        self.tabs.setObjectName("detailTabs")
        self.tabs.setDocumentMode(True)
        self.args_panel = JsonPanel("")
        self.args_view = self.args_panel.view
        self.args_view.setObjectName("argsView")
        self.args_view.setAccessibleName("Arguments")
        self.args_panel.showAllRequested.connect(self.show_all)
        self.diff_view = QPlainTextEdit()
        self.diff_view.setObjectName("diffView")
        self.diff_view.setAccessibleName("Diff against the current file")
        self.diff_view.setReadOnly(True)
        self.diff_view.setFont(monospace_font())
        self.diff_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.diff_highlighter = DiffHighlighter(self.diff_view.document())
        self.question_label = QLabel()
        self.question_label.setObjectName("questionLabel")
        self.question_label.setAccessibleName("Question")
        self.question_label.setWordWrap(True)
        self.question_label.setTextFormat(Qt.TextFormat.RichText)
        self.question_label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.question_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        question_page = QWidget()
        question_layout = QVBoxLayout(question_page)
        question_layout.addWidget(self.question_label, 1)
        self.tabs.addTab(self.args_panel, "Arguments")
        self.diff_tab = self.tabs.addTab(self.diff_view, "Diff")
        self.question_tab = self.tabs.addTab(question_page, "Question")
        self.splitter.addWidget(self.tabs)
        self.splitter.addWidget(self.explain)

        timeline_box = QWidget()
        timeline_layout = QVBoxLayout(timeline_box)
        timeline_layout.setContentsMargins(0, 4, 0, 0)
        self.timeline_title = QLabel("<b>Timeline</b>")
        self.timeline_title.setTextFormat(Qt.TextFormat.RichText)
        self.strip = TimelineStrip()
        self.timeline_model = TimelineModel(self)
        self.timeline_view = TimelineView()
        self.timeline_view.setObjectName("timelineView")
        self.timeline_view.setAccessibleName("Timeline")
        self.timeline_view.setModel(self.timeline_model)
        self.timeline_model.blocksChanged.connect(lambda: self.strip.set_blocks(self.timeline_model.blocks()))
        timeline_layout.addWidget(self.timeline_title)
        timeline_layout.addWidget(self.strip)
        timeline_layout.addWidget(self.timeline_view, 1)
        self.splitter.addWidget(timeline_box)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 3)
        self.splitter.setStretchFactor(2, 2)
        middle.addWidget(self.splitter, 1)

        bar = FlowLayout(stretch_last=True)  # wraps when narrow: the window stays usable at 1,024 px
        self.approve_button = _button("&Approve  a", "approveButton", "Approve", "Run the call as shown (a)")
        self.approve_session_button = _button(
            "Approve for session  ⇧A",
            "approveSessionButton",
            "Approve for session",
            "Approve and stop asking (Shift+A)",
        )
        self.edit_button = _button("&Edit && approve  e", "editButton", "Edit and approve", "Edit the arguments (e)")
        self.reject_button = _button("&Reject  r", "rejectButton", "Reject", "Do not run it; optional reason (r)")
        self.steer_button = _button("&Steer  s", "steerButton", "Steer", "Send guidance instead of running it (s)")
        self.answer_button = _button("A&nswer  n", "answerButton", "Answer", "Answer the agent's question (n)")
        self.decision_buttons = {
            "approve": self.approve_button,
            "approve_for_session": self.approve_session_button,
            "edit": self.edit_button,
            "reject": self.reject_button,
            "steer": self.steer_button,
            "answer": self.answer_button,
        }
        for kind, button in self.decision_buttons.items():
            button.clicked.connect(lambda _=False, k=kind: self.decisionRequested.emit(k))
            bar.addWidget(button)
        self.digest_label = QLabel()
        self.digest_label.setObjectName("digestLabel")
        self.digest_label.setToolTip("SHA-256 of the arguments shown: the approval names exactly these")
        bar.addWidget(self.digest_label)
        self.decision_bar = QWidget()
        self.decision_bar.setLayout(bar)
        layout.addWidget(self.decision_bar)
        self.now: Callable[[], float] = time.time  # tests move time by replacing it
        self.hold_paint_ms = HOLD_PAINT_MS  # tests lengthen it
        self._paint_held = QTimer(self, singleShot=True)
        self._paint_held.timeout.connect(self._release_paint)
        self._clock = QTimer(self, interval=1000)
        self._clock.timeout.connect(self.tick)
        self._clock.start()
        self.show_empty()

    def _build_copy_actions(self) -> None:
        """Copy the id, the shell command and the arguments: header context menu, Copy button, keys."""

        def action(text: str, keys: str, name: str, slot: Callable[[], None]) -> QAction:
            copy = QAction(text, self)
            copy.setObjectName(name)
            copy.setShortcut(QKeySequence(keys))
            copy.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            copy.setToolTip(f"{text.replace('&', '')} ({keys})")
            copy.triggered.connect(slot)
            return copy

        self.copy_id_action = action("Copy &id", "Ctrl+Shift+I", "copyIdAction", self.copy_id)
        self.copy_command_action = action("Copy &command", "Ctrl+Shift+C", "copyCommandAction", self.copy_command)
        self.copy_args_action = action("Copy &arguments (JSON)", "Ctrl+Shift+J", "copyArgsAction", self.copy_arguments)
        self.copy_actions = [self.copy_id_action, self.copy_command_action, self.copy_args_action]

    # -- the clipboard ---------------------------------------------------------------------------
    def shown_id(self) -> str | None:
        """The id of what is shown: the request, else the run."""
        if self.summary is not None:
            return self.summary.hitl_id
        return self.run_record.id if self.run_record is not None else None

    def copy_id(self) -> None:
        self._copy(self.shown_id(), "the run id" if self.summary is None else "the request id")

    def copy_command(self) -> None:
        self._copy(command_of(self.prepared.shown) if self.prepared is not None else None, "the command")

    def copy_arguments(self) -> None:
        if self.prepared is not None:
            self._copy(json.dumps(self.prepared.shown, indent=2, ensure_ascii=False), "the arguments (JSON)")

    def _copy(self, text: str | None, what: str) -> None:
        if text:
            QGuiApplication.clipboard().setText(text)
            shown = text if len(text) <= 60 and "\n" not in text else f"{len(text):,} characters"
            self.copied.emit(f"Copied {what}: {shown}")

    def _refresh_copy_actions(self) -> None:
        args = self.prepared.shown if self.prepared is not None else None
        self.copy_id_action.setEnabled(self.shown_id() is not None)
        self.copy_command_action.setEnabled(command_of(args) is not None)
        self.copy_args_action.setEnabled(self.prepared is not None)
        self.copy_button.setEnabled(self.shown_id() is not None)

    def tick(self) -> None:
        """Once a second: the header's age and expiry countdown follow the clock (redrawn only when they change)."""
        if self.summary is not None:
            self._render_header()

    # -- what is shown ------------------------------------------------------------------------
    @property
    def hitl_id(self) -> str | None:
        return self.summary.hitl_id if self.summary else None

    @property
    def is_ask(self) -> bool:
        return bool(self.summary and self.summary.hitl_type == HITLType.ASK_USER.value)

    def decidable(self) -> bool:
        """A pending request fully loaded (its hash known) and no decision in flight."""
        return (
            self.summary is not None
            and self.prepared is not None
            and self.summary.status == HITLStatus.PENDING.value
            and not self.busy
        )

    def checked(self) -> bool:
        """The shown request's risk is whole: its secret scan has ended (see ``HighRiskConfirm`` for until then)."""
        return self.prepared is not None and self.prepared.checked

    def allowed(self, kind: str) -> bool:
        if not self.decidable():
            return False
        if self.is_ask:
            return kind in ("answer", "reject", "steer")
        return kind in ("approve", "approve_for_session", "edit", "reject", "steer")

    def show_empty(self, message: str = "No pending requests. New ones appear here as agents ask.") -> None:
        """Nothing to show: one calm message in place of the panes (no empty editor, no dead buttons)."""
        self._generation += 1
        self._release_paint()
        self.summary = None
        self.prepared = None
        self.explain.keep_only(None)
        self.run_record = None
        self.header.clear()
        self.header_box.hide()
        self.headline.set_headline(None)
        self.state_label.hide()
        self.splitter.hide()
        self.decision_bar.hide()
        muted = theme.current().muted.name()
        self.empty_label.setText(f"<span style='font-size:13pt; color:{muted}'>{html.escape(message)}</span>")
        self.empty_label.show()
        self.args_panel.set_message("")
        self.diff_view.clear()
        self.question_label.clear()
        self.tabs.setTabVisible(self.diff_tab, False)
        self.tabs.setTabVisible(self.question_tab, False)
        self.digest_label.clear()
        self.header_box.show_external(False)
        self.risk_chip.set_risk(None)
        self._refresh_buttons()

    def _show_panes(self, *, tabs: bool) -> None:
        self.empty_label.hide()
        self.header_box.show()
        self.splitter.show()
        self.tabs.setVisible(tabs)
        self.explain.setVisible(tabs)
        self.decision_bar.setVisible(tabs)

    def _hold_paint(self) -> None:
        """Qt does not paint the pane until the selected request is read (at most ``hold_paint_ms``): a "Loading…"
        picture painted first cost each selection a layout and a repaint of the pane for nothing. Meanwhile the
        previous picture stays, and nothing can be decided: no request is loaded, so the keys and the (disabled)
        buttons do nothing until the new one is painted."""
        if not self._paint_held.isActive():
            self._paint_held.start(self.hold_paint_ms)
            self.setUpdatesEnabled(False)

    def _release_paint(self) -> None:
        """Paint the pane again (all of it, at Qt's next paint)."""
        self._paint_held.stop()
        if not self.updatesEnabled():
            self.setUpdatesEnabled(True)

    def show_request(self, summary: RequestSummary) -> None:
        """Show a request at once from its summary, then load the full record in the background."""
        self._generation += 1
        self._hold_paint()
        generation = self._generation
        self.summary = summary
        self.prepared = None
        self.run_record = None
        self.busy = False
        self.explain.keep_only(summary.hitl_id)
        self._show_panes(tabs=True)
        self._render_header()
        self.headline.set_headline(None)  # until the record is here: never the previous request's command
        if self.timeline_model.invocation_id not in (None, summary.invocation_id):
            self.timeline_model.set_events(None, [])  # nor the previous run's timeline while this one's loads
        self.args_panel.set_message("Loading…")
        self.risk_chip.set_risk(None)
        if not self.diff_view.document().isEmpty():
            self.diff_view.clear()  # never the previous request's diff, even in a tab not in front
        self.digest_label.clear()
        is_ask = summary.hitl_type == HITLType.ASK_USER.value
        self.tabs.setTabVisible(self.question_tab, is_ask)
        self.tabs.setTabVisible(self.diff_tab, summary.tool_name in WRITE_TOOLS)
        self.tabs.setCurrentIndex(self.question_tab if is_ask else 0)
        self._refresh_buttons()
        # Read now, not in the task's first step: that comes after Qt has repainted the selection, the read during it.
        self._spawn(self._load(generation, summary, self._read(summary.hitl_id)))

    def update_summary(self, summary: RequestSummary, *, render: bool = True) -> None:
        """The shown request changed in the store (decided here or elsewhere, expired...).

        ``render=False`` keeps the header as it is (the buttons still follow) when another request
        is about to replace it on screen: redrawing the header first would cost a layout for nothing.
        """
        if self.summary is None or summary.hitl_id != self.summary.hitl_id:
            return
        self.summary = summary
        if render:
            self._render_header()
        self._refresh_buttons()

    def show_run(self, run: RunRecord) -> None:
        """Show a run from the runs board: its header and timeline, no decision buttons."""
        self._generation += 1
        self._release_paint()
        self.summary = None
        self.prepared = None
        self.run_record = run
        self.explain.keep_only(None)
        self._show_panes(tabs=False)
        self.headline.set_headline(None)
        self.state_label.hide()
        self.risk_chip.set_risk(None)
        self.update_run(run)
        self._refresh_copy_actions()

    def update_run(self, run: RunRecord) -> None:
        if self.run_record is None or run.id != self.run_record.id:
            return
        self.run_record = run
        self.header_box.show_run(run)

    def _render_header(self) -> None:
        s = self.summary
        if s is None:
            return
        now = self.now()
        self.header_box.show_request(s, now)
        if s.status != HITLStatus.PENDING.value:
            self.state_label.setText(f"This request {settled_phrase(s, now)}; nothing to decide.")
            style = f"color: {theme.current().muted.name()}; font-weight: bold;"
            if self.state_label.styleSheet() != style:  # the clock redraws every second: no re-polish for nothing
                self.state_label.setStyleSheet(style)
            self.state_label.show()
        else:
            self.state_label.hide()

    def set_busy(self, busy: bool) -> None:
        self.busy = busy
        self._refresh_buttons()

    def _refresh_buttons(self) -> None:
        self._refresh_copy_actions()
        is_ask = self.is_ask
        for kind, button in self.decision_buttons.items():
            relevant = kind in ("answer", "reject", "steer") if is_ask else kind != "answer"
            button.setVisible(relevant or self.summary is None)
            button.setEnabled(self.allowed(kind))
        if self.summary is not None and not is_ask and self.summary.tool_name:
            tool = self.summary.tool_name
            args = self.prepared.shown if self.prepared else None
            grant = describe_session_approval(tool, args if isinstance(args, dict) else {})
            self.approve_session_button.setToolTip(f"Approve for this session: {grant} (Shift+A)")

    # -- loading ----------------------------------------------------------------------------
    def _read(self, hitl_id: str) -> asyncio.Future[HITLRecord | None]:
        """The record of ``hitl_id``, read from now on; a read of the request shown before, not started yet, is
        dropped (holding j down reads only the requests the pane stops at)."""
        if self._reading is not None:
            self._reading.cancel()
        self._reading = self.backend.get_soon(hitl_id)
        return self._reading

    async def _load(self, generation: int, summary: RequestSummary, reading: asyncio.Future[HITLRecord | None]) -> None:
        try:
            record = await reading
            if generation != self._generation:
                return
            if record is None:
                self.args_panel.set_message("This request no longer exists.")
                self._release_paint()
                return
            prepared = await asyncio.to_thread(prepare_request, record)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if generation == self._generation:
                self.args_panel.set_message(f"Could not load the request: {exc}")
                self._release_paint()
                self.failed.emit(f"Could not load request {summary.hitl_id}: {exc}")
            return
        if generation != self._generation:
            return
        self._apply(prepared)
        if not prepared.checked or needs_diff(prepared):
            await self._check(generation, prepared)

    async def _check(self, generation: int, prepared: PreparedRequest) -> None:
        """The secret scan (unless remembered) and a write's diff, on a worker thread, once the request is shown."""
        record = prepared.record
        try:
            workspace = await self._workspace(record) if needs_diff(prepared) else None
            if generation != self._generation:
                return
            checks = await self.checker.run(prepared, workspace)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the request stays "not checked": approving by key still takes two presses
            if generation == self._generation:
                self.risk_chip.set_risk(prepared.risk, pending=f"secret scan failed: {exc}")
                self.explain.show_request(str(record["hitl_id"]), prepared.digest, diff_on_tab=self._diff_on_tab())
                if needs_diff(prepared):
                    self.diff_view.setPlainText(f"# Could not work out the diff: {exc}")
            return
        if generation != self._generation:
            return
        prepared.set_checks(checks)
        self._show_checks(prepared)
        self._announce_checked(prepared)

    def _show_checks(self, prepared: PreparedRequest) -> None:
        """The chip with the whole risk, a write's diff (its tab comes forward unless the operator chose one), then
        the why / what it will touch section: started after the checks, not beside them (one worker's work at a
        time while the request is painted), and given the secret scan's result."""
        self.risk_chip.set_risk(prepared.risk, pending=None if prepared.checked else CHECKING)
        if prepared.checked:
            self.explain.show_request(
                str(prepared.record["hitl_id"]), prepared.digest, prepared.secrets, diff_on_tab=self._diff_on_tab()
            )
        if prepared.diff_ready and self.tabs.isTabVisible(self.diff_tab):
            if prepared.diff is not None:
                self.diff_view.setPlainText(f"# {prepared.diff_note}\n{prepared.diff}")
                if self.tabs.currentIndex() == 0:
                    self.tabs.setCurrentIndex(self.diff_tab)
            else:
                self.diff_view.setPlainText(f"# {prepared.diff_note}")

    def _diff_on_tab(self) -> bool:
        """The shown request's diff has the Diff tab (write_file): "What it will touch" points there."""
        return self.tabs.isTabVisible(self.diff_tab)

    def _announce_checked(self, prepared: PreparedRequest) -> None:
        if prepared.checked and not needs_diff(prepared):
            self.requestChecked.emit(str(prepared.record["hitl_id"]))

    async def _workspace(self, record: HITLRecord) -> Path | None:
        run = await self.backend.get_run(record["invocation_id"])
        if run is not None and run.workspace:
            return Path(run.workspace)
        info = await self.backend.session_info(record["session_id"])
        workspace = (info or {}).get("workspace")
        return Path(workspace) if workspace else None

    def _apply(self, prepared: PreparedRequest) -> None:
        self.prepared = prepared
        record = prepared.record
        data = record.get("data") if isinstance(record.get("data"), dict) else None
        self.checker.recall(prepared)
        if prepared.question is None:
            self.headline.set_headline(headline_of(record.get("tool_name"), prepared.shown, data))
        self.args_panel.set_formatted(prepared.formatted)
        self.digest_label.setText(f"sha256 {prepared.digest[:12]}…")
        if prepared.question is not None:
            options = "".join(f"<li>{html.escape(o)}</li>" for o in prepared.options)
            self.question_label.setText(
                f"<p style='font-size:13pt'>{html.escape(prepared.question) or '(no question text)'}</p>"
                + (f"<p>Options:</p><ol>{options}</ol>" if options else "<p><i>Free answer.</i></p>")
            )
        if needs_diff(prepared) and self.tabs.isTabVisible(self.diff_tab):
            self.diff_view.setPlainText(DIFF_PENDING)
        self._show_checks(prepared)
        self._refresh_buttons()
        self._release_paint()
        self.loaded.emit(prepared.record["hitl_id"])
        self._announce_checked(prepared)

    def show_all(self) -> None:
        prepared = self.prepared
        if prepared is None:
            return
        generation = self._generation
        self.args_panel.notice.setText("Rendering everything…")

        async def render() -> None:
            formatted = await asyncio.to_thread(
                format_json, prepared.shown, budget=None, total_chars=prepared.total_chars
            )
            if generation == self._generation:
                self.args_panel.set_formatted(formatted)

        self._spawn(render())
