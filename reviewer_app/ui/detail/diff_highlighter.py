"""The colours of a unified diff (the detail pane's write diff, History's edit diff, the edit dialog's preview)."""

from __future__ import annotations

from PySide6.QtGui import QFont, QSyntaxHighlighter, QTextCharFormat, QTextDocument

from reviewer_app.ui.common import theme


class DiffHighlighter(QSyntaxHighlighter):
    """Colours a unified diff: additions, deletions, hunk headers.

    The formats are made once per theme (``rehighlight`` makes them again): a 200 KB diff is ~3,000 blocks, and
    asking the palette and building formats for each held the GUI thread ~100 ms when a write's diff arrived.
    """

    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self._formats = self._make_formats()

    @staticmethod
    def _make_formats() -> dict[str, QTextCharFormat]:
        colors = theme.current()
        header, added, deleted, hunk = QTextCharFormat(), QTextCharFormat(), QTextCharFormat(), QTextCharFormat()
        header.setFontWeight(QFont.Weight.Bold)
        added.setForeground(colors.diff_add_fg)
        added.setBackground(colors.diff_add_bg)
        deleted.setForeground(colors.diff_del_fg)
        deleted.setBackground(colors.diff_del_bg)
        hunk.setForeground(colors.diff_hunk)
        return {"header": header, "+": added, "-": deleted, "@": hunk}

    def rehighlight(self) -> None:
        """After a theme change: the formats follow it."""
        self._formats = self._make_formats()
        super().rehighlight()

    def highlightBlock(self, text: str) -> None:
        first = text[:1]
        if first in "+-" and text[:3] in ("+++", "---"):
            self.setFormat(0, len(text), self._formats["header"])
        elif first in ("+", "-") or text.startswith("@@"):
            self.setFormat(0, len(text), self._formats[first])
