"""Undo for decisions made in the window: each waits out a short grace period before it is committed.

Why: at triage speed a wrong key happens. A decision is held for ``grace_s`` seconds (a setting; 0 commits at
once) with a visible countdown and an Undo button (Ctrl+Z undoes the newest); only when the countdown ends is
it written to the database, so nothing (no run, no hook) ever acts on a decision that was undone.

Plain approvals (``a``) are not held unless ``hold_approvals`` is set: every held approval kept its agent
waiting the whole grace period (5 s measured, ``bench/keypress_to_agent.py``), while a reflexive ``a`` on
anything risky is already stopped by the high-risk confirmation (``ui/decide/risk_confirm.py``). Rejections, steers,
edits, session approvals, bulk and rule actions are held: their text or their reach is what goes wrong. The held
request leaves the inbox at once and the next one is shown, so triage never waits. Closing the window commits
whatever is still held (:meth:`UndoQueue.flush`, then :meth:`UndoQueue.drain` before the backend closes).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QStatusBar, QWidget

from reviewer_app.ui.common.texts import cut_path
from reviewer_app.ui.window.settings import DEFAULT_UNDO_GRACE_S

TICK_MS = 100
STATUS_GAPS = 48  # px: the status bar's spacing and margins around its message and widgets


@dataclass(eq=False)
class HeldDecision:
    """One decision (or one bulk action) waiting out its grace period.

    ``label`` says what was decided and on what (``Rejected: Bash “make deploy”``); ``detail`` follows it and is
    what a narrow status bar cuts first (an edit's `` (shown: …)``). ``commit`` makes the coroutine that writes it;
    ``on_undo`` puts the window back as it was.
    """

    label: str
    hitl_ids: tuple[str, ...]
    commit: Callable[[], Coroutine[Any, Any, Any]]
    deadline: float
    on_undo: Callable[[], None] | None = None
    detail: str = ""
    started: float = field(default_factory=time.monotonic)

    def seconds_left(self, now: float) -> float:
        return max(0.0, self.deadline - now)


class UndoQueue(QObject):
    """Decisions held for their grace period, newest last; commits each when its countdown ends.

    Commits run as tasks this queue keeps (not the window's task keeper, which cancels its tasks when the
    window closes): a decision the operator let stand is written even while the window goes away.

    Signals:
        changed(): something was held, undone or committed (the undo bar redraws).
        undone(str): a held decision was undone; its label.
    """

    changed = Signal()
    undone = Signal(str)

    def __init__(self, grace_s: float = DEFAULT_UNDO_GRACE_S, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.grace_s = grace_s
        self.hold_approvals = False  # plain approvals commit at once unless the operator asks otherwise
        self.clock: Callable[[], float] = time.monotonic
        self._held: list[HeldDecision] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._timer = QTimer(self, interval=TICK_MS)
        self._timer.timeout.connect(self._tick)

    @property
    def held(self) -> list[HeldDecision]:
        return list(self._held)

    @property
    def held_ids(self) -> set[str]:
        return {hitl_id for entry in self._held for hitl_id in entry.hitl_ids}

    @property
    def committing(self) -> bool:
        return bool(self._tasks)

    def holds(self, kind: str) -> bool:
        """Whether a decision of ``kind`` made in the window waits out the grace period."""
        return self.grace_s > 0 and (kind != "approve" or self.hold_approvals)

    def hold(
        self,
        label: str,
        hitl_ids: tuple[str, ...],
        commit: Callable[[], Coroutine[Any, Any, Any]],
        on_undo: Callable[[], None] | None = None,
        detail: str = "",
    ) -> HeldDecision | None:
        """Hold a decision for the grace period (None: the grace period is 0 and it was committed at once)."""
        if self.grace_s <= 0:
            self._commit(commit)
            return None
        entry = HeldDecision(label, tuple(hitl_ids), commit, self.clock() + self.grace_s, on_undo, detail)
        self._held.append(entry)
        if not self._timer.isActive():
            self._timer.start()
        self.changed.emit()
        return entry

    def undo_last(self) -> HeldDecision | None:
        """Undo the newest held decision (Ctrl+Z); None when nothing is held."""
        return self.undo(self._held[-1]) if self._held else None

    def undo(self, entry: HeldDecision) -> HeldDecision | None:
        if entry not in self._held:
            return None  # already committed
        self._held.remove(entry)
        if entry.on_undo is not None:
            entry.on_undo()
        self._stop_if_idle()
        self.changed.emit()
        self.undone.emit(entry.label)
        return entry

    def flush(self) -> None:
        """Commit everything held now (the window is closing)."""
        held, self._held = self._held, []
        for entry in held:
            self._commit(entry.commit)
        self._stop_if_idle()
        if held:
            self.changed.emit()

    async def drain(self) -> None:
        """Until every commit started has finished (the app awaits this before closing the backend)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def _tick(self) -> None:
        now = self.clock()
        due = [entry for entry in self._held if entry.deadline <= now]
        for entry in due:
            self._held.remove(entry)
            self._commit(entry.commit)
        self._stop_if_idle()
        self.changed.emit()  # the countdown moves even when nothing is due

    def _commit(self, commit: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        task = asyncio.ensure_future(commit())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _stop_if_idle(self) -> None:
        if not self._held:
            self._timer.stop()


class UndoBar(QWidget):
    """The status bar's countdown: what is held, seconds left, and an Undo button (Ctrl+Z)."""

    def __init__(self, queue: UndoQueue, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("undoBar")
        self.queue = queue
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.label = QLabel()
        self.label.setObjectName("undoLabel")
        self.label.setAccessibleName("Decision waiting to be committed")
        self.button = QPushButton("Undo  Ctrl+Z")
        self.button.setObjectName("undoButton")
        self.button.setAccessibleName("Undo the last decision")
        self.button.setToolTip("Undo the newest decision before it is committed (Ctrl+Z)")
        self.button.clicked.connect(queue.undo_last)
        layout.addWidget(self.label)
        layout.addWidget(self.button)
        queue.changed.connect(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        held = self.queue.held
        if not held:
            self.hide()
            return
        newest = held[-1]
        left = math.ceil(newest.seconds_left(self.queue.clock()))
        end = (f" (+{len(held) - 1} more)" if len(held) > 1 else "") + f" · commits in {left} s"
        text = f"{newest.label}{newest.detail}{end}"
        # What was decided and on what come first and stay; the detail is cut first.
        self.label.setText(fit_key_first(self.label.fontMetrics(), newest.label, newest.detail, end, self._room()))
        self.label.setToolTip(text)
        self.show()

    def _room(self) -> int:
        """The label's px: what the status bar's message and its other widgets leave, and at least half the window.

        Half the window at most kept the status message beside it whole (the decision before, cut to "Answere" by
        a long command's countdown), but also when there was no message: a long path kept a few characters of each
        end at 1,024 px. A message shown later makes the bar refresh (``UndoBar.follow``)."""
        half = self.window().width() // 2 - self.button.sizeHint().width() - 8
        status = self.parentWidget()
        if not isinstance(status, QStatusBar):
            return max(160, half)
        others = sum(
            widget.sizeHint().width()
            for widget in status.findChildren(QWidget, options=Qt.FindChildOption.FindDirectChildrenOnly)
            if widget is not self and widget.isVisible()  # the database label, the size grip
        )
        message = status.currentMessage()
        said = status.fontMetrics().horizontalAdvance(message) if message else 0
        free = status.width() - others - said - self.button.sizeHint().width() - STATUS_GAPS
        return max(160, half, free)

    def follow(self, status: QStatusBar) -> None:
        """Fit again whenever ``status`` shows or clears a message (the room it takes changes)."""
        status.messageChanged.connect(lambda _text: self.refresh())


def fit_key_first(metrics: QFontMetrics, head: str, tail: str, end: str, room: int) -> str:
    """``head + tail + end`` in ``room`` px: ``end`` (the countdown) always, ``head`` (what was decided and on what)
    whole when it fits, else cut inside its quoted call (the verb and the tool stay, the call keeps its start and,
    longer, its end), and
    of ``tail`` what is left, cut at its end. Cut in the middle of the whole line, an edit lost its file and kept
    its "(edited: content)"."""
    left = room - metrics.horizontalAdvance(end)
    whole = head + tail
    if metrics.horizontalAdvance(whole) <= left:
        return whole + end
    if metrics.horizontalAdvance(head + "…") <= left:
        return metrics.elidedText(whole, Qt.TextElideMode.ElideRight, left) + end
    quote = head.find("“") + 1  # the verb and the tool before the call's opening quote; 0 when there is none
    lead, call = head[:quote], head[quote:]
    room_for_call = left - metrics.horizontalAdvance(lead)
    if quote:  # a path is cut at its slashes and keeps its file name
        inside, closing = (call[:-1], call[-1]) if call.endswith("”") else (call, "")
        path = cut_path(inside, lambda shown: metrics.horizontalAdvance(shown + closing) <= room_for_call)
        if path is not None:
            return lead + path + closing + end
    # A third of the room for the call's start, the rest for its end: a path's file name and a command's last
    # words (`&& rm -rf /`) are at the end.
    start = metrics.elidedText(call, Qt.TextElideMode.ElideRight, room_for_call // 3).removesuffix("…")
    rest = room_for_call - metrics.horizontalAdvance(start)
    return lead + start + metrics.elidedText(call, Qt.TextElideMode.ElideLeft, rest) + end
