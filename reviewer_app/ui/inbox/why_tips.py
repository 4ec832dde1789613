"""The why of a request in the flat queue's tooltip, worked out lazily for the hovered or selected row only.

The queue may hold 100k rows: nothing is computed when they load. Hovering a row (a tooltip event) or selecting
it asks the backend (``SQLHITLBackend.why_of``: the database thread, then a worker thread) for that one request;
the answer is kept (a few hundred at most) until the queue is rebuilt, since rules may have changed since.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from PySide6.QtCore import QEvent, QObject, QPoint, Qt, Signal
from PySide6.QtGui import QHelpEvent
from PySide6.QtWidgets import QAbstractItemView, QToolTip

KEEP = 256
WORKING = "Why you are asked: working it out…"

Fetch = Callable[[str], Awaitable[tuple[str, ...] | None]]


def why_text(reasons: tuple[str, ...]) -> str:
    return "Why you are asked:\n" + "\n".join(f"• {reason}" for reason in reasons)


class WhyTips(QObject):
    """Asks for the why of one request at a time and keeps the answers.

    Signals:
        ready(str): the why of this request is known (``text`` has it).
    """

    ready = Signal(str)

    def __init__(self, fetch: Fetch, spawn: Callable[[Coroutine[Any, Any, None]], Any], parent: QObject) -> None:
        super().__init__(parent)
        self._fetch = fetch
        self._spawn = spawn
        self._known: OrderedDict[str, str] = OrderedDict()
        self._asked: set[str] = set()
        self._generation = 0
        self.worked_out: set[str] = set()  # the requests whose why was asked for (loading the rows asks for none)

    def text(self, hitl_id: str) -> str | None:
        return self._known.get(hitl_id)

    def want(self, hitl_id: str) -> None:
        """Work out the why of ``hitl_id`` unless it is known or on its way."""
        if hitl_id in self._known or hitl_id in self._asked:
            return
        self._asked.add(hitl_id)
        self._spawn(self._get(hitl_id, self._generation))

    def forget(self) -> None:
        """The queue was rebuilt: rules or waivers may have changed, so every why is worked out again."""
        self._generation += 1
        self._known.clear()
        self._asked.clear()

    async def _get(self, hitl_id: str, generation: int) -> None:
        try:
            reasons = await self._fetch(hitl_id)
        except Exception as exc:  # advice only: say it, never fail the queue
            reasons = (f"could not work it out: {exc}",)
        if generation != self._generation:
            return
        self._asked.discard(hitl_id)
        self.worked_out.add(hitl_id)
        self._known[hitl_id] = why_text(reasons) if reasons is not None else "This request no longer exists."
        while len(self._known) > KEEP:
            self._known.popitem(last=False)
        self.ready.emit(hitl_id)


class HoverWhy(QObject):
    """On a view's viewport: a tooltip event over a row asks for that row's why, and shows the row's tooltip again
    when the answer arrives while the pointer is still there."""

    def __init__(self, view: QAbstractItemView, tips: WhyTips, id_of: Callable[[Any], str | None]) -> None:
        super().__init__(view)
        self.view = view
        self.tips = tips
        self.id_of = id_of
        self._hovered: tuple[str, QPoint] | None = None
        view.viewport().installEventFilter(self)
        tips.ready.connect(self._on_ready)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            index = self.view.indexAt(event.pos())
            hitl_id = self.id_of(index) if index.isValid() else None
            self._hovered = (hitl_id, event.globalPos()) if hitl_id is not None else None
            if hitl_id is not None:
                self.tips.want(hitl_id)
        elif event.type() == QEvent.Type.Leave:
            self._hovered = None
        return False  # the view shows the model's tooltip itself

    def want_hovered(self) -> None:
        """Ask again for the hovered row's why (the queue was rebuilt and forgot it, maybe while it was on its way):
        without this the tooltip under the pointer stayed "working it out…" until the pointer moved."""
        if self._hovered is not None:
            self.tips.want(self._hovered[0])

    def _on_ready(self, hitl_id: str) -> None:
        if self._hovered is None or self._hovered[0] != hitl_id:
            return
        index = self.view.indexAt(self.view.viewport().mapFromGlobal(self._hovered[1]))
        if index.isValid() and self.id_of(index) == hitl_id:
            QToolTip.showText(self._hovered[1], str(index.data(Qt.ItemDataRole.ToolTipRole)), self.view.viewport())
