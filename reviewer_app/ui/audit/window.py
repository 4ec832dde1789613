"""The audit window (Ctrl+5): a separate window, because the log is a wide table that has nothing to show in the
main window's detail pane, and an audit is read next to the inbox rather than instead of it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHeaderView,
    QLabel,
    QMainWindow,
    QProgressBar,
    QTableView,
    QToolBar,
    QWidget,
)

from reviewer_app.domain.records import AuditReport
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.audit.export import export_audit
from reviewer_app.ui.audit.model import COL_WHAT, AuditModel
from reviewer_app.ui.common import theme
from reviewer_app.ui.common.keepers import TaskKeeper
from reviewer_app.ui.models.list_model import elide_calls_in_the_middle

FORMAT_FILTERS = {"jsonl": "JSON Lines (*.jsonl)", "csv": "CSV (*.csv)"}


class AuditWindow(QMainWindow):
    """The decision log, a page at a time, with Verify and Export….

    Signals:
        verified(object): an :class:`AuditReport` after "Verify".
        exported(str, int): an export finished (path, rows written).
        failed(str): a read, verification or export failed (also shown in the window).
    """

    verified = Signal(object)
    exported = Signal(str, int)
    failed = Signal(str)

    def __init__(self, backend: SQLHITLBackend, parent: QWidget | None = None, *, page_size: int = 200) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.backend = backend
        self.setObjectName("auditWindow")
        self.setWindowTitle("Reviewer — audit log")
        self.tasks = TaskKeeper(self._show_failure)
        self.model = AuditModel(self._load_page, page_size=page_size)
        self.export_task: asyncio.Task[int] | None = None
        self.last_report: AuditReport | None = None

        self.view = QTableView()
        self.view.setObjectName("auditTable")
        self.view.setModel(self.model)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.view.verticalHeader().hide()
        header = self.view.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(False)
        for column, width in enumerate((50, 140, 190, 80, 380, 120, 220, 160, 130)):
            self.view.setColumnWidth(column, width)
        elide_calls_in_the_middle(self.view, COL_WHAT)
        self.setCentralWidget(self.view)

        self.verify_action = QAction("&Verify the audit chain", self, shortcut=QKeySequence("Ctrl+Shift+V"))
        self.verify_action.triggered.connect(self.verify)
        self.export_action = QAction("&Export the audit log…", self, shortcut=QKeySequence("Ctrl+E"))
        self.export_action.triggered.connect(self.choose_export_file)
        self.reload_action = QAction("&Reload the audit log", self, shortcut=QKeySequence("F5"))
        self.reload_action.triggered.connect(self.reload)
        self.cancel_action = QAction("&Cancel the export", self, shortcut=QKeySequence("Escape"))
        self.cancel_action.triggered.connect(self.cancel_export)
        self.cancel_action.setEnabled(False)
        toolbar = QToolBar("Audit")
        toolbar.setObjectName("auditToolbar")
        toolbar.setMovable(False)
        toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.verify_action.setIconText("Verify")
        self.export_action.setIconText("Export…")
        self.reload_action.setIconText("Reload")
        self.cancel_action.setIconText("Cancel export")
        for action in (self.verify_action, self.export_action, self.reload_action, self.cancel_action):
            toolbar.addAction(action)
        self.addToolBar(toolbar)

        self.verdict = QLabel("Not verified yet: Verify walks the whole hash chain.")
        self.verdict.setObjectName("auditVerdict")
        self.verdict.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.progress = QProgressBar()
        self.progress.setObjectName("auditExportProgress")
        self.progress.setMaximumWidth(260)
        self.progress.hide()
        self.statusBar().addWidget(self.verdict, 1)
        self.statusBar().addPermanentWidget(self.progress)
        self.resize(1300, 640)

    # -- paging ---------------------------------------------------------------------------------------
    def reload(self) -> None:
        self.model.reset()
        self.model.fetchMore()

    def _load_page(self, after_id: int) -> None:
        self.tasks.spawn(self._read_page(after_id))

    async def _read_page(self, after_id: int) -> None:
        try:
            page = await self.backend.audit_page(after_id=after_id, limit=self.model.page_size)
        except Exception as exc:
            self.model.loading = False
            self._show_failure(f"Could not read the audit log: {exc}")
            return
        self.model.append_page(after_id, page)
        shown = len(self.model.entries)
        more = "" if self.model.exhausted else " (scroll for more)"
        self.setWindowTitle(f"Reviewer — audit log: {shown} rows{more}")

    async def load_until(self, entry_id: int) -> int | None:
        """Read pages until row ``entry_id`` is in the table; its table row, or None when the log ends first."""
        while (row := self.model.row_of(entry_id)) is None and not self.model.exhausted:
            after = self.model.last_id
            self.model.loading = True
            await self._read_page(after)
            if self.model.last_id == after and not self.model.exhausted:
                return None  # the read failed; it said so
        return row

    # -- verify ---------------------------------------------------------------------------------------
    def verify(self) -> None:
        self.verify_action.setEnabled(False)
        self.verdict.setText("Verifying the audit chain…")
        self.tasks.spawn(self._verify())

    async def _verify(self) -> None:
        try:
            report = await self.backend.verify_audit()  # on the backend's database thread
        except Exception as exc:
            self._show_failure(f"Could not verify the audit log: {exc}")
            return
        finally:
            self.verify_action.setEnabled(True)
        self.last_report = report
        colors = theme.current()
        if report.ok:
            anchors = f", {report.anchors_checked} anchors" if report.anchors_checked else ""
            warning = f" — {report.warning}" if report.warning else ""
            self._say(f"✔ Chain OK: {report.rows_checked} rows checked{anchors}{warning}", colors.ok.name())
            self.model.mark_broken(None)
        else:
            where = f" at row #{report.first_bad_id}" if report.first_bad_id is not None else ""
            self._say(f"✘ Chain BROKEN{where}: {report.problem}", colors.danger.name())
            self.model.mark_broken(report.first_bad_id)
            if report.first_bad_id is not None:
                row = await self.load_until(report.first_bad_id)
                if row is not None:
                    self.view.selectRow(row)
                    self.view.scrollTo(self.model.index(row, 0), QAbstractItemView.ScrollHint.PositionAtCenter)
        self.verified.emit(report)

    def _say(self, text: str, color: str) -> None:
        self.verdict.setText(text)
        self.verdict.setStyleSheet(f"#auditVerdict {{ color: {color}; font-weight: bold; }}")

    # -- export ---------------------------------------------------------------------------------------
    def choose_export_file(self) -> None:
        dialog = QFileDialog(self, "Export the audit log", str(Path.home() / "reviewer-audit.jsonl"))
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.setNameFilters(list(FORMAT_FILTERS.values()))
        dialog.fileSelected.connect(
            lambda name: self.start_export(
                Path(name), "csv" if dialog.selectedNameFilter().startswith("CSV") else "jsonl"
            )
        )
        self.export_dialog = dialog
        dialog.open()

    def start_export(self, path: Path, fmt: str) -> None:
        """Export in the background (``jsonl`` or ``csv``, also by the file's suffix); progress below the table."""
        if self.export_task is not None and not self.export_task.done():
            self._show_failure("An export is already running.")
            return
        if path.suffix.lower() in (".csv", ".jsonl"):
            fmt = path.suffix.lower()[1:]
        self.progress.setRange(0, 0)
        self.progress.show()
        self.cancel_action.setEnabled(True)
        self.export_action.setEnabled(False)
        self.export_task = self.tasks.spawn(self._export(path, fmt))
        self.export_task.add_done_callback(self._export_ended)

    def _export_ended(self, task: asyncio.Task[int]) -> None:
        """Also when the export was cancelled before it started (its coroutine never ran)."""
        self.progress.hide()
        self.cancel_action.setEnabled(False)
        self.export_action.setEnabled(True)
        if task.cancelled():
            self.statusBar().showMessage("Export cancelled; no file was written.", 6000)

    def _on_progress(self, done: int, total: int) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.progress.setFormat(f"{done} / {total} rows")

    async def _export(self, path: Path, fmt: str) -> int:
        try:
            written = await export_audit(self.backend, path, fmt, self._on_progress)
        except Exception as exc:
            self._show_failure(f"Could not export the audit log to {path}: {exc}")
            return 0
        self.statusBar().showMessage(f"Exported {written} rows to {path} ({fmt.upper()}).", 10_000)
        self.exported.emit(str(path), written)
        return written

    def cancel_export(self) -> None:
        if self.export_task is not None and not self.export_task.done():
            self.export_task.cancel()

    # -- messages and closing ------------------------------------------------------------------------
    def _show_failure(self, message: str) -> None:
        self._say(message, theme.current().danger.name())
        self.failed.emit(message)

    def showEvent(self, event: QShowEvent) -> None:
        if not self.model.entries and not self.model.loading and not self.model.exhausted:
            self.model.fetchMore()
        super().showEvent(event)

    def closeEvent(self, event: QCloseEvent) -> None:
        self.cancel_export()
        super().closeEvent(event)
