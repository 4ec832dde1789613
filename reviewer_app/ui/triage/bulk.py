"""Bulk decisions: marked requests, "the N similar", a whole run or session — each after a preview.

Why a preview: a bulk action must never decide more than the operator saw. The dialog lists exactly the
requests that will be decided (their command or path, their risk); each is then decided through the backend
with the hash of its own shown arguments and the compare-and-set, so one decided elsewhere meanwhile is
reported, never overwritten. Like every decision made in the window the batch waits out the undo grace period.

"Similar" means the same agent, the same tool and the same parsed scope (:func:`similar_to`): for shell tools the
same parsed command (``shell_scopes.CommandScope.exact``: ``'git' status`` is ``git status``, ``git status; rm x`` is
not), for file tools the same path and the same content (every other argument equal: two writes to one file with
different text are not alike), for any other tool identical arguments.
"""

from __future__ import annotations

import asyncio
import html
import posixpath
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import shiboken6
from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.hitl import HITLRecord, HITLStatus, HITLType, shown_arguments
from reviewer_app.domain.records import RequestQuery
from reviewer_app.domain.rule_outcome import call_of_record
from reviewer_app.domain.shell import parse_command
from reviewer_app.domain.shell_scopes import CommandScope
from reviewer_app.domain.tool_args import elide_middle
from reviewer_app.domain.toolcall import PATH_ARGUMENTS, command_of, is_file_tool, is_shell_tool, path_of
from reviewer_app.ui.common import theme
from reviewer_app.ui.common.texts import count_text
from reviewer_app.ui.inbox.cells import COL_REQUEST, LEVEL_ROLE
from reviewer_app.ui.inbox.grouping import LEVEL_REQUEST
from reviewer_app.ui.models.request_list import RequestListModel, describe_call, request_list_view

if TYPE_CHECKING:  # the window builds the controller: no import at run time
    from reviewer_app.ui.window.main_window import MainWindow

BULK_LIMIT = 2_000


def approvable(records: Sequence[HITLRecord]) -> list[HITLRecord]:
    """The requests a bulk approval decides: a question needs an answer, which an approval does not give."""
    return [r for r in records if r.get("hitl_type") != HITLType.ASK_USER.value]


def _agent(record: HITLRecord) -> str | None:
    call = call_of_record(record)
    return call.agent if call is not None else None


def _besides_path(tool: str, args: Any) -> Any:
    """A file call's arguments without its path (its content, its edits): what must be equal besides the path."""
    if not isinstance(args, dict):
        return args
    keys = set(PATH_ARGUMENTS.get(tool, ()))
    return {key: value for key, value in args.items() if key not in keys}


def _cwd(record: HITLRecord) -> str | None:
    data = record.get("data") if isinstance(record.get("data"), dict) else {}
    cwd = (data or {}).get("cwd")
    return cwd if isinstance(cwd, str) else None


def similar_to(base: HITLRecord) -> Callable[[HITLRecord], bool]:
    """A test for "the same tool and the same parsed scope" as ``base`` (see the module docstring)."""
    tool = base.get("tool_name")
    agent = _agent(base)
    base_args = shown_arguments(base)
    digest = args_digest(base_args)
    scope: CommandScope | None = None
    base_path: str | None = None
    base_rest = ""
    if tool and is_shell_tool(tool):
        command = command_of(tool, base_args)
        if command is not None and parse_command(command).waivable:
            scope = CommandScope.exact(command)
    elif tool and is_file_tool(tool):
        path = path_of(tool, base_args)
        if path is not None:
            base_path = posixpath.normpath(posixpath.join(_cwd(base) or "", path))
            base_rest = args_digest(_besides_path(tool, base_args))

    def test(record: HITLRecord) -> bool:
        if record.get("tool_name") != tool or record.get("hitl_type") != base.get("hitl_type"):
            return False
        if _agent(record) != agent:
            return False
        args = shown_arguments(record)
        if args_digest(args) == digest:
            return True
        if scope is not None:
            command = command_of(str(tool), args)
            return command is not None and scope.covers(command)
        if base_path is not None:
            path = path_of(str(tool), args)
            if path is None or posixpath.normpath(posixpath.join(_cwd(record) or "", path)) != base_path:
                return False
            return args_digest(_besides_path(str(tool), args)) == base_rest
        return False

    return test


