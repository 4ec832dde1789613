"""Start a run: an agent and a prompt."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QPlainTextEdit,
    QWidget,
)

from reviewer_app.ui.dialogs.submit import SubmitDialog


class NewRunDialog(SubmitDialog):
    """Start a run: an agent and a prompt.

    Signals:
        submitted(str, str): agent name and prompt.
    """

    submitted = Signal(str, str)

    def __init__(self, agents: list[str], parent: QWidget | None = None) -> None:
        super().__init__("New run", "Start run", parent)
        self.setObjectName("newRunDialog")
        form = QFormLayout()
        self.agent = QComboBox()
        self.agent.setObjectName("newRunAgent")
        self.agent.setAccessibleName("Agent")
        self.agent.addItems(agents)
        self.prompt = QPlainTextEdit()
        self.prompt.setObjectName("newRunPrompt")
        self.prompt.setAccessibleName("Prompt")
        self.prompt.setPlaceholderText("What should the agent do?")
        self.prompt.setTabChangesFocus(True)
        self.prompt.textChanged.connect(self.refresh_ok)
        self.submit_on_ctrl_enter(self.prompt)
        form.addRow("&Agent:", self.agent)
        form.addRow("&Prompt:", self.prompt)
        self.layout_.addLayout(form)
        self.finish_layout()
        self.resize(560, 300)
        self.refresh_ok()
        self.prompt.setFocus()

    def can_submit(self) -> bool:
        return bool(self.agent.currentText()) and bool(self.prompt.toPlainText().strip())

    def submit(self) -> None:
        self.submitted.emit(self.agent.currentText(), self.prompt.toPlainText().strip())
