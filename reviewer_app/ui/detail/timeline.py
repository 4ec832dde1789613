"""An invocation's block timeline as a tree model, plus the delegate and view that draw it.

Blocks come from :func:`reviewer_app.domain.timeline.fold_events` and are updated with
:func:`~reviewer_app.domain.timeline.apply_event` as new events arrive, so the model is
never rebuilt while a run goes on. Every block with content has one "detail" child row
(the text, the thinking, a tool's arguments and result) that the view folds.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from PySide6.QtCore import (
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QRect,
    QRectF,
    QSize,
    Qt,
    Signal,
)
from PySide6.QtGui import QFontMetrics, QPainter, QPalette, QResizeEvent
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem, QTreeView, QWidget

from reviewer_app.domain.hitl import summarize_arguments
from reviewer_app.domain.records import RunRecord
from reviewer_app.domain.timeline import Block, BlockEvent, BlockKind, apply_event, fold_events
from reviewer_app.ui.common import theme
from reviewer_app.ui.detail.json_view import monospace_font
from reviewer_app.ui.detail.settled import DECISION_PAST
from reviewer_app.ui.models.tree_model import ROOT_KEY, TreeItemModel

ModelIndex = QModelIndex | QPersistentModelIndex

KIND_ROLE = Qt.ItemDataRole.UserRole + 1
STATUS_ROLE = Qt.ItemDataRole.UserRole + 2
DURATION_ROLE = Qt.ItemDataRole.UserRole + 3
IS_DETAIL_ROLE = Qt.ItemDataRole.UserRole + 4
BLOCK_ID_ROLE = Qt.ItemDataRole.UserRole + 5

KIND_ICON = {
    BlockKind.TEXT: "text",
    BlockKind.THINKING: "thinking",
    BlockKind.TOOL_USE: "tool",
    BlockKind.HITL: "hitl",
    BlockKind.ERROR: "error",
    BlockKind.END: "end",
}
FINAL_TOOL_STATES = frozenset({"success", "error"})
# A call that did not run is not an error of the tool: say why it did not run (its own neutral chip).
NOT_RUN_OUTCOMES = frozenset({"rejected", "steered", "aborted"})
DECISION_WORDS = {**DECISION_PAST, "expire": "expired"}
"""A decision in the past tense; the timeline also names an expiry that defaulted to nothing."""
DETAIL_MAX_LINES = 14
DETAIL_MAX_CHARS = 20_000


def _first(data: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        value = data.get(key)
        if value not in (None, ""):
            return value
    return None


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


EXPIRY_REVIEWER = "system:expiry"  # who "decides" an expired request (hitl.expire_due, the Claude Code hook)


def review_expired(block: Block) -> bool:
    """A review that ended because nobody decided in time (its default decision applied).

    The runtime marks it ``expired``; integrations in other processes name the expiry as the reviewer, or record
    the decision ``expire`` (a hook's request nobody decided).
    """
    data = block.data
    return block.kind is BlockKind.HITL and (
        bool(data.get("expired")) or data.get("reviewer") == EXPIRY_REVIEWER or data.get("decision") == "expire"
    )


def block_status(block: Block, blocks: Mapping[str, Block] | None = None) -> str | None:
    """The chip of a tool call (pending, running, success, error, or why it did not run) or of a review.

    ``blocks`` (the timeline's blocks by id) lets a tool call whose review expired say "expired"
    rather than "rejected".
    """
    if block.kind is BlockKind.TOOL_USE:
        outcome = block.data.get("outcome")
        if outcome in NOT_RUN_OUTCOMES:
            if outcome == "rejected" and blocks is not None and _review_of(block, blocks, expired=True):
                return "expired"
            return str(outcome)
        status = block.data.get("status")
        return str(status) if status else None
    if block.kind is BlockKind.HITL:
        if review_expired(block):
            return "expired"
        status = block.data.get("decision") or block.data.get("status")
        return str(status) if status else None
    return None


def _review_of(block: Block, blocks: Mapping[str, Block], *, expired: bool) -> bool:
    return any(
        child is not None and child.kind is BlockKind.HITL and review_expired(child) == expired
        for child in (blocks.get(child_id) for child_id in block.children)
    )


def block_title(block: Block, blocks: Mapping[str, Block] | None = None) -> str:
    data = block.data
    if block.kind is BlockKind.TEXT:
        text = _text(_first(data, "text", "content")).strip()
        return text.splitlines()[0] if text else "Assistant"
    if block.kind is BlockKind.THINKING:
        return "Thinking"
    if block.kind is BlockKind.TOOL_USE:
        name = _first(data, "name", "tool_name", "tool") or "tool"
        args = _first(data, "edited_arguments", "arguments", "args", "input")
        title = f"{name}  {summarize_arguments(args, 120)}" if args else str(name)
        decision = data.get("decision")
        if decision and blocks is not None and _review_of(block, blocks, expired=True):
            return f"{title}  · expired (nobody decided in time)"
        return f"{title}  · {DECISION_WORDS.get(decision, decision)}" if decision else title
    if block.kind is BlockKind.HITL:
        what = _first(data, "tool_name", "question", "title") or _first(data, "hitl_type") or "request"
        args = data.get("arguments") if data.get("tool_name") and block.parent_id is None else None
        if args:  # a hook's run has only its reviews, no tool blocks above them: the call tells them apart
            what = f"{what}  {summarize_arguments(args, 120)}"
        if review_expired(block):
            return f"Expired: {what} (nobody decided in time)"
        decision = data.get("decision")
        prefix = "Reviewed" if decision else "Waiting for review"
        return f"{prefix}: {what}" + (f" → {DECISION_WORDS.get(decision, decision)}" if decision else "")
    if block.kind is BlockKind.ERROR:
        message = _text(_first(data, "message", "error", "text")).strip()
        return "Error: " + (message.splitlines()[0] if message else "unknown")
    reason = _first(data, "state", "reason", "status")
    return f"Run ended ({reason})" if reason else "Run ended"


def block_detail(block: Block) -> str | None:
    """The folded content of a block, or None for blocks with nothing more to say."""
    data = block.data
    if block.kind is BlockKind.TEXT:
        return _text(_first(data, "text", "content"))
    if block.kind is BlockKind.THINKING:
        return _text(_first(data, "thinking", "text", "content"))
    if block.kind is BlockKind.TOOL_USE:
        parts = []
        args = _first(data, "arguments", "args", "input")
        if args is not None:
            parts.append("arguments: " + _text(args))
        if data.get("edited_arguments") is not None:
            parts.append("ran with the reviewer's edit: " + _text(data["edited_arguments"]))
        result = _first(data, "result", "output")
        if result is not None:
            parts.append("result: " + _text(result))
        error = data.get("error")
        if error:
            parts.append("error: " + _text(error))
        return "\n".join(parts) or "(no arguments)"
    if block.kind is BlockKind.HITL:
        parts = [f"request {data['hitl_id']}"] if data.get("hitl_id") else []
        if review_expired(block):
            resolved = data.get("resolved_ms")
            when = time.strftime(" at %H:%M:%S", time.localtime(int(resolved) / 1000)) if resolved else ""
            parts.append(f"expired{when}: nobody decided in time, so it got its default ({data.get('decision')})")
            return "\n".join(parts)
        for key in ("decision", "reviewer", "message", "question", "answer"):
            if data.get(key):
                parts.append(f"{key}: {_text(data[key])}")
        return "\n".join(parts) or None
    if block.kind is BlockKind.ERROR:
        return _text(_first(data, "message", "error", "text", "traceback"))
    return None


def block_duration_ms(block: Block, now_ms: int) -> int | None:
    """How long a tool ran (or has been running), or how long a request waited."""
    data = block.data
    if block.kind is BlockKind.TOOL_USE:
        if isinstance(data.get("duration_ms"), int | float):
            return int(data["duration_ms"])
        status = data.get("status")
        ended = _first(data, "ended_ms", "finished_ms")
        if ended is not None:
            return int(ended) - block.started_ms
        if status in FINAL_TOOL_STATES:
            return block.updated_ms - block.started_ms
        if status == "running":
            return now_ms - block.started_ms
        return None
    if block.kind is BlockKind.HITL:
        resolved = data.get("resolved_ms")
        if resolved:
            return int(resolved) - block.started_ms
        return now_ms - block.started_ms if data.get("status", "pending") == "pending" else None
    return None


ACTIVE_NOT_KNOWN = "—"
ACTIVE_NOT_KNOWN_TIP = (
    "active time not known: this agent runs in its own process and Reviewer sees only its requests, not when it runs"
)


def active_known(run: RunRecord) -> bool:
    """Whether Reviewer knows a run's active time (running, not waiting for a reviewer): not for an outside agent's
    run (a hook's, an external Python agent's) whose process never reported any."""
    return not run.external or run.active_ms > 0


def active_text(run: RunRecord) -> str:
    return format_duration(run.active_ms) if active_known(run) else ACTIVE_NOT_KNOWN


def format_duration(ms: int | None) -> str:
    if ms is None:
        return ""
    ms = max(0, ms)
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    if ms < 3_600_000:
        return f"{ms // 60_000}m {ms % 60_000 // 1000:02d}s"
    return f"{ms // 3_600_000}h {ms % 3_600_000 // 60_000:02d}m"


class _Node:
    __slots__ = ("block", "children", "is_detail", "parent", "row", "uid")

    def __init__(self, uid: int, block: Block, parent: _Node | None, is_detail: bool = False) -> None:
        self.uid = uid
        self.block = block
        self.parent = parent
        self.is_detail = is_detail
        self.children: list[_Node] = []
        self.row = 0


class TimelineModel(TreeItemModel):
    """The blocks of one invocation, in order of first appearance, each with a foldable detail row.

    Signals:
        blocksChanged(): blocks were added or changed (the strip redraws on it).
    """

    headers = ("Timeline",)
    blocksChanged = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.invocation_id: str | None = None
        self._blocks: dict[str, Block] = {}
        self._order: list[str] = []
        self._roots: list[_Node] = []
        self._nodes: dict[int, _Node] = {}
        self._by_block: dict[str, _Node] = {}
        self._next_uid = 1
        self.last_seq = 0
        self.now_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000

    # -- content ---------------------------------------------------------------------------
    def blocks(self) -> list[Block]:
        return [self._blocks[block_id] for block_id in self._order]

    def set_events(self, invocation_id: str | None, events: Iterable[BlockEvent]) -> None:
        """Show another invocation (or none), folding all of its events at once."""
        batch = list(events)
        self.beginResetModel()
        self.invocation_id = invocation_id
        self._blocks, self._order = {}, []
        self._roots, self._nodes, self._by_block = [], {}, {}
        self.last_seq = 0
        for block in fold_events(batch):
            self._blocks[block.block_id] = block
            self._order.append(block.block_id)
            self._attach(block)
        self.last_seq = max((e.seq for e in batch), default=0)
        self.endResetModel()
        self.blocksChanged.emit()

    def append_events(self, events: Iterable[BlockEvent]) -> None:
        """Apply new events of the shown invocation: new blocks are inserted, changed ones updated."""
        touched: dict[str, Block] = {}
        for event in sorted(events, key=lambda e: e.seq):
            if event.invocation_id != self.invocation_id or event.seq <= self.last_seq:
                continue
            self.last_seq = event.seq
            is_new = event.block_id not in self._blocks
            block = apply_event(self._blocks, self._order, event)
            if is_new:
                parent = self._by_block.get(block.parent_id) if block.parent_id else None
                siblings = parent.children if parent is not None else self._roots
                parent_index = self._index_of(parent) if parent is not None else QModelIndex()
                self.beginInsertRows(parent_index, len(siblings), len(siblings))
                self._attach(block)
                self.endInsertRows()
            else:
                touched[block.block_id] = block
        for block_id in touched:
            node = self._by_block[block_id]
            index = self._index_of(node)
            self.dataChanged.emit(index, index)
            for child in node.children:
                if child.is_detail:
                    detail = self.createIndex(child.row, 0, node.uid)
                    self.dataChanged.emit(detail, detail)
        self.blocksChanged.emit()

    def _new_node(self, block: Block, parent: _Node | None, is_detail: bool = False) -> _Node:
        node = _Node(self._next_uid, block, parent, is_detail)
        self._next_uid += 1
        self._nodes[node.uid] = node
        return node

    def _attach(self, block: Block) -> None:
        parent = self._by_block.get(block.parent_id) if block.parent_id else None
        siblings = parent.children if parent is not None else self._roots
        node = self._new_node(block, parent)
        node.row = len(siblings)
        siblings.append(node)
        self._by_block[block.block_id] = node
        if block.kind is not BlockKind.END:
            detail = self._new_node(block, node, is_detail=True)
            node.children.append(detail)

    def _index_of(self, node: _Node) -> QModelIndex:
        parent_uid = node.parent.uid if node.parent is not None else 0
        return self.createIndex(node.row, 0, parent_uid)

    def _node(self, index: ModelIndex) -> _Node | None:
        if not index.isValid():
            return None
        uid = index.internalId()
        siblings = self._roots if uid == 0 else getattr(self._nodes.get(uid), "children", None)
        if siblings is None or not 0 <= index.row() < len(siblings):
            return None
        return siblings[index.row()]

    # -- Qt model (index plumbing: TreeItemModel; keys are node uids) ------------------------
    def child_total(self, key: int) -> int:
        if key == ROOT_KEY:
            return len(self._roots)
        node = self._nodes.get(key)
        return len(node.children) if node is not None else 0

    def child_key(self, parent_key: int, row: int) -> int | None:
        siblings = self._roots if parent_key == ROOT_KEY else getattr(self._nodes.get(parent_key), "children", None)
        if siblings is None or not 0 <= row < len(siblings) or siblings[row].is_detail:
            return None
        return siblings[row].uid

    def place_of(self, key: int) -> tuple[int, int] | None:
        node = self._nodes.get(key)
        return (node.row, node.parent.uid if node.parent is not None else ROOT_KEY) if node is not None else None

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        node = self._node(index)
        if node is None:
            return Qt.ItemFlag.NoItemFlags
        flags = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        if node.is_detail:
            flags |= Qt.ItemFlag.ItemNeverHasChildren
        return flags

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        node = self._node(index)
        if node is None:
            return None
        block = node.block
        if role == IS_DETAIL_ROLE:
            return node.is_detail
        if role == KIND_ROLE:
            return block.kind.value
        if role == BLOCK_ID_ROLE:
            return block.block_id
        if node.is_detail:
            if role == Qt.ItemDataRole.DisplayRole:
                detail = block_detail(block) or ""
                return detail if len(detail) <= DETAIL_MAX_CHARS else detail[:DETAIL_MAX_CHARS] + "…"
            if role == Qt.ItemDataRole.ToolTipRole:
                return "Double-click to read it all"
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return block_title(block, self._blocks)
        if role == Qt.ItemDataRole.DecorationRole:
            return theme.icon(KIND_ICON.get(block.kind, "text"))
        if role == STATUS_ROLE:
            return block_status(block, self._blocks)
        if role == DURATION_ROLE:
            return block_duration_ms(block, self.now_ms())
        if role == Qt.ItemDataRole.ToolTipRole:
            started = time.strftime("%H:%M:%S", time.localtime(block.started_ms / 1000))
            return f"{block.kind.value} · started {started} · {block.block_id}"
        if role == Qt.ItemDataRole.AccessibleTextRole:
            status = block_status(block, self._blocks)
            return f"{block.kind.value}: {block_title(block, self._blocks)}" + (f", {status}" if status else "")
        return None


class TimelineDelegate(QStyledItemDelegate):
    """Paints block rows (icon, title, status chip, duration) and wrapped detail rows."""

    PADDING = 4

    def __init__(self, view: TimelineView) -> None:
        super().__init__(view)
        self._view = view
        self._mono = monospace_font()

    def _detail_lines(self, text: str, width: int, metrics: QFontMetrics) -> tuple[list[str], int]:
        lines: list[str] = []
        chars_per_line = max(20, width // max(1, metrics.averageCharWidth()))
        for raw in text.splitlines() or [""]:
            rest = raw
            while len(rest) > chars_per_line:
                lines.append(rest[:chars_per_line])
                rest = rest[chars_per_line:]
            lines.append(rest)
        hidden = max(0, len(lines) - DETAIL_MAX_LINES)
        return lines[:DETAIL_MAX_LINES], hidden

    def sizeHint(self, option: QStyleOptionViewItem, index: ModelIndex) -> QSize:
        base = super().sizeHint(option, index)
        if not index.data(IS_DETAIL_ROLE):
            return QSize(base.width(), max(base.height(), option.fontMetrics.height() + 10))
        metrics = QFontMetrics(self._font_for(index))
        width = self._view.detail_width(index)
        lines, hidden = self._detail_lines(index.data() or "", width, metrics)
        count = len(lines) + (1 if hidden else 0)
        return QSize(base.width(), count * metrics.lineSpacing() + 2 * self.PADDING)

    def _font_for(self, index: ModelIndex) -> Any:
        kind = index.data(KIND_ROLE)
        return self._mono if kind in (BlockKind.TOOL_USE.value, BlockKind.ERROR.value) else self._view.font()

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: ModelIndex) -> None:
        colors = theme.current()
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        style = opt.widget.style() if opt.widget else self._view.style()
        text = opt.text
        opt.text = ""
        if index.data(IS_DETAIL_ROLE):
            opt.icon = type(opt.icon)()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, opt.widget)
        painter.save()
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        text_color = opt.palette.color(QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text)
        rect = opt.rect.adjusted(self.PADDING, 0, -self.PADDING, 0)
        if index.data(IS_DETAIL_ROLE):
            font = self._font_for(index)
            painter.setFont(font)
            metrics = QFontMetrics(font)
            lines, hidden = self._detail_lines(text, self._view.detail_width(index), metrics)
            painter.setPen(text_color if selected else colors.muted if not lines else text_color)
            y = rect.top() + self.PADDING + metrics.ascent()
            for line in lines:
                painter.drawText(rect.left(), y, line)
                y += metrics.lineSpacing()
            if hidden:
                painter.setPen(colors.muted)
                painter.drawText(rect.left(), y, f"… {hidden} more lines (double-click to read all)")
            painter.restore()
            return
        icon_rect = style.subElementRect(QStyle.SubElement.SE_ItemViewItemDecoration, opt, opt.widget)
        left = max(rect.left(), icon_rect.right() + 6)
        metrics = opt.fontMetrics
        duration = format_duration(index.data(DURATION_ROLE))
        status = index.data(STATUS_ROLE)
        right = rect.right()
        if duration:
            width = metrics.horizontalAdvance(duration)
            painter.setPen(text_color if selected else colors.muted)
            painter.drawText(
                QRect(right - width, rect.top(), width, rect.height()), Qt.AlignmentFlag.AlignVCenter, duration
            )
            right -= width + 8
        if status:
            chip_w = metrics.horizontalAdvance(status) + 14
            chip = QRectF(right - chip_w, rect.center().y() - metrics.height() / 2 - 1, chip_w, metrics.height() + 2)
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(colors.status_color(status))
            painter.drawRoundedRect(chip, chip.height() / 2, chip.height() / 2)
            painter.setPen(Qt.GlobalColor.white)
            painter.drawText(chip, Qt.AlignmentFlag.AlignCenter, status)
            right -= int(chip_w) + 8
        painter.setPen(text_color)
        title_rect = QRect(left, rect.top(), max(0, right - left), rect.height())
        painter.drawText(
            title_rect,
            Qt.AlignmentFlag.AlignVCenter,
            metrics.elidedText(text.replace("\n", " "), Qt.TextElideMode.ElideMiddle, title_rect.width()),
        )
        painter.restore()


class TimelineView(QTreeView):
    """The timeline tree: thinking and tool results start folded, text and reviews open; follows the tail.

    Signals:
        detailActivated(str, str): (title, full text) of a detail row that was double-clicked.
    """

    detailActivated = Signal(str, str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setHeaderHidden(True)
        self.setUniformRowHeights(False)
        self.setItemDelegate(TimelineDelegate(self))
        self.setVerticalScrollMode(QTreeView.ScrollMode.ScrollPerPixel)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setExpandsOnDoubleClick(True)
        self.setAnimated(False)
        self.doubleClicked.connect(self._on_double_click)

    def setModel(self, model: Any) -> None:
        super().setModel(model)
        model.modelReset.connect(self._expand_defaults)
        model.rowsInserted.connect(self._on_rows_inserted)

    def keyboardSearch(self, search: str) -> None:
        """Letters are shortcuts in this window, not type-ahead."""

    def detail_width(self, index: ModelIndex) -> int:
        depth = 0
        parent = index.parent()
        while parent.isValid():
            depth += 1
            parent = parent.parent()
        return max(120, self.viewport().width() - depth * self.indentation() - 2 * TimelineDelegate.PADDING)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self.scheduleDelayedItemsLayout()  # detail rows wrap to the new width

    def _expand_defaults(self) -> None:
        model = self.model()
        if model is None:
            return
        self._expand_under(QModelIndex())
        self.scrollToBottom()

    def _expand_under(self, parent: QModelIndex) -> None:
        model = self.model()
        for row in range(model.rowCount(parent)):
            index = model.index(row, 0, parent)
            if index.data(IS_DETAIL_ROLE):
                continue
            self._apply_default(index)
            self._expand_under(index)

    def _apply_default(self, index: QModelIndex) -> None:
        """Open what people read (long text, reviews, errors); fold thinking and tool results."""
        kind = index.data(KIND_ROLE)
        if kind in (BlockKind.HITL.value, BlockKind.ERROR.value):
            self.expand(index)
        elif kind == BlockKind.TEXT.value:
            detail = self.model().index(0, 0, index).data() or ""
            if "\n" in detail.strip() or len(detail) > 100:
                self.expand(index)

    def _on_rows_inserted(self, parent: QModelIndex, first: int, last: int) -> None:
        at_bottom = self.verticalScrollBar().value() >= self.verticalScrollBar().maximum() - 4
        model = self.model()
        for row in range(first, last + 1):
            index = model.index(row, 0, parent)
            if not index.data(IS_DETAIL_ROLE):
                self._apply_default(index)
        if at_bottom:
            self.scrollToBottom()

    def _on_double_click(self, index: QModelIndex) -> None:
        if not index.data(IS_DETAIL_ROLE):
            return
        model = self.model()
        block_id = index.data(BLOCK_ID_ROLE)
        title = model.index(index.parent().row(), 0, index.parent().parent()).data() or block_id
        blocks = {b.block_id: b for b in model.blocks()} if isinstance(model, TimelineModel) else {}
        full = block_detail(blocks[block_id]) if block_id in blocks else index.data()
        self.detailActivated.emit(str(title), full or "")
