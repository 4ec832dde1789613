"""A compact horizontal strip: each tool call's duration and the time spent waiting for a human."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QBrush, QColor, QHelpEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QToolTip, QWidget

from reviewer_app.domain.timeline import Block, BlockKind, waiting_spans
from reviewer_app.ui.common import theme
from reviewer_app.ui.detail.timeline import block_duration_ms, block_status, block_title, format_duration


@dataclass(frozen=True)
class Span:
    start_ms: int
    end_ms: int
    lane: int  # 0: tools, 1: waiting for a human
    label: str
    status: str | None


def spans_for(blocks: list[Block], now_ms: int) -> list[Span]:
    """Tool-call spans (lane 0) and human-wait spans (lane 1) of a timeline."""
    spans: list[Span] = []
    by_id = {b.block_id: b for b in blocks}
    for block in blocks:
        if block.kind is BlockKind.TOOL_USE:
            duration = block_duration_ms(block, now_ms)
            if duration is None:
                continue
            spans.append(
                Span(
                    block.started_ms,
                    block.started_ms + max(0, duration),
                    0,
                    block_title(block, by_id),
                    block_status(block, by_id),
                )
            )
    pending_waits = {
        b.started_ms for b in blocks if b.kind is BlockKind.HITL and b.data.get("status", "pending") == "pending"
    }
    for start, end in waiting_spans(blocks):
        spans.append(Span(start, now_ms if start in pending_waits else end, 1, "waiting for a human", None))
    return spans


class TimelineStrip(QWidget):
    """Custom-painted lanes over the run's time span: tools above, human waits (hatched) below."""

    LANE_HEIGHT = 12

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._blocks: list[Block] = []
        self._spans: list[Span] = []
        self._t0 = 0
        self._t1 = 1
        self.now_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000
        self.setMinimumHeight(self.sizeHint().height())
        self.setMouseTracking(True)
        self.setObjectName("timelineStrip")
        self.setAccessibleName("Tool durations and waiting time")

    def sizeHint(self) -> QSize:
        return QSize(400, 2 * self.LANE_HEIGHT + 26)

    @property
    def spans(self) -> list[Span]:
        return list(self._spans)

    def set_blocks(self, blocks: list[Block]) -> None:
        self._blocks = list(blocks)
        self.refresh()

    def refresh(self) -> None:
        """Recompute spans (running tools and open waits grow with the clock)."""
        now = self.now_ms()
        self._spans = spans_for(self._blocks, now)
        if self._blocks:
            self._t0 = min(b.started_ms for b in self._blocks)
            ends = [b.updated_ms for b in self._blocks] + [s.end_ms for s in self._spans]
            self._t1 = max([*ends, self._t0 + 1])
        else:
            self._t0, self._t1 = 0, 1
        total = format_duration(self._t1 - self._t0) if self._blocks else ""
        tools = sum(1 for s in self._spans if s.lane == 0)
        waited = sum(s.end_ms - s.start_ms for s in self._spans if s.lane == 1)
        self.setToolTip(f"{tools} tool call(s), {format_duration(waited)} waiting for a human, {total} in all")
        self.update()

    def _x(self, ms: int, width: float) -> float:
        return 8 + (ms - self._t0) / max(1, self._t1 - self._t0) * (width - 16)

    def _rect(self, span: Span) -> QRectF:
        width = float(self.width())
        x0 = self._x(span.start_ms, width)
        x1 = max(x0 + 3, self._x(span.end_ms, width))
        y = 6 + span.lane * (self.LANE_HEIGHT + 4)
        return QRectF(x0, y, x1 - x0, self.LANE_HEIGHT)

    def paintEvent(self, event: QPaintEvent) -> None:
        colors = theme.current()
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        pal = self.palette()
        painter.fillRect(self.rect(), pal.base())
        track = QColor(pal.mid().color())
        track.setAlpha(70)
        for lane in (0, 1):
            y = 6 + lane * (self.LANE_HEIGHT + 4)
            painter.fillRect(QRectF(8, y, self.width() - 16, self.LANE_HEIGHT), track)
        for span in self._spans:
            rect = self._rect(span)
            if span.lane == 0:
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(colors.status_color(span.status or "running"))
                painter.drawRoundedRect(rect, 3, 3)
            else:
                painter.setPen(QPen(colors.wait, 1))
                fill = QColor(colors.wait)
                fill.setAlpha(90)
                painter.setBrush(fill)
                painter.drawRoundedRect(rect, 3, 3)
                painter.setBrush(QBrush(colors.wait, Qt.BrushStyle.BDiagPattern))
                painter.drawRoundedRect(rect, 3, 3)
        painter.setPen(colors.muted)
        metrics = self.fontMetrics()
        baseline = self.height() - 4
        if self._blocks:
            painter.drawText(8, baseline, "tools ▬  waiting for review ▨")
            total = format_duration(self._t1 - self._t0)
            painter.drawText(self.width() - 8 - metrics.horizontalAdvance(total), baseline, total)
        else:
            painter.drawText(8, baseline, "no activity yet")
        painter.end()

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            for span in self._spans:
                if self._rect(span).adjusted(-2, -2, 2, 2).contains(QPointF(event.pos())):
                    status = f" · {span.status}" if span.status else ""
                    QToolTip.showText(
                        event.globalPos(),
                        f"{span.label}{status}\n{format_duration(span.end_ms - span.start_ms)}",
                        self,
                    )
                    return True
        return super().event(event)
