"""Edit a call's arguments before approving: one field per argument, checked against the tool's schema, with a diff."""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import QEvent, QObject, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent, QTextCursor
from PySide6.QtWidgets import (
    QDialogButtonBox,
    QGridLayout,
    QLabel,
    QPlainTextEdit,
    QScrollArea,
    QSizePolicy,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from reviewer_app.domain.json_schemas import SchemaProblem, schema_errors
from reviewer_app.ui.common import theme
from reviewer_app.ui.detail.headline import headline_of
from reviewer_app.ui.detail.json_colours import JsonHighlighter
from reviewer_app.ui.detail.json_view import monospace_font
from reviewer_app.ui.dialogs.submit import SubmitDialog
from reviewer_app.ui.dialogs.typing_target import TypingTarget

EDIT_LIMIT_CHARS = 2_000_000
PREVIEW_SHOWN_CHARS = 200_000
MAX_ERRORS_SHOWN = 5


class _FieldEditor(QPlainTextEdit):
    """One argument in the edit form: a string as plain multi-line text, anything else as JSON.

    Signals:
        returnPressed(): Return in a one-line value (it reviews the edit, as in a line edit).
    """

    returnPressed = Signal()

    def __init__(self, name: str, value: Any) -> None:
        super().__init__()
        self.name = name
        self.is_text = isinstance(value, str)
        self.setObjectName(f"editField_{name}")
        self.setAccessibleName(f"{name} ({'text' if self.is_text else 'JSON'})")
        self.setTabChangesFocus(True)
        self.setFont(monospace_font())
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setPlainText(value if self.is_text else json.dumps(value, indent=2, ensure_ascii=False))
        lines = self.toPlainText().count("\n") + 1
        self.multiline = lines > 1 or len(self.toPlainText()) > 100
        if self.is_text and lines == 1 and self.multiline:  # one long line (a long command): wrapped, all visible
            self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        rows = min(lines, 16) if self.multiline else 1
        self._height = self.fontMetrics().lineSpacing() * rows + 2 * self.frameWidth() + 10
        if self.multiline:  # long text takes the room there is; a one-line value stays one line high
            self.setMinimumHeight(self.fontMetrics().lineSpacing() * 3 + 12)
            self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        else:
            self.setFixedHeight(self._height)
            self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

    def sizeHint(self) -> QSize:
        return QSize(super().sizeHint().width(), self._height)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        """Return in a one-line value (a path, a command) is not a newline: it reviews the edit."""
        plain = not event.modifiers() & (Qt.KeyboardModifier.ShiftModifier | Qt.KeyboardModifier.ControlModifier)
        if not self.multiline and plain and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            event.accept()
            self.returnPressed.emit()  # not the default button: it is disabled until the typing is validated
            return
        super().keyPressEvent(event)

    def value(self) -> Any:
        """The field's value; raises ValueError naming the field when its JSON does not parse."""
        text = self.toPlainText()
        if self.is_text:
            return text
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{self.name}: not valid JSON: {exc.msg} at line {exc.lineno}") from exc


class EditArgumentsDialog(SubmitDialog):
    """Edit & approve: each argument in its own editor (strings as real multi-line text) or the whole JSON.

    Checked against the tool's schema as you type; Ctrl+Enter first shows the edit as a diff
    against the arguments shown, and only a second Ctrl+Enter approves it.

    Signals:
        submitted(dict): the edited arguments, valid against the schema.
    """

    submitted = Signal(dict)
    FIELDS_TAB, JSON_TAB = 0, 1

    def __init__(
        self, tool_name: str, arguments: Any, schema: dict[str, Any] | None, parent: QWidget | None = None
    ) -> None:
        super().__init__(f"Edit & approve {tool_name}", "Review edit", parent)
        self.setObjectName("editDialog")
        self.schema = schema if isinstance(schema, dict) else None
        self.tool_name = tool_name
        self.original = arguments
        self._value: dict[str, Any] | None = None
        self.previewing = False
        self.fields: dict[str, _FieldEditor] = {}
        hint = QLabel(
            "Edit the arguments; they run instead of the original once approved. Ctrl+Enter shows the change first."
            + ("" if self.schema else " (This tool gave no schema: only JSON syntax is checked.)")
        )
        hint.setWordWrap(True)
        self.form_page = QScrollArea()
        self.form_page.setObjectName("editFields")
        self.form_page.setWidgetResizable(True)
        self.editor = QPlainTextEdit()
        self.editor.setObjectName("editArgsEditor")
        self.editor.setAccessibleName("Edited arguments (JSON)")
        self.editor.setFont(monospace_font())
        self.editor.setTabChangesFocus(True)
        self.highlighter = JsonHighlighter(self.editor.document())
        self.submit_on_ctrl_enter(self.editor)
        self.tabs = QTabWidget()
        self.tabs.setObjectName("editTabs")
        self.tabs.addTab(self.form_page, "&Fields")
        self.tabs.addTab(self.editor, "&JSON")
        self.error_label = QLabel()
        self.error_label.setObjectName("editError")
        self.error_label.setAccessibleName("Validation errors")
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.setStyleSheet(f"color: {theme.current().danger.name()};")
        edit_page = QWidget()
        edit_layout = QVBoxLayout(edit_page)
        edit_layout.setContentsMargins(0, 0, 0, 0)
        edit_layout.addWidget(hint)
        edit_layout.addWidget(self.tabs, 1)
        edit_layout.addWidget(self.error_label)

        self.preview_note = QLabel()
        self.preview_note.setObjectName("editPreviewNote")
        self.preview_note.setWordWrap(True)
        self.diff_view = QPlainTextEdit()
        self.diff_view.setObjectName("editDiffView")
        self.diff_view.setAccessibleName("The edit as a diff")
        self.diff_view.setReadOnly(True)
        self.diff_view.setFont(monospace_font())
        self.diff_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.submit_on_ctrl_enter(self.diff_view)
        from reviewer_app.ui.detail.diff_highlighter import DiffHighlighter

        self.diff_highlighter = DiffHighlighter(self.diff_view.document())
        preview_page = QWidget()
        preview_layout = QVBoxLayout(preview_page)
        preview_layout.setContentsMargins(0, 0, 0, 0)
        preview_layout.addWidget(self.preview_note)
        preview_layout.addWidget(self.diff_view, 1)
        self.pages = QStackedWidget()
        self.pages.addWidget(edit_page)
        self.pages.addWidget(preview_page)
        self.layout_.addWidget(self.pages, 1)
        self.back_button = self.buttons.addButton("&Back to editing", QDialogButtonBox.ButtonRole.ResetRole)
        self.back_button.setObjectName("editBackButton")
        self.back_button.clicked.connect(self.back_to_editing)
        self.back_button.hide()
        self.finish_layout()
        # Tab walks the values, then Review edit and Cancel; the tabs are switched with Alt+F / Alt+J, so Tab never
        # parks on the tab bar, and typing on a button goes to the value being edited (issue 25).
        self.tabs.tabBar().setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.form_page.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.last_editor: QPlainTextEdit = self.editor
        self.typing = TypingTarget(self._typing_editor, self)
        self.typing.watch(*self.buttons.buttons(), self.tabs.tabBar())
        self.resize(760, 580)
        self._validate_timer = QTimer(self, singleShot=True, interval=120)
        self._validate_timer.timeout.connect(self.validate)
        self.editor.setPlainText(json.dumps(arguments, indent=2, ensure_ascii=False))
        self.editor.textChanged.connect(self._text_changed)
        has_fields = isinstance(arguments, dict) and bool(arguments)
        if has_fields:
            self._build_fields(arguments)
            if not any(field.multiline for field in self.fields.values()):
                self.resize(720, 200 + 44 * len(self.fields))  # a few one-line values: a small dialog
        self.tabs.setTabEnabled(self.FIELDS_TAB, has_fields)
        self.tabs.setCurrentIndex(self.FIELDS_TAB if has_fields else self.JSON_TAB)
        self.tabs.currentChanged.connect(self._on_tab_changed)
        self.validate()
        self._focus_first_editor()

    # -- the two ways of editing --------------------------------------------------------------------
    def _build_fields(self, arguments: dict[str, Any]) -> None:
        page = QWidget()
        grid = QGridLayout(page)
        self.fields = {}
        stretched = False
        for row, (name, value) in enumerate(arguments.items()):
            field = _FieldEditor(str(name), value)
            field.textChanged.connect(self._text_changed)
            field.returnPressed.connect(self.try_submit)
            self.submit_on_ctrl_enter(field)
            label = QLabel(f"{name}" if field.is_text else f"{name} (JSON)")
            label.setBuddy(field)
            label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop)
            grid.addWidget(label, row, 0)
            grid.addWidget(field, row, 1)
            grid.setRowStretch(row, 1 if field.multiline else 0)
            stretched = stretched or field.multiline
            self.fields[str(name)] = field
        if not stretched:
            grid.setRowStretch(len(arguments), 1)  # short fields stay at the top
        self.form_page.setWidget(page)

    def field_editor(self, name: str) -> QPlainTextEdit:
        return self.fields[name]

    def _typing_editor(self) -> QWidget | None:
        """Where typing on a button goes: the value edited last on the tab shown (none during the preview)."""
        if self.previewing:
            return None
        if self.tabs.currentIndex() == self.JSON_TAB or not self.fields:
            return self.editor
        if self.last_editor in self.fields.values():
            return self.last_editor
        return next(iter(self.fields.values()))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if (
            event.type() == QEvent.Type.FocusIn
            and isinstance(watched, QPlainTextEdit)
            and watched is not self.diff_view
        ):
            self.last_editor = watched
        return super().eventFilter(watched, event)

    def focusNextPrevChild(self, next: bool) -> bool:
        """Tab into a value puts the caret at its end, as ``e`` does for the first: typing appends."""
        moved = super().focusNextPrevChild(next)
        widget = self.focusWidget()
        if isinstance(widget, QPlainTextEdit) and widget is not self.diff_view:
            widget.moveCursor(QTextCursor.MoveOperation.End)
            self.last_editor = widget
        return moved

    def _focus_first_editor(self) -> None:
        """The caret at the end of the value the headline shows (the command, path or URL), else of the longest
        text value (or of the JSON): typing appends, as one expects. The agent's description is often the longest
        value and never runs."""
        if self.tabs.currentIndex() == self.FIELDS_TAB and self.fields:
            headline = headline_of(self.tool_name, self.original).text
            longest = max(self.fields.values(), key=lambda f: len(f.toPlainText()) if f.is_text else -1)
            shown = (f for f in self.fields.values() if f.is_text and headline and f.toPlainText() == headline)
            target: QPlainTextEdit = next(shown, longest)
        else:
            target = self.editor
        target.moveCursor(QTextCursor.MoveOperation.End)
        target.ensureCursorVisible()
        target.setFocus()
        self.last_editor = target

    def show_json(self) -> None:
        self.tabs.setCurrentIndex(self.JSON_TAB)

    def show_fields(self) -> None:
        self.tabs.setCurrentIndex(self.FIELDS_TAB)

    def _on_tab_changed(self, index: int) -> None:
        """Carry the edit across: the fields into the JSON, or the JSON back into the fields."""
        if index == self.JSON_TAB:
            try:
                value = self._fields_value()
            except ValueError:
                return  # keep the JSON as it was; the error stays on the fields
            self.editor.blockSignals(True)
            self.editor.setPlainText(json.dumps(value, indent=2, ensure_ascii=False))
            self.editor.blockSignals(False)
        else:
            try:
                value = json.loads(self.editor.toPlainText())
            except json.JSONDecodeError:
                value = None
            if not isinstance(value, dict) or not value:
                self.tabs.blockSignals(True)
                self.tabs.setCurrentIndex(self.JSON_TAB)  # the fields cannot show it: stay here and say why
                self.tabs.blockSignals(False)
                self.validate()
                return
            if list(value) == list(self.fields) and all(
                isinstance(v, str) == self.fields[k].is_text for k, v in value.items()
            ):
                for name, field in self.fields.items():
                    field.blockSignals(True)
                    text = value[name]
                    field.setPlainText(text if field.is_text else json.dumps(text, indent=2, ensure_ascii=False))
                    field.blockSignals(False)
            else:
                self._build_fields(value)
        self.validate()

    def _fields_value(self) -> dict[str, Any]:
        return {name: field.value() for name, field in self.fields.items()}

    def _text_changed(self) -> None:
        self._value = None
        self.ok_button.setEnabled(False)  # nothing is sent until the new text validated
        self._validate_timer.start()

    def errors(self) -> list[str]:
        """What is wrong with the current text, empty when it can be approved."""
        if self.tabs.currentIndex() == self.FIELDS_TAB and self.fields:
            if sum(len(f.toPlainText()) for f in self.fields.values()) > EDIT_LIMIT_CHARS:
                return ["too large to edit here"]
            try:
                value: Any = self._fields_value()
            except ValueError as exc:
                return [str(exc)]
        else:
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
            try:
                problems = schema_errors(value, self.schema)
            except SchemaProblem as exc:
                return [str(exc)]
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
        if self.previewing:
            return self._value is not None
        if self._validate_timer.isActive() or self._value is None:
            return self.validate()
        return True

    # -- the preview ---------------------------------------------------------------------------------
    def try_submit(self) -> None:
        """First Ctrl+Enter: the diff; second: approve what the diff shows."""
        if not self.can_submit():
            return
        if not self.previewing:
            self.show_preview()
            return
        self.submit()
        self.accept()

    def show_preview(self) -> None:
        from reviewer_app.ui.detail.edit_diff import edit_diff

        assert self._value is not None
        diff = edit_diff(self.original, self._value)
        if len(diff) > PREVIEW_SHOWN_CHARS:  # like the pane's diff: more would make the text layout crawl
            cut = diff.rfind("\n", 0, PREVIEW_SHOWN_CHARS) + 1
            diff = diff[:cut] + f"… {diff.count(chr(10), cut):,} more diff lines not shown\n"
        self.previewing = True
        if diff:
            self.preview_note.setText(
                "The edit, against the arguments you were shown. Ctrl+Enter approves it; Esc goes back."
            )
            self.diff_view.setPlainText(diff)
        else:
            self.preview_note.setText("Nothing was changed: this approves the call exactly as shown.")
            self.diff_view.setPlainText("")
        self.pages.setCurrentIndex(1)
        self.ok_button.setText("Approve edited")
        self.ok_button.setAccessibleName("Approve edited")
        self.ok_button.setToolTip("Approve edited (Ctrl+Enter)")
        self.back_button.show()
        self.diff_view.setFocus()

    def back_to_editing(self) -> None:
        self.previewing = False
        self.pages.setCurrentIndex(0)
        self.ok_button.setText("Review edit")
        self.ok_button.setAccessibleName("Review edit")
        self.ok_button.setToolTip("Review edit (Ctrl+Enter)")
        self.back_button.hide()
        self._focus_first_editor()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if self.previewing and event.key() == Qt.Key.Key_Escape:
            self.back_to_editing()
            return
        ctrl = bool(event.modifiers() & Qt.KeyboardModifier.ControlModifier)
        if self.previewing and not ctrl and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            return  # a Return meant for the editor never approves: the preview takes Ctrl+Enter or a click
        super().keyPressEvent(event)

    def submit(self) -> None:
        assert self._value is not None
        self.submitted.emit(self._value)
