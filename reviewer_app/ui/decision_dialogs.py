"""Dialogs that collect a decision's text or edited arguments, plus the keymap and text viewers.

Every dialog is opened with ``open()`` and reports through signals: never ``exec()``,
which would spin a nested event loop inside the qasync loop's callbacks.
"""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent, QKeySequence, QShortcut, QShowEvent
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from reviewer_app.ui import theme
from reviewer_app.ui.detail.json_view import JsonHighlighter, monospace_font

EDIT_LIMIT_CHARS = 2_000_000
MAX_ERRORS_SHOWN = 5


class _SubmitDialog(QDialog):
    """OK/Cancel dialog whose OK is also Ctrl+Enter; subclasses say when OK is allowed."""

    def __init__(self, title: str, ok_text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.layout_ = QVBoxLayout(self)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.ok_button = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok_button.setText(ok_text)
        self.ok_button.setObjectName("dialogOkButton")
        self.ok_button.setAccessibleName(ok_text)
        self.ok_button.setToolTip(f"{ok_text} (Ctrl+Enter)")
        self.buttons.accepted.connect(self.try_submit)
        self.buttons.rejected.connect(self.reject)
        for keys in ("Ctrl+Return", "Ctrl+Enter"):
            QShortcut(QKeySequence(keys), self, self.try_submit)

    def finish_layout(self) -> None:
        self.layout_.addWidget(self.buttons)

    def submit_on_ctrl_enter(self, widget: QWidget) -> None:
        """Text editors eat Ctrl+Enter as a newline: catch it before they do."""
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            ctrl = bool(event.modifiers() & Qt.KeyboardModifier.ControlModifier)
            if ctrl and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                self.try_submit()
                return True
        return super().eventFilter(watched, event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        ctrl = bool(event.modifiers() & Qt.KeyboardModifier.ControlModifier)
        if ctrl and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.try_submit()
            return
        super().keyPressEvent(event)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.activateWindow()  # typing goes here at once, not to the window behind

    def can_submit(self) -> bool:
        return True

    def submit(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def try_submit(self) -> None:
        if self.can_submit():
            self.submit()
            self.accept()

    def refresh_ok(self) -> None:
        self.ok_button.setEnabled(self.can_submit())


class EditArgumentsDialog(_SubmitDialog):
    """Edit & approve: a JSON editor checked against the tool's schema as you type.

    Signals:
        submitted(dict): the edited arguments, valid against the schema.
    """

    submitted = Signal(dict)

    def __init__(
        self, tool_name: str, arguments: Any, schema: dict[str, Any] | None, parent: QWidget | None = None
    ) -> None:
        super().__init__(f"Edit & approve {tool_name}", "Approve edited", parent)
        self.setObjectName("editDialog")
        self.schema = schema if isinstance(schema, dict) else None
        self._value: dict[str, Any] | None = None
        hint = QLabel(
            "Edit the arguments; they run instead of the original once approved."
            + ("" if self.schema else " (This tool gave no schema: only JSON syntax is checked.)")
        )
        hint.setWordWrap(True)
        self.editor = QPlainTextEdit()
        self.editor.setObjectName("editArgsEditor")
        self.editor.setAccessibleName("Edited arguments (JSON)")
        self.editor.setFont(monospace_font())
        self.editor.setTabChangesFocus(True)
        self.highlighter = JsonHighlighter(self.editor.document())
        self.submit_on_ctrl_enter(self.editor)
        self.error_label = QLabel()
        self.error_label.setObjectName("editError")
        self.error_label.setAccessibleName("Validation errors")
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.setStyleSheet(f"color: {theme.current().danger.name()};")
        self.layout_.addWidget(hint)
        self.layout_.addWidget(self.editor, 1)
        self.layout_.addWidget(self.error_label)
        self.finish_layout()
        self.resize(720, 520)
        self._validate_timer = QTimer(self, singleShot=True, interval=120)
        self._validate_timer.timeout.connect(self.validate)
        self.editor.textChanged.connect(self._text_changed)
        self.editor.setPlainText(json.dumps(arguments, indent=2, ensure_ascii=False))
        self.validate()

    def _text_changed(self) -> None:
        self._value = None
        self.ok_button.setEnabled(False)  # nothing is sent until the new text validated
        self._validate_timer.start()

    def errors(self) -> list[str]:
        """What is wrong with the current text, empty when it can be approved."""
        text = self.editor.toPlainText()
        if len(text) > EDIT_LIMIT_CHARS:
            return [f"too large to edit here ({len(text):,} characters)"]
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            return [f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"]
        if not isinstance(value, dict):
            return ["the arguments must be a JSON object ({ ... })"]
        if self.schema is not None:
            import jsonschema  # imported when an edit is checked, not on the window's start path

            validator_cls = jsonschema.validators.validator_for(self.schema)
            problems = sorted(validator_cls(self.schema).iter_errors(value), key=lambda e: list(e.absolute_path))
            if problems:
                out = []
                for problem in problems[:MAX_ERRORS_SHOWN]:
                    where = "/".join(str(p) for p in problem.absolute_path) or "arguments"
                    out.append(f"{where}: {problem.message}")
                if len(problems) > MAX_ERRORS_SHOWN:
                    out.append(f"… and {len(problems) - MAX_ERRORS_SHOWN} more")
                return out
        self._value = value
        return []

    def validate(self) -> bool:
        self._validate_timer.stop()
        self._value = None
        problems = self.errors()
        self.error_label.setText("\n".join(f"• {p}" for p in problems))
        self.error_label.setVisible(bool(problems))
        self.ok_button.setEnabled(not problems)
        return not problems

    def can_submit(self) -> bool:
        if self._validate_timer.isActive() or self._value is None:
            return self.validate()
        return True

    def submit(self) -> None:
        assert self._value is not None
        self.submitted.emit(self._value)


class TextDialog(_SubmitDialog):
    """One text box: a reject reason (optional), steer guidance or a follow-up prompt (required).

    Signals:
        submitted(str): the text.
    """

    submitted = Signal(str)

    def __init__(
        self,
        title: str,
        prompt: str,
        ok_text: str,
        *,
        required: bool,
        object_name: str,
        placeholder: str = "",
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(title, ok_text, parent)
        self.setObjectName(object_name)
        self.required = required
        label = QLabel(prompt)
        label.setWordWrap(True)
        self.editor = QPlainTextEdit()
        self.editor.setObjectName(f"{object_name}Text")
        self.editor.setAccessibleName(prompt)
        self.editor.setPlaceholderText(placeholder)
        self.editor.setTabChangesFocus(True)
        self.editor.textChanged.connect(self.refresh_ok)
        self.submit_on_ctrl_enter(self.editor)
        self.layout_.addWidget(label)
        self.layout_.addWidget(self.editor, 1)
        self.finish_layout()
        self.resize(560, 260)
        self.refresh_ok()
        self.editor.setFocus()

    def can_submit(self) -> bool:
        return bool(self.editor.toPlainText().strip()) or not self.required

    def submit(self) -> None:
        self.submitted.emit(self.editor.toPlainText().strip())


class AnswerDialog(_SubmitDialog):
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


class NewRunDialog(_SubmitDialog):
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


KEYMAP = (
    ("j / ↓", "next request"),
    ("k / ↑", "previous request"),
    ("a", "approve (answer, for a question)"),
    ("Shift+A", "approve for this session"),
    ("e", "edit the arguments, then approve"),
    ("r", "reject (optional reason)"),
    ("s", "steer: send guidance instead"),
    ("n", "answer a question"),
    ("Ctrl+Enter", "submit the text in a dialog"),
    ("/", "search"),
    ("Esc", "clear the search, back to the inbox"),
    ("Ctrl+1 / Ctrl+2", "inbox / runs"),
    ("?", "this keymap"),
)


class KeymapDialog(QDialog):
    """The keyboard shortcuts, non-modal."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("keymapDialog")
        self.setWindowTitle("Keyboard shortcuts")
        layout = QVBoxLayout(self)
        rows = "".join(
            f"<tr><td style='padding-right:18px'><b>{keys}</b></td><td>{what}</td></tr>" for keys, what in KEYMAP
        )
        label = QLabel(f"<table>{rows}</table>")
        label.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(label)
        close = QPushButton("Close")
        close.clicked.connect(self.close)
        layout.addWidget(close, 0, Qt.AlignmentFlag.AlignRight)


class TextViewerDialog(QDialog):
    """A read-only window with a block's whole text, non-modal."""

    def __init__(self, title: str, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(title[:120])
        layout = QVBoxLayout(self)
        view = QPlainTextEdit()
        view.setReadOnly(True)
        view.setFont(monospace_font())
        view.setPlainText(text)
        layout.addWidget(view)
        self.resize(760, 520)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)

CANNED_REJECT_REASONS: tuple[str, ...] = ()
RejectDialog = TextDialog
