"""Answer an agent's ``ask_user`` question."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QButtonGroup,
    QFormLayout,
    QLabel,
    QLineEdit,
    QRadioButton,
    QWidget,
)

from reviewer_app.ui.dialogs.submit import SubmitDialog


class AnswerDialog(SubmitDialog):
    """Answer an ``ask_user`` question: pick an option (keys 1-9) or type an answer.

    Signals:
        submitted(str): the answer.
    """

    submitted = Signal(str)

    def __init__(self, question: str, options: list[str], parent: QWidget | None = None) -> None:
        super().__init__("Answer the agent", "Answer", parent)
        self.setObjectName("answerDialog")
        label = QLabel(question or "(the agent asked without a question text)")
        label.setObjectName("answerQuestion")
        label.setWordWrap(True)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        font = label.font()
        font.setPointSizeF(font.pointSizeF() * 1.15)
        label.setFont(font)
        self.layout_.addWidget(label)
        self.group = QButtonGroup(self)
        self.options = [str(o) for o in options]
        for number, option in enumerate(self.options, start=1):
            button = QRadioButton(f"&{number}  {option}" if number < 10 else option)
            button.setObjectName(f"answerOption{number}")
            button.setAccessibleName(option)
            self.group.addButton(button, number)
            self.layout_.addWidget(button)
            if number < 10:
                QShortcut(QKeySequence(str(number)), self, button.click)
        self.group.idToggled.connect(lambda *_: self.refresh_ok())
        form = QFormLayout()
        self.text = QLineEdit()
        self.text.setObjectName("answerText")
        self.text.setAccessibleName("Your answer")
        self.text.setPlaceholderText("or type an answer" if self.options else "your answer")
        self.text.textChanged.connect(self.refresh_ok)
        self.text.returnPressed.connect(self.try_submit)
        form.addRow("Answer:", self.text)
        self.layout_.addLayout(form)
        self.finish_layout()
        self.resize(520, 200 + 28 * len(self.options))
        self.refresh_ok()
        if not self.options:
            self.text.setFocus()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        if Qt.Key.Key_1 <= key <= Qt.Key.Key_9 and not event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            button = self.group.button(int(key) - int(Qt.Key.Key_0))
            if button is not None:
                button.click()
                return
        super().keyPressEvent(event)

    def answer(self) -> str:
        typed = self.text.text().strip()
        if typed:
            return typed
        checked = self.group.checkedId()
        return self.options[checked - 1] if checked > 0 else ""

    def can_submit(self) -> bool:
        return bool(self.answer())

    def submit(self) -> None:
        self.submitted.emit(self.answer())
