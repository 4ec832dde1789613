"""The colours of JSON text: keys, strings, numbers, literals and punctuation, with the current theme's colours.

Two users: the edit dialog's JSON editor (a ``QSyntaxHighlighter``: the text changes as it is typed) and the
read-only arguments view, which colours only the lines that come on screen (``VisibleJsonColours``): a
``QSyntaxHighlighter`` colours every line of a new text before it is painted, and for the first 200 KB of a 1.7 MB
array (14,000 lines) that held the GUI thread ~0.5 s.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from PySide6.QtCore import QObject
from PySide6.QtGui import QColor, QFont, QSyntaxHighlighter, QTextCharFormat, QTextDocument, QTextLayout
from PySide6.QtWidgets import QPlainTextEdit

from reviewer_app.ui.common import theme

LONGEST_COLOURED_LINE = 10_200  # a longer line (a "Show all" piece is at most 10,000 characters) stays plain
ON_SCREEN_MARGIN = 40  # lines coloured below the last one on screen, so a small scroll shows them coloured

_KEY = re.compile(r'"(?:[^"\\]|\\.)*"(?=\s*:)')
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?')
_NUMBER = re.compile(r"-?\b\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b")
_LITERAL = re.compile(r"\b(?:true|false|null)\b")
_PUNCT = re.compile(r"[{}\[\],:]")
_KINDS = (("punct", _PUNCT), ("number", _NUMBER), ("literal", _LITERAL), ("string", _STRING), ("key", _KEY))


def json_formats() -> dict[str, QTextCharFormat]:
    """One format per kind of JSON token, in the current theme's colours."""
    colors = theme.current()

    def fmt(color: QColor, bold: bool = False) -> QTextCharFormat:
        f = QTextCharFormat()
        f.setForeground(color)
        if bold:
            f.setFontWeight(QFont.Weight.DemiBold)
        return f

    return {
        "key": fmt(colors.json_key, bold=True),
        "string": fmt(colors.json_string),
        "number": fmt(colors.json_number),
        "literal": fmt(colors.json_literal),
        "punct": fmt(colors.json_punct),
    }


def json_spans(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, length, kind) of one line's tokens, a later kind over an earlier one where they overlap (a number
    inside a string is a string)."""
    if len(text) > LONGEST_COLOURED_LINE:
        return
    kinds: list[str | None] = [None] * len(text)
    for name, pattern in _KINDS:
        for match in pattern.finditer(text):
            kinds[match.start() : match.end()] = [name] * (match.end() - match.start())
    start = 0
    for index in range(1, len(text) + 1):
        if index == len(text) or kinds[index] != kinds[start]:
            kind = kinds[start]
            if kind is not None:
                yield start, index - start, kind
            start = index


class JsonHighlighter(QSyntaxHighlighter):
    """Colours every line of an editable JSON document (the edit dialog's editor)."""

    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self._formats: dict[str, QTextCharFormat] = {}
        self.refresh_theme()

    def refresh_theme(self) -> None:
        self._formats = json_formats()
        if self.document() is not None:
            self.rehighlight()

    def highlightBlock(self, text: str) -> None:
        for start, length, kind in json_spans(text):
            self.setFormat(start, length, self._formats[kind])


class VisibleJsonColours(QObject):
    """Colours a read-only JSON view's lines as they come on screen; the others stay plain until then.

    The view calls :meth:`colour_on_screen` after a new text and whenever it repaints or scrolls
    (``updateRequest``); a new text forgets what was coloured (its lines are new blocks).
    """

    def __init__(self, view: QPlainTextEdit) -> None:
        super().__init__(view)
        self._view = view
        self._formats = json_formats()
        self._coloured: set[int] = set()
        self.enabled = True

    def forget(self) -> None:
        self._coloured.clear()

    def refresh_theme(self) -> None:
        """The theme changed: colour again with its colours (the lines on screen now, the others as they come)."""
        self._formats = json_formats()
        document = self._view.document()
        for number in self._coloured:
            block = document.findBlockByNumber(number)
            if block.isValid():
                block.layout().clearFormats()
        if self._coloured:
            document.markContentsDirty(0, document.characterCount())
        self._coloured.clear()
        self.colour_on_screen()

    def colour_on_screen(self) -> None:
        if not self.enabled:
            return
        view = self._view
        block = view.firstVisibleBlock()
        if not block.isValid():
            return
        lines = view.viewport().height() // max(1, view.fontMetrics().lineSpacing()) + ON_SCREEN_MARGIN
        last = block.blockNumber() + lines
        dirty_from = dirty_to = -1
        while block.isValid() and block.blockNumber() <= last:
            number = block.blockNumber()
            if number not in self._coloured:
                self._coloured.add(number)
                ranges = []
                for start, length, kind in json_spans(block.text()):
                    span = QTextLayout.FormatRange()
                    span.start, span.length, span.format = start, length, self._formats[kind]
                    ranges.append(span)
                if ranges:
                    block.layout().setFormats(ranges)
                    dirty_from = block.position() if dirty_from < 0 else dirty_from
                    dirty_to = block.position() + block.length()
            block = block.next()
        if dirty_from >= 0:  # once: each call lays out again (~3 ms in a 14,000-line document)
            view.document().markContentsDirty(dirty_from, dirty_to - dirty_from)
