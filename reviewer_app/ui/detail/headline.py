"""The request first: what the call does, in a readable monospace block, above everything else in the pane.

Why: an operator decides on the command (or path, URL, MCP tool), not on the JSON around it. Claude Code's own
prompt shows the command big with Claude's description of it; here the same, with the description labelled as
the agent's words (it is a claim, not a fact). The whole text is kept (wrapped anywhere, never elided): the tail
of a command is often the part that matters (``… | sh``, ``rm -rf``). The JSON stays one tab away.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QTextOption
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QSizePolicy, QVBoxLayout, QWidget

from reviewer_app.domain.toolcall import command_of, path_of
from reviewer_app.ui.common import theme
from reviewer_app.ui.common.texts import tool_label
from reviewer_app.ui.detail.json_view import monospace_font

__all__ = ["Headline", "HeadlineView", "headline_of", "tool_label"]

MAX_LINES_SHOWN = 8  # more scrolls inside the block: the timeline keeps its room
DESCRIPTION_KEYS = ("description",)
URL_KEYS = ("url", "uri")
KIND_TIPS = {"command": "The command it runs", "path": "The path it touches", "url": "The URL it fetches"}
PATH_KEYS = ("path", "file_path", "filename", "file", "notebook_path")


@dataclass(frozen=True, slots=True)
class Headline:
    """What the block shows: ``text`` (command, path, URL) and what it is, plus the agent's own description."""

    kind: str  # "command", "path", "url", or "" when nothing stands out (the JSON says it all)
    text: str
    description: str | None


def _first_string(arguments: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def headline_of(tool_name: str | None, arguments: Any, data: Mapping[str, Any] | None = None) -> Headline:
    """The headline of a call: its command, else its path, else its URL; the description the agent gave."""
    args = arguments if isinstance(arguments, Mapping) else {}
    description = _first_string(args, DESCRIPTION_KEYS) or _first_string(data or {}, DESCRIPTION_KEYS)
    tool = tool_name or ""
    command = command_of(tool, args) or (_first_string(args, ("command", "cmd")) if tool else None)
    if command is not None:
        return Headline("command", command, description)
    path = path_of(tool, args) or _first_string(args, PATH_KEYS)
    if path is not None:
        return Headline("path", path, description)
    url = _first_string(args, URL_KEYS)
    if url is not None:
        return Headline("url", url, description)
    return Headline("", "", description)


class _Block(QPlainTextEdit):
    """Read-only monospace text as tall as its wrapped lines (up to ``MAX_LINES_SHOWN``)."""

    def sizeHint(self) -> QSize:
        lines = max(1, self.document().size().toSize().height())  # a plain-text layout counts wrapped lines
        shown = min(MAX_LINES_SHOWN, lines)
        margins = 2 * self.document().documentMargin() + 2 * self.frameWidth() + 2
        self.setVerticalScrollBarPolicy(
            Qt.ScrollBarPolicy.ScrollBarAsNeeded if lines > shown else Qt.ScrollBarPolicy.ScrollBarAlwaysOff
        )
        return QSize(super().sizeHint().width(), int(self.fontMetrics().lineSpacing() * shown + margins))


class HeadlineView(QWidget):
    """The command (or path, URL) in monospace, wrapped anywhere, and the agent's description above it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("headline")
        self.setAccessibleName("What the call does")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 2)
        layout.setSpacing(2)
        self.description = QLabel()
        self.description.setObjectName("headlineDescription")
        self.description.setWordWrap(True)
        self.description.setTextFormat(Qt.TextFormat.RichText)
        self.description.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text_view = _Block()
        self.text_view.setObjectName("headlineText")
        self.text_view.setReadOnly(True)
        self.text_view.setFont(monospace_font())
        self.text_view.setFocusPolicy(Qt.FocusPolicy.ClickFocus)  # keys stay with the decision shortcuts
        self.text_view.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.text_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.text_view.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.text_view.document().documentLayout().documentSizeChanged.connect(lambda _size: self._fit())
        layout.addWidget(self.description)
        layout.addWidget(self.text_view)
        self.headline: Headline | None = None
        self.hide()

    def set_headline(self, headline: Headline | None) -> None:
        self.headline = headline
        if headline is None or not (headline.text or headline.description):
            self.hide()
            return
        if headline.description:
            muted = theme.current().muted.name()
            words = html.escape(headline.description)
            self.description.setText(f"<span style='color:{muted}'>The agent's description:</span> <i>{words}</i>")
        self.description.setVisible(bool(headline.description))
        if self.text_view.toPlainText() != headline.text:
            self.text_view.setPlainText(headline.text)
        self.text_view.setToolTip(
            {"command": "The command", "path": "The path", "url": "The URL"}.get(headline.kind, "")
        )
        self.text_view.setVisible(bool(headline.text))
        self.show()
        self._fit()

    def _fit(self) -> None:
        self.text_view.setFixedHeight(self.text_view.sizeHint().height())
