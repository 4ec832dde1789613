"""The detail header's risk chip: the level in colour and words, the reasons beside it and in the tooltip."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QWidget

from reviewer_app.domain.risk import Risk
from reviewer_app.ui.common import theme

MAX_REASONS_SHOWN = 2


class RiskChip(QLabel):
    """Hidden for a low-risk call or a question; "HIGH RISK · recursive delete (rm -r)" otherwise."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("riskChip")
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setWordWrap(True)
        self.setMaximumWidth(380)
        self.risk: Risk | None = None
        self.hide()

    def set_risk(self, risk: Risk | None) -> None:
        self.risk = risk
        if risk is None or risk.level == "low":
            self.setAccessibleName("")
            self.hide()
            return
        colors = theme.current()
        color = colors.danger if risk.high else colors.warning
        shown = "; ".join(risk.reasons[:MAX_REASONS_SHOWN])
        more = f" (+{len(risk.reasons) - MAX_REASONS_SHOWN} more)" if len(risk.reasons) > MAX_REASONS_SHOWN else ""
        self.setStyleSheet(
            f"#riskChip {{ background: {color.name()}; color: white; border-radius: 6px; padding: 2px 8px; }}"
        )
        self.setText(f"<b>{risk.level.upper()} RISK</b> · {html.escape(shown)}{html.escape(more)}")
        self.setToolTip(f"{risk.level} risk:\n" + "\n".join(f"• {reason}" for reason in risk.reasons))
        self.setAccessibleName(f"{risk.level} risk: " + "; ".join(risk.reasons))
        self.show()
