"""A read-only, highlighted, foldable JSON view that stays responsive on multi-megabyte payloads.

Big payloads are cut twice before they reach Qt: the pretty-printer stops after a
character budget (``json.JSONEncoder.iterencode`` is lazy), and any single line longer
than ``max_line`` (``CUT_LINE``: a few screen widths) is shortened, because Qt lays out a line
whole: one 10 MB line would make it crawl, and a 10,000-character one cost the first view of a
1 MB write more than everything else it shows. "Show all" renders everything, splitting long
lines (at ``DEFAULT_MAX_LINE``) instead of shortening them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QPoint, QRect, QRectF, QSize, Qt, Signal
from PySide6.QtGui import (
    QFont,
    QFontDatabase,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QResizeEvent,
    QTextBlock,
)
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from reviewer_app.ui.common import theme
from reviewer_app.ui.detail.json_colours import VisibleJsonColours

DEFAULT_BUDGET = 50_000  # the first view: ~3,000 lines of pretty JSON (Qt lays out every line it is given)
DEFAULT_MAX_LINE = 10_000  # "show all" splits longer lines
CUT_LINE = 2_000  # the first view shortens longer lines (a screen shows ~200 characters of one)
HIGHLIGHT_LIMIT = 1_500_000  # above this many characters "show all" is plain text: highlighting would stall
WRAP_MARK = " ↩"


@dataclass(frozen=True)
class FormattedJson:
    """Display text for a JSON value and what was left out of it."""

    text: str
    truncated: bool
    shown_chars: int
    total_chars: int | None = None  # size of the compact JSON when known
    split_lines: int = 0


def format_json(
    value: Any, *, budget: int | None = DEFAULT_BUDGET, max_line: int | None = None, total_chars: int | None = None
) -> FormattedJson:
    """Pretty-print ``value`` (indent 2); with a ``budget`` stop early and shorten overlong lines (``CUT_LINE``),
    else split them (``DEFAULT_MAX_LINE``)."""
    if max_line is None:
        max_line = DEFAULT_MAX_LINE if budget is None else CUT_LINE
    encoder = json.JSONEncoder(indent=2, ensure_ascii=False, default=str)
    parts: list[str] = []
    size = 0
    truncated = False
    for chunk in encoder.iterencode(value if budget is None else _within(value, [budget + 1])):
        parts.append(chunk)
        size += len(chunk)
        if budget is not None and size > budget:
            truncated = True
            break
    text = "".join(parts)
    if truncated and budget is not None:
        text = text[:budget]
    out: list[str] = []
    split = 0
    for line in text.split("\n"):
        if len(line) <= max_line:
            out.append(line)
        elif budget is not None:
            out.append(f"{line[:max_line]} … ({len(line) - max_line:,} more characters)")
            truncated = True
        else:
            pieces = [line[i : i + max_line] for i in range(0, len(line), max_line)]
            out.extend(piece + WRAP_MARK for piece in pieces[:-1])
            out.append(pieces[-1])
            split += len(pieces) - 1
    if truncated and budget is not None and size > budget:
        out.append("… (cut here: use “Show all” to see the rest)")
    return FormattedJson("\n".join(out), truncated, len(text), total_chars, split)


def _within(value: Any, room: list[int]) -> Any:
    """``value`` without what its pretty JSON would print after ``room[0]`` characters: strings cut, containers
    ended early. Each step counts fewer characters than the encoder prints, so the first ``room[0]`` characters of
    the text are the same; a 1 MB string is not escaped whole to show its first 50 KB.
    """
    if isinstance(value, str):
        if len(value) >= room[0]:
            cut, room[0] = value[: max(room[0], 0)], 0
            return cut
        room[0] -= len(value) + 2
        return value
    if isinstance(value, dict):
        kept: dict[Any, Any] = {}
        for key, item in value.items():
            if room[0] <= 0:
                break
            room[0] -= len(str(key)) + 4  # "key":
            kept[key] = _within(item, room)
        return kept
    if isinstance(value, list | tuple):
        items: list[Any] = []
        for item in value:
            if room[0] <= 0:
                break
            items.append(_within(item, room))
            room[0] -= 1  # the comma
        return items
    room[0] -= 1
    return value


def fold_ranges(lines: list[str]) -> dict[int, int]:
    """Opening line -> closing line of every multi-line object or array in pretty-printed JSON."""
    ranges: dict[int, int] = {}
    stack: list[int] = []
    for number, line in enumerate(lines):
        stripped = line.rstrip()
        if stripped.endswith(("{", "[")):
            stack.append(number)
        elif stack and stripped.lstrip().startswith(("}", "]")):
            start = stack.pop()
            if number > start + 1:
                ranges[start] = number
    return ranges


def monospace_font() -> QFont:
    font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    font.setStyleHint(QFont.StyleHint.Monospace)
    return font


class _FoldGutter(QWidget):
    """The strip left of the text with ▾/▸ markers; a click folds or unfolds."""

    def __init__(self, view: JsonView) -> None:
        super().__init__(view)
        self._view = view
        self.setCursor(Qt.CursorShape.PointingHandCursor)

    def sizeHint(self) -> QSize:
        return QSize(self._view.gutter_width(), 0)

    def paintEvent(self, event: QPaintEvent) -> None:
        self._view.paint_gutter(self, event)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        self._view.gutter_clicked(int(event.position().y()))


class JsonView(QPlainTextEdit):
    """Read-only JSON text with folding (click the gutter) and syntax colours.

    Signals:
        foldsChanged(): a region was folded or unfolded.
    """

    foldsChanged = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setFont(monospace_font())
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        self.highlighter = VisibleJsonColours(self)
        self._ranges: dict[int, int] = {}
        self._folded: set[int] = set()
        self._gutter = _FoldGutter(self)
        self.updateRequest.connect(self._on_update_request)
        self.setViewportMargins(self.gutter_width(), 0, 0, 0)

    # -- content -------------------------------------------------------------------------
    def set_json_text(self, text: str, *, highlight: bool = True) -> None:
        self.highlighter.forget()
        self.highlighter.enabled = highlight
        self._folded.clear()
        self.setPlainText(text)
        self._ranges = fold_ranges(text.split("\n")) if len(text) < 5_000_000 else {}
        self._gutter.update()
        self.highlighter.colour_on_screen()

    @property
    def folded(self) -> set[int]:
        return set(self._folded)

    def toggle_fold(self, line: int) -> None:
        if line in self._ranges:
            self.set_folded(line, line not in self._folded)

    def set_folded(self, line: int, folded: bool) -> None:
        if line not in self._ranges or (line in self._folded) == folded:
            return
        if folded:
            self._folded.add(line)
        else:
            self._folded.discard(line)
        self._apply_visibility(line, self._ranges[line])
        self.foldsChanged.emit()

    def collapse_all(self, min_depth: int = 1) -> None:
        """Fold every region nested at least ``min_depth`` deep (the top object stays open)."""
        depth_of = self._depths()
        self._folded = {line for line in self._ranges if depth_of.get(line, 0) >= min_depth}
        self._apply_visibility(0, self.document().blockCount() - 1)
        self.foldsChanged.emit()

    def expand_all(self) -> None:
        self._folded.clear()
        self._apply_visibility(0, self.document().blockCount() - 1)
        self.foldsChanged.emit()

    def _depths(self) -> dict[int, int]:
        depths: dict[int, int] = {}
        open_ends: list[int] = []
        for start in sorted(self._ranges):
            while open_ends and open_ends[-1] < start:
                open_ends.pop()
            depths[start] = len(open_ends)
            open_ends.append(self._ranges[start])
        return depths

    def _hidden_lines(self, first: int, last: int) -> set[int]:
        hidden: set[int] = set()
        for start in self._folded:
            end = self._ranges[start]
            if end >= first and start <= last:
                hidden.update(range(start + 1, end + 1))
        return hidden

    def _apply_visibility(self, first: int, last: int) -> None:
        doc = self.document()
        hidden = self._hidden_lines(first, last)
        block = doc.findBlockByNumber(first)
        start_pos = block.position()
        end_block = doc.findBlockByNumber(last)
        while block.isValid() and block.blockNumber() <= last:
            block.setVisible(block.blockNumber() not in hidden)
            block = block.next()
        doc.markContentsDirty(start_pos, end_block.position() + end_block.length() - start_pos)
        self.viewport().update()
        self._gutter.update()

    # -- gutter ----------------------------------------------------------------------------
    def gutter_width(self) -> int:
        return self.fontMetrics().height() + 2

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        rect = self.contentsRect()
        self._gutter.setGeometry(QRect(rect.left(), rect.top(), self.gutter_width(), rect.height()))

    def _on_update_request(self, rect: QRect, dy: int) -> None:
        self.highlighter.colour_on_screen()  # lines scrolled into view
        if dy:
            self._gutter.scroll(0, dy)
        else:
            self._gutter.update(0, rect.y(), self._gutter.width(), rect.height())

    def paint_gutter(self, gutter: QWidget, event: QPaintEvent) -> None:
        painter = QPainter(gutter)
        pal = self.palette()
        painter.fillRect(event.rect(), pal.alternateBase())
        painter.setPen(theme.current().muted)
        for block, geometry in self._blocks_down_to(event.rect().bottom()):
            number = block.blockNumber()
            if block.isVisible() and number in self._ranges and geometry.bottom() >= event.rect().top():
                marker = "▸" if number in self._folded else "▾"
                painter.drawText(
                    QRect(0, int(geometry.top()), gutter.width(), int(geometry.height())),
                    Qt.AlignmentFlag.AlignCenter,
                    marker,
                )
        painter.end()

    def _blocks_down_to(self, bottom: int) -> Iterator[tuple[QTextBlock, QRectF]]:
        """The blocks from the first visible one with their geometry on screen, until one starts below ``bottom``."""
        block = self.firstVisibleBlock()
        offset = self.contentOffset()
        while block.isValid():
            geometry = self.blockBoundingGeometry(block).translated(offset)
            if geometry.top() > bottom:
                return
            yield block, geometry
            block = block.next()

    def gutter_clicked(self, y: int) -> None:
        # The gutter and the viewport share their top edge, so y is a viewport coordinate too.
        block = self.cursorForPosition(QPoint(0, y)).block()
        self.toggle_fold(block.blockNumber())

    def paintEvent(self, event: QPaintEvent) -> None:
        super().paintEvent(event)
        if not self._folded:
            return
        painter = QPainter(self.viewport())
        painter.setPen(theme.current().muted)
        metrics = self.fontMetrics()
        left = int(self.contentOffset().x())
        for block, geometry in self._blocks_down_to(event.rect().bottom()):
            if block.isVisible() and block.blockNumber() in self._folded:
                x = left + metrics.horizontalAdvance(block.text()) + 8
                painter.drawText(x, int(geometry.top()) + metrics.ascent(), "⋯")
        painter.end()


class JsonPanel(QWidget):
    """A :class:`JsonView` with its notice line and the Show all / Collapse all / Expand all buttons.

    Signals:
        showAllRequested(): the user wants the untruncated text.
    """

    showAllRequested = Signal()

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        bar = QHBoxLayout()
        self.title = QLabel(title)
        self.notice = QLabel()
        self.notice.setStyleSheet("color: palette(placeholder-text);")
        self.show_all_button = QPushButton("Show all")
        self.show_all_button.setObjectName("showAllButton")
        self.show_all_button.setAccessibleName("Show all arguments")
        self.show_all_button.clicked.connect(self.showAllRequested)
        self.collapse_button = QPushButton("Collapse")
        self.collapse_button.setToolTip("Fold every nested object and array")
        self.expand_button = QPushButton("Expand")
        self.expand_button.setToolTip("Unfold everything")
        for button in (self.show_all_button, self.collapse_button, self.expand_button):
            button.setFlat(True)
            button.setFocusPolicy(Qt.FocusPolicy.TabFocus)
        bar.addWidget(self.title)
        bar.addWidget(self.notice, 1)
        bar.addWidget(self.show_all_button)
        bar.addWidget(self.collapse_button)
        bar.addWidget(self.expand_button)
        layout.addLayout(bar)
        self.view = JsonView(self)
        layout.addWidget(self.view, 1)
        self.collapse_button.clicked.connect(lambda: self.view.collapse_all(1))
        self.expand_button.clicked.connect(self.view.expand_all)
        self.show_all_button.hide()

    def set_formatted(self, formatted: FormattedJson) -> None:
        highlight = len(formatted.text) <= HIGHLIGHT_LIMIT
        self.view.set_json_text(formatted.text, highlight=highlight)
        notes = []
        if formatted.truncated:
            total = f" of {_size(formatted.total_chars)}" if formatted.total_chars else ""
            notes.append(f"showing the first {_size(formatted.shown_chars)}{total}")
        if formatted.split_lines:
            notes.append(f"long lines wrapped ({WRAP_MARK.strip()})")
        if not highlight:
            notes.append("no colours above 1.5 MB")
        self.notice.setText(" · ".join(notes))
        self.show_all_button.setVisible(formatted.truncated)

    def set_message(self, message: str) -> None:
        self.view.set_json_text(message, highlight=False)
        self.notice.setText("")
        self.show_all_button.hide()


def _size(chars: int | None) -> str:
    if chars is None:
        return "?"
    if chars < 10_000:
        return f"{chars:,} characters"
    if chars < 1_000_000:
        return f"{chars / 1000:.0f} KB"
    return f"{chars / 1_000_000:.1f} MB"
