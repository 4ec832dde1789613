"""The risk chip under the detail header: the level in colour and words, the reasons beside it and in the tooltip.

While the secret scan of the arguments still runs the chip says so ("checking for secrets…"), beside the level
already known: a chip never disappears or changes without a word.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QLabel, QWidget

from reviewer_app.domain.risk import Risk
from reviewer_app.ui.common import theme

MAX_REASONS_SHOWN = 2
CHIP_PADDING_PX = 8  # left and right, in the style sheet
CHECKING = "checking for secrets…"
CHECKING_TIP = (
    "The arguments are still being scanned for secret-looking values. Until the scan ends, approving with the "
    "keyboard takes a second press of the key."
)


class RiskChip(QLabel):
    """Hidden for a low-risk call or a question; "HIGH RISK · recursive delete (rm -r)" otherwise."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("riskChip")
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setWordWrap(True)
        self.risk: Risk | None = None
        self.pending: str | None = None
        self._style = ""
        self.hide()

    def set_risk(self, risk: Risk | None, *, pending: str | None = None) -> None:
        """Show ``risk``; ``pending`` (e.g. ``CHECKING``) says what is not known yet, even for a low risk so far."""
        self.risk = risk
        self.pending = pending
        known = risk is not None and risk.level != "low"
        if not known and pending is None:
            self.clear()
            self.setToolTip("")
            self.setAccessibleName("")
            self.hide()
            return
        colors = theme.current()
        if risk is not None and known:
            color = colors.danger if risk.high else colors.warning
            shown = "; ".join(risk.reasons[:MAX_REASONS_SHOWN])
            extra = len(risk.reasons) - MAX_REASONS_SHOWN
            more = f" (+{extra} more)" if extra > 0 else ""
            text = f"<b>{risk.level.upper()} RISK</b> · {html.escape(shown)}{html.escape(more)}"
            tip = f"{risk.level} risk:\n" + "\n".join(f"• {reason}" for reason in risk.reasons)
            accessible = f"{risk.level} risk: " + "; ".join(risk.reasons)
        else:
            color, text, tip, accessible = colors.muted, "", "", ""
        if pending is not None:
            text += (" · " if text else "") + f"<i>{html.escape(pending)}</i>"
            tip += ("\n\n" if tip else "") + CHECKING_TIP
            accessible += ("; " if accessible else "") + pending
        style = (
            f"#riskChip {{ background: {color.name()}; color: white; border-radius: 6px; "
            f"padding: 2px {CHIP_PADDING_PX}px; }}"
        )
        if style != self._style:  # re-polishing costs a few ms: only when the colour changes
            self._style = style
            self.setStyleSheet(style)
        self.setText(text)
        self.setMaximumWidth(self._one_line_width())  # as wide as the row allows, to its text's end
        self.setToolTip(tip)
        self.setAccessibleName(accessible)
        self.show()

    def _one_line_width(self) -> int:
        """The chip's width with its text on one line (padding included)."""
        document = QTextDocument()
        document.setDefaultFont(self.font())
        document.setDocumentMargin(0)
        document.setHtml(self.text())
        margins = self.contentsMargins()
        return int(document.idealWidth()) + margins.left() + margins.right() + 2 * CHIP_PADDING_PX + 4
