"""Decisions from the keyboard and the decision buttons: what the operator saw is what gets decided.

Every decision carries the hash of the arguments the detail pane showed (``args_sha256``), so
a request whose arguments differ from what was on screen is refused by the backend instead of
approved blind. Dialogs collect the rest (edited arguments, a reason, guidance, an answer); a
request someone else decided first is said in the banner; after a decision the next request
takes the decided one's place.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from PySide6.QtCore import QObject, QSettings, Signal
from PySide6.QtWidgets import QDialog, QWidget

from reviewer_app.domain.decisions import Decision, DecisionKind
from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.domain.records import RequestSummary
from reviewer_app.ui.common.keepers import DialogKeeper, TaskKeeper
from reviewer_app.ui.decide.operation import DecisionOp
from reviewer_app.ui.detail.pane import DetailPane
from reviewer_app.ui.detail.settled import describe_request, edit_parts, settled_phrase
from reviewer_app.ui.dialogs.answer import AnswerDialog
from reviewer_app.ui.dialogs.edit import EditArgumentsDialog
from reviewer_app.ui.dialogs.reject import RejectDialog
from reviewer_app.ui.dialogs.submit import TextDialog
from reviewer_app.ui.inbox.panel import InboxPanel
from reviewer_app.ui.triage.undo import UndoQueue
from reviewer_app.ui.window.live import LiveController

DECISION_VERBS = {
    "approve": "Approved",
    "approve_for_session": "Approved for the session",
    "edit": "Edited and approved",
    "reject": "Rejected",
    "steer": "Steered",
    "respond": "Answered",
}
DECISION_KEYS = ("approve", "approve_for_session", "edit", "reject", "steer", "answer")
DIALOG_NOUNS = {"edit": "edit", "reject": "rejection", "steer": "guidance", "answer": "answer"}
NOTICE_MS = 12_000
MAX_NOTICES = 200


class DecisionController(QObject):
    """Turns a decision key or button into a committed decision on the request the detail pane shows.

    Decisions are sent by the window's :class:`DecisionOp` (through the runtime when there is one).

    Signals:
        failed(str): a decision was not recorded (conflict, validation, database); for the banner.
        message(str, int): a short note for the status bar and how long to show it (ms).
        noticed(str): the request on screen was settled elsewhere or expired; for an information banner.
        interacted(): the operator decided or asked to (the window's idle clock).
    """

    failed = Signal(str)
    message = Signal(str, int)
    noticed = Signal(str)
    interacted = Signal()

    def __init__(
        self,
        op: DecisionOp,
        live: LiveController,
        detail: DetailPane,
        inbox: InboxPanel,
        tasks: TaskKeeper,
        dialogs: DialogKeeper,
        dialog_parent: QWidget,
    ) -> None:
        super().__init__(dialog_parent)
        self.op = op
        self.live = live
        self.detail = detail
        self.inbox = inbox
        self.tasks = tasks
        self.dialogs = dialogs
        self._dialog_parent = dialog_parent
        self.undo: UndoQueue | None = None  # the window's undo grace period; None commits at once
        self.settings: QSettings | None = None  # where recent reject reasons are kept (the window's settings)
        self.now: Callable[[], float] = time.time
        self.notices: list[str] = []  # what was announced, newest last (also for tests)
        self._known_pending: set[str] = set()
        self._decided_here: set[str] = set()
        self._open: dict[str, tuple[str, QDialog]] = {}  # hitl_id -> (decision kind, its open dialog)
        self._what: dict[str, str] = {}  # hitl_id -> the request in words, while its decision is in flight
        # The request last fully shown: the inbox moves on before a change reaches this controller.
        self._reading: str | None = None
        detail.loaded.connect(self._on_loaded)
        live.requestsLoaded.connect(lambda rows, _scope: self._note_pending(rows))
        live.requestsAppended.connect(self._note_pending)
        live.requestsChanged.connect(self._on_requests_changed)

    # -- requests settled elsewhere ---------------------------------------------------------------
    def _on_loaded(self, hitl_id: str) -> None:
        self._reading = hitl_id

    def _note_pending(self, rows: list[RequestSummary]) -> None:
        self._known_pending.update(r.hitl_id for r in rows if r.status == HITLStatus.PENDING.value)

    def _on_requests_changed(self, rows: list[RequestSummary]) -> None:
        """A request that leaves the pending state is said, unless this window decided it."""
        for row in rows:
            if row.status == HITLStatus.PENDING.value:
                self._known_pending.add(row.hitl_id)
                continue
            if row.hitl_id not in self._known_pending:
                continue
            self._known_pending.discard(row.hitl_id)
            if row.hitl_id in self._decided_here:
                self._decided_here.discard(row.hitl_id)
                continue
            self._announce(row)

    def _announce(self, row: RequestSummary) -> None:
        phrase = settled_phrase(row, self.now())
        what = describe_request(row)
        if row.status == HITLStatus.EXPIRED.value:
            text = f"Expired: {what} {phrase}."
        elif row.status == HITLStatus.CANCELLED.value:
            text = f"Cancelled: {what} {phrase} (its run or agent withdrew it)."
        else:
            text = f"Decided elsewhere: {what} {phrase}."
        self.notices.append(text)
        del self.notices[:-MAX_NOTICES]
        self.message.emit(text, NOTICE_MS)
        opened = self._open.pop(row.hitl_id, None)
        if opened is not None:
            kind, dialog = opened
            dialog.reject()
            noun = DIALOG_NOUNS.get(kind, kind)
            self.failed.emit(f"Your {noun} was not sent: {what} {phrase}.")
        elif row.hitl_id in (self.detail.hitl_id, self._reading):  # the one on screen (or just before it went)
            self.noticed.emit(text)

    def deciding_here(self, hitl_ids: Sequence[str]) -> None:
        """Decisions on ``hitl_ids`` are being made in this window (bulk, rules, a notification's action): when
        they leave the pending state that is not news to announce as "decided elsewhere"."""
        self._decided_here.update(hitl_ids)

    def _track(self, hitl_id: str, kind: str, dialog: QDialog) -> None:
        """Remember the dialog open for ``hitl_id``: it closes (and says why) if the request is settled meanwhile."""
        self._open[hitl_id] = (kind, dialog)
        dialog.finished.connect(lambda _result: self._untrack(hitl_id, dialog))
        self.dialogs.open(dialog)

    def _untrack(self, hitl_id: str, dialog: QDialog) -> None:
        if self._open.get(hitl_id, (None, None))[1] is dialog:
            del self._open[hitl_id]

    def request_decision(self, kind: str) -> None:
        """A decision key or button: approve at once, or open the dialog that collects the rest."""
        if not self.inbox.active:
            return
        self.interacted.emit()
        detail = self.detail
        if detail.is_ask and kind == "approve":
            kind = "answer"
        if not detail.allowed(kind):
            if detail.summary is not None and detail.prepared is None and detail.summary.status == "pending":
                self.message.emit("Still loading the request…", 2000)
            elif detail.summary is not None:
                self.message.emit(f"{kind.replace('_', ' ')} does not apply here", 3000)
            else:  # a session or run row, or nothing, is selected: a silent key reads as a broken one
                self.message.emit(f"Nothing to {kind.split('_')[0]} here: select a request first (j/k)", 3000)
            return
        prepared = detail.prepared
        summary = detail.summary
        assert prepared is not None and summary is not None
        hitl_id = summary.hitl_id
        digest = prepared.digest  # the hash of what the pane shows: the backend refuses any other arguments
        parent = self._dialog_parent
        if kind == "approve":
            self.send_decision(hitl_id, Decision(DecisionKind.APPROVE, args_sha256=digest))
        elif kind == "approve_for_session":
            self.send_decision(hitl_id, Decision(DecisionKind.APPROVE_FOR_SESSION, args_sha256=digest))
        elif kind == "edit":
            schema = (prepared.record.get("data") or {}).get("schema")
            runtime = self.op.runtime
            if schema is None and runtime is not None and summary.tool_name:
                schema = runtime.tool_schema(summary.tool_name)
            edit = EditArgumentsDialog(summary.tool_name or "tool", prepared.shown, schema, parent)
            edit.submitted.connect(
                lambda args: self.send_decision(
                    hitl_id, Decision(DecisionKind.EDIT, edited_args=args, args_sha256=digest)
                )
            )
            self._track(hitl_id, kind, edit)
        elif kind == "reject":
            reject = RejectDialog(self.settings, parent)
            reject.submitted.connect(
                lambda text: self.send_decision(
                    hitl_id, Decision(DecisionKind.REJECT, message=text or None, args_sha256=digest)
                )
            )
            self._track(hitl_id, kind, reject)
        elif kind == "steer":
            steer = TextDialog(
                "Steer",
                "Guidance for the agent (it does not run the call and reads this instead)",
                "Send guidance",
                required=True,
                object_name="steerDialog",
                placeholder="e.g. write the notes to docs/NOTES.md instead",
                parent=parent,
            )
            steer.submitted.connect(
                lambda text: self.send_decision(hitl_id, Decision(DecisionKind.STEER, message=text, args_sha256=digest))
            )
            self._track(hitl_id, kind, steer)
        elif kind == "answer":
            answer = AnswerDialog(prepared.question or "", prepared.options, parent)
            answer.submitted.connect(
                lambda text: self.send_decision(
                    hitl_id, Decision(DecisionKind.RESPOND, message=text, args_sha256=digest)
                )
            )
            self._track(hitl_id, kind, answer)

    def send_decision(self, hitl_id: str, decision: Decision) -> None:
        """Commit ``decision`` (after the undo grace period, when there is one); the next request is shown now."""
        next_id = self.inbox.next_after_removal(hitl_id)
        self._decided_here.add(hitl_id)
        shown = self.detail.summary
        what = describe_request(shown) if shown is not None and shown.hitl_id == hitl_id else hitl_id
        detail = ""  # what the status line may cut first (an edit's "(shown: …)")
        prepared = self.detail.prepared
        if decision.kind is DecisionKind.EDIT and shown is not None and prepared is not None and what != hitl_id:
            what, detail = edit_parts(shown, prepared.shown, decision.edited_args)  # what ran, and what was shown
        self._what[hitl_id] = what + detail
        undo = self.undo
        if undo is None or not undo.holds(decision.kind.value):
            if self.detail.hitl_id == hitl_id:
                self.detail.set_busy(True)
            self.tasks.spawn(self._decide(hitl_id, decision, next_id))
            return
        verb = DECISION_VERBS.get(decision.kind.value, decision.kind.value)
        self.inbox.hold([hitl_id])
        self.show_next(hitl_id, next_id)
        undo.hold(
            f"{verb}: {what}",
            (hitl_id,),
            lambda: self._decide(hitl_id, decision, None, held=True),
            on_undo=lambda: self.restore([hitl_id]),
            detail=detail,
        )

    def show_next(self, left: str, next_id: str | None) -> None:
        """``left`` is leaving the inbox: show the next request at once (or its run, or nothing)."""
        if self.detail.hitl_id != left:
            return
        if next_id is not None and self.inbox.select_request(next_id):
            return
        self.inbox.reselect(None)
        if self.detail.hitl_id == left:  # nothing else to show: do not leave a held request decidable
            run = self.inbox.runs_model.run(self.detail.summary.invocation_id) if self.detail.summary else None
            if run is not None:
                self.detail.show_run(run)
            else:
                self.detail.show_empty(self.inbox.empty_text())

    def restore(self, hitl_ids: list[str]) -> None:
        """Held decisions were undone: the requests come back, the first one selected."""
        self._decided_here.difference_update(hitl_ids)  # still pending: a decision elsewhere is said again
        for hitl_id in hitl_ids:
            self._what.pop(hitl_id, None)
        self.inbox.release(hitl_ids, restore=True)
        if hitl_ids:
            self.inbox.select_request(hitl_ids[0])
        self.message.emit("Undone: nothing was decided", 3000)

    async def _decide(self, hitl_id: str, decision: Decision, next_id: str | None, *, held: bool = False) -> None:
        outcome = await self.op.decide(hitl_id, decision)
        try:
            if outcome.decided:
                verb = DECISION_VERBS.get(decision.kind.value, decision.kind.value)
                self.message.emit(f"{verb}: {self._what.pop(hitl_id, hitl_id)}", 4000)
                if self.detail.hitl_id == hitl_id and next_id is not None:
                    self.inbox.select_request(next_id)
                self.live.request_refresh()
            elif outcome.elsewhere is not None:
                self._decided_here.discard(hitl_id)
                self._known_pending.discard(hitl_id)  # said here; the refresh need not say it again
                self.failed.emit(f"{outcome.problem} The inbox was refreshed.")
                self.live.request_refresh()
            else:
                self.failed.emit(outcome.problem or "The decision was not recorded.")
        finally:
            if held:
                self.inbox.release([hitl_id], restore=outcome.still_pending)
            self._what.pop(hitl_id, None)
            if self.detail.hitl_id == hitl_id:
                self.detail.set_busy(False)
