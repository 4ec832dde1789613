"""Risk chips for inbox rows: each request's risk, fetched in the background for the rows the view paints.

Why lazily: an inbox row carries only a short summary, and judging a call needs its full arguments. The cells
ask :meth:`RiskCache.risk` when they paint; unknown ids are fetched in batches (``assess_requests``: read on the
database thread, judged on a worker thread) and their summary cells repainted when the answer comes. A request's
arguments never change, so an answer is kept for good.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from functools import cache
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QIcon, QPainter, QPixmap

from reviewer_app.ui.common import theme

if TYPE_CHECKING:  # the window's first screen paints before the backend and the risk rules are imported
    from reviewer_app.domain.risk import Risk
    from reviewer_app.hitl import SQLHITLBackend

BATCH = 200


@cache
def unknown_risk() -> Risk:
    """The chip of a request that is not a tool call (made on first use: see the imports)."""
    from reviewer_app.domain.risk import Risk

    return Risk("low", ("not a tool call",))


@cache
def _chip_icon(level: str, color: str) -> QIcon:
    """A small rounded chip with the level's initial (H, M): a colour and a letter, not a colour alone.

    Drawn at the item views' icon size (16 px), so the view never shrinks it.
    """
    pixmap = QPixmap(16, 16)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setBrush(QColor(color))
    painter.setPen(Qt.PenStyle.NoPen)
    painter.drawRoundedRect(QRectF(0, 0, 16, 16), 4, 4)
    font = QFont()
    font.setBold(True)
    font.setPixelSize(11)
    painter.setFont(font)
    painter.setPen(QColor("white"))
    painter.drawText(QRectF(0, 0, 16, 16), Qt.AlignmentFlag.AlignCenter, "H" if level == "high" else "M")
    painter.end()
    return QIcon(pixmap)


def chip_icon(level: str) -> QIcon | None:
    """The inbox chip for a risk level (None for low)."""
    colors = theme.current()
    if level == "high":
        return _chip_icon(level, colors.danger.name())
    if level == "medium":
        return _chip_icon(level, colors.warning.name())
    return None


def risk_text(risk: Risk) -> str:
    """ "high risk: recursive delete; force push" (the tooltip and the accessible text)."""
    return f"{risk.level} risk" + (": " + "; ".join(risk.reasons) if risk.reasons and risk.level != "low" else "")


class RiskCache(QObject):
    """Each request's risk, fetched when first asked for.

    Signals:
        arrived(list): hitl ids whose risk is now known (their cells repaint).
    """

    arrived = Signal(list)

    def __init__(
        self, backend: SQLHITLBackend, spawn: Callable[[Coroutine[Any, Any, Any]], Any], parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.backend = backend
        self._spawn = spawn
        self._risks: dict[str, Risk] = {}
        self._wanted: dict[str, None] = {}
        self._asked: set[str] = set()
        self._busy = False
        self._timer = QTimer(self, singleShot=True, interval=0)
        self._timer.timeout.connect(self._fetch)

    def risk(self, hitl_id: str) -> Risk | None:
        """The request's risk, or None until it is known (then it is fetched)."""
        found = self._risks.get(hitl_id)
        if found is None and hitl_id not in self._asked:
            self._asked.add(hitl_id)
            self._wanted[hitl_id] = None
            if not self._busy and not self._timer.isActive():
                self._timer.start()
        return found

    def known(self, hitl_id: str, risk: Risk) -> None:
        """A risk computed elsewhere (the detail pane's): no need to fetch it."""
        if self._risks.get(hitl_id) != risk:
            self._risks[hitl_id] = risk
            self.arrived.emit([hitl_id])

    def _fetch(self) -> None:
        if self._busy or not self._wanted:
            return
        batch = list(self._wanted)[:BATCH]
        for hitl_id in batch:
            del self._wanted[hitl_id]
        self._busy = True
        self._spawn(self._load(batch))

    async def _load(self, batch: list[str]) -> None:
        try:
            risks = await self.backend.assess_requests(batch)
        except asyncio.CancelledError:
            raise
        except Exception:
            self._asked.difference_update(batch)  # asked again when next painted
            risks = None
        finally:
            self._busy = False
        if risks is not None:
            for hitl_id in batch:
                risk = risks.get(hitl_id)
                self._risks[hitl_id] = risk if risk is not None else unknown_risk()
            self.arrived.emit(batch)
        if self._wanted:
            self._timer.start()