class BulkDialog(QDialog):
    """The preview of a bulk action: exactly the requests it decides, then Approve N / Reject N / Cancel.

    Keys: Return approves (when high-risk requests are among them, the first Return only names them and a
    second one approves: the bulk form of ``a a``); typing goes into the reason, where Return rejects.

    Signals:
        chosen(str, str): "approve" or "reject", and the reason typed (reject only; may be empty).
    """

    chosen = Signal(str, str)

    def __init__(self, title: str, explanation: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("bulkDialog")
        self.setWindowTitle(title)
        self.setWindowModality(Qt.WindowModality.WindowModal)
        layout = QVBoxLayout(self)
        self.explanation = QLabel(explanation)
        self.explanation.setObjectName("bulkExplanation")
        self.explanation.setWordWrap(True)
        layout.addWidget(self.explanation)
        self.model = RequestListModel(self)
        self.view = request_list_view("bulkPreview", "Requests that will be decided", self.model)
        self.view.installEventFilter(self)
        layout.addWidget(self.view, 1)
        self.confirm_label = QLabel()
        self.confirm_label.setObjectName("bulkConfirm")
        self.confirm_label.setWordWrap(True)
        self.confirm_label.setTextFormat(Qt.TextFormat.RichText)
        self.confirm_label.hide()
        layout.addWidget(self.confirm_label)
        self.reason = QLineEdit()
        self.reason.setObjectName("bulkReason")
        self.reason.setAccessibleName("Reason for rejecting (optional; the agents see it)")
        self.reason.setPlaceholderText("Reason for rejecting (type; Return rejects them all)")
        layout.addWidget(self.reason)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.approve_button = QPushButton("Approve")
        self.approve_button.setObjectName("bulkApproveButton")
        self.reject_button = QPushButton("Reject")
        self.reject_button.setObjectName("bulkRejectButton")
        for button in (self.approve_button, self.reject_button):
            button.setAutoDefault(False)  # Return is handled below: never a blind default button
        self.buttons.addButton(self.approve_button, QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.addButton(self.reject_button, QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.rejected.connect(self.reject)
        self.approve_button.clicked.connect(self.approve)
        self.reject_button.clicked.connect(lambda: self._choose("reject"))
        layout.addWidget(self.buttons)
        self.high_risk: list[tuple[HITLRecord, Any]] = []
        self.confirming = False
        self.resize(900, 480)
        self.view.setFocus()  # Return approves, typing goes into the reason: never a focused Cancel button

    def set_records(self, records: Sequence[HITLRecord], risks: dict[str, Any]) -> None:
        self.model.set_records(records, risks)
        approved = approvable(records)
        self.high_risk = [
            (r, risk) for r in approved if (risk := risks.get(str(r["hitl_id"]))) is not None and risk.high
        ]
        self.confirming = False
        self.confirm_label.hide()
        self.approve_button.setText(f"Approve {len(approved)}")
        self.approve_button.setEnabled(bool(approved))
        self.reject_button.setText(f"Reject {len(records)}")
        self.reject_button.setEnabled(bool(records))

    def approve(self) -> None:
        """Approve them all; with high-risk requests among them, the first press names those and arms."""
        if not self.approve_button.isEnabled():
            return
        if self.high_risk and not self.confirming:
            self.confirming = True
            items = "".join(
                f"<li><code>{html.escape(elide_middle(describe_call(record), 160))}</code>"
                f" — {html.escape('; '.join(risk.reasons[:2]))}</li>"
                for record, risk in self.high_risk[:8]
            )
            more = f"<li>… and {len(self.high_risk) - 8} more</li>" if len(self.high_risk) > 8 else ""
            color = theme.current().danger.name()
            self.confirm_label.setText(
                f"<b style='color:{color}'>{len(self.high_risk)} HIGH RISK among them:</b><ul>{items}{more}</ul>"
                "Press Return or the button again to approve them too; Esc cancels."
            )
            self.confirm_label.show()
            self.approve_button.setText(f"Confirm: approve incl. {len(self.high_risk)} high risk")
            return
        self._choose("approve")

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Typing in the list goes into the reason (the list has no type-ahead worth keeping)."""
        if watched is self.view and event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            plain = not event.modifiers() & (Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier)
            if plain and event.text() and event.text().isprintable():
                self.reason.setFocus()
                self.reason.insert(event.text())
                return True
        return super().eventFilter(watched, event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            if self.reason.hasFocus():
                if self.reject_button.isEnabled():
                    self.reject_button.click()
            else:
                self.approve()
            return
        super().keyPressEvent(event)

    def _choose(self, kind: str) -> None:
        self.chosen.emit(kind, self.reason.text().strip())
        self.accept()


class BulkController(QObject):
    """Marks in the inbox (X, Shift/Ctrl click) and the bulk actions with their previews.

    Signals:
        message(str, int): a note for the status bar and how long to show it (ms).
        failed(str): some requests were not decided (decided elsewhere, refused); for the banner.
    """

    message = Signal(str, int)
    failed = Signal(str)

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.marked: dict[str, None] = {}
        inbox = window.inbox
        inbox.view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        inbox.model.set_mark_source(self.marked.__contains__)

    # -- marks -------------------------------------------------------------------------------
    def toggle_mark(self) -> None:
        """X: mark or unmark the request shown, then move to the next one."""
        hitl_id = self.window.detail.hitl_id
        if hitl_id is None or self.window.inbox.model.summary(hitl_id) is None:
            return
        if hitl_id in self.marked:
            del self.marked[hitl_id]
        else:
            self.marked[hitl_id] = None
        self.window.inbox.model.repaint_requests([hitl_id])
        self.message.emit(f"{len(self.marked)} marked (Shift+X decides them)", 3000)
        self.window.inbox.move_request(1)

    def clear_marks(self) -> None:
        ids = list(self.marked)
        self.marked.clear()
        self.window.inbox.model.repaint_requests(ids)

    def targets(self) -> list[str]:
        """The marked requests, plus the rows selected with Shift/Ctrl click when several are (display order)."""
        view = self.window.inbox.view
        model = self.window.inbox.model
        chosen = dict(self.marked)
        selected = [
            summary.hitl_id
            for index in view.selectionModel().selectedRows(COL_REQUEST)
            if index.data(LEVEL_ROLE) == LEVEL_REQUEST and (summary := model.request_at(index)) is not None
        ]
        if len(selected) > 1:  # one selected row is just the request being read, not a choice
            chosen.update(dict.fromkeys(selected))
        if not chosen:
            return []
        order = {s.hitl_id: n for n, s in enumerate(model.iter_requests())}
        return sorted(chosen, key=lambda hitl_id: order.get(hitl_id, len(order)))

    # -- the actions -------------------------------------------------------------------------
    def decide_marked(self) -> BulkDialog | None:
        ids = self.targets()
        if not ids:
            self.message.emit("Mark requests first (X, or Shift/Ctrl click)", 3000)
            return None

        async def load() -> list[HITLRecord]:
            records = [await self.window.backend.get(hitl_id) for hitl_id in ids]
            return [r for r in records if r is not None and r["status"] == HITLStatus.PENDING.value]

        return self._open(f"Decide {len(ids)} marked requests", "Exactly these requests will be decided:", load)

    def decide_similar(self) -> BulkDialog | None:
        prepared = self.window.detail.prepared
        if prepared is None or not self.window.detail.decidable() or not prepared.record.get("tool_name"):
            self.message.emit("Select a pending tool request first", 3000)
            return None
        base = prepared.record
        tool = str(base["tool_name"])

        async def load() -> list[HITLRecord]:
            query = RequestQuery(statuses=(HITLStatus.PENDING.value,), tool_name=tool, limit=BULK_LIMIT)
            records = await self.window.backend.list_records(query)
            test = similar_to(base)
            return await asyncio.to_thread(lambda: [r for r in records if test(r)])

        what = (
            f"the same agent, the same tool ({tool}) and the same parsed command, or path and content, as the one shown"
        )
        return self._open("Decide the similar requests", f"Pending requests with {what}:", load)

    def decide_run(self) -> BulkDialog | None:
        return self._decide_group("run")

    def decide_session(self) -> BulkDialog | None:
        return self._decide_group("session")

    def _decide_group(self, which: str) -> BulkDialog | None:
        summary = self.window.detail.summary
        if summary is None:
            self.message.emit("Select a request first", 3000)
            return None
        backend = self.window.backend
        if which == "run":
            ident = summary.invocation_id

            async def load() -> list[HITLRecord]:
                return await backend.get_pending_by_invocation(ident)

        else:
            ident = summary.session_id

            async def load() -> list[HITLRecord]:
                return await backend.get_pending_by_session(ident)

        return self._open(f"Decide the whole {which}", f"Every pending request of {which} {ident}:", load)

    def _open(self, title: str, explanation: str, load: Callable[[], Any]) -> BulkDialog:
        window = self.window
        dialog = BulkDialog(title, explanation + " (loading…)", window)
        dialog.approve_button.setEnabled(False)
        dialog.reject_button.setEnabled(False)

        async def fill() -> None:
            held = window.triage.undo.held_ids  # decided here a moment ago, in their undo countdown: not again
            records = [r for r in await load() if str(r["hitl_id"]) not in held]
            risks = await window.backend.assess_requests([str(r["hitl_id"]) for r in records])
            if not shiboken6.isValid(dialog) or not dialog.isVisible():
                return  # closed while loading
            high = sum(1 for risk in risks.values() if risk.high)
            warning = f" {high} of them HIGH RISK (see the Risk column)." if high else ""
            questions = len(records) - len(approvable(records))  # seen: "Approve 13" beside "Reject 17", unsaid
            if questions:
                warning += f" Approve leaves out {count_text(questions, 'question')}: each needs an answer (n)."
            dialog.explanation.setText(f"{explanation} {count_text(len(records), 'request')}.{warning}")
            dialog.set_records(records, risks)

        window.tasks.spawn(fill())
        dialog.chosen.connect(lambda kind, reason: self.commit(kind, dialog.model.records, reason))
        window.dialogs.open(dialog)
        return dialog

    # -- deciding ----------------------------------------------------------------------------
    def commit(self, kind: str, records: Sequence[HITLRecord], reason: str = "") -> None:
        """Decide ``records`` (after the undo grace period): approve (questions skipped) or reject each."""
        if kind == "approve":
            records = approvable(records)
        if not records:
            return
        window = self.window
        ids = [str(r["hitl_id"]) for r in records]
        for hitl_id in ids:
            self.marked.pop(hitl_id, None)
        label = f"{'Approved' if kind == 'approve' else 'Rejected'} {count_text(len(ids), 'request')}"
        decisions = {
            str(r["hitl_id"]): Decision(
                DecisionKind.APPROVE if kind == "approve" else DecisionKind.REJECT,
                message=(reason or None) if kind == "reject" else None,
                args_sha256=args_digest(shown_arguments(r)),
            )
            for r in records
        }
        triage = window.triage
        triage.hold_and_commit(label, ids, lambda: self._decide_all(decisions, label))

    async def _decide_all(self, decisions: dict[str, Decision], label: str) -> set[str]:
        """Each request with its own compare-and-set; returns the ids that are no longer pending."""
        window = self.window
        outcomes = await window.decision_op.decide_each(decisions.items())
        elsewhere = [f"{o.hitl_id} ({o.elsewhere})" for o in outcomes if o.elsewhere is not None]
        refused = [f"{o.hitl_id}: {o.problem}" for o in outcomes if o.still_pending]
        decided = sum(o.decided for o in outcomes)
        window.statusBar().showMessage(f"{label}: {decided} decided", 5000)
        problems = []
        if elsewhere:
            problems.append(
                f"{len(elsewhere)} decided elsewhere meanwhile, left as decided there: " + "; ".join(elsewhere)
            )
        if refused:
            problems.append(f"{len(refused)} not recorded: " + "; ".join(refused))
        if problems:
            self.failed.emit(" · ".join(problems))
        window.live.request_refresh()
        return {o.hitl_id for o in outcomes if not o.still_pending}
