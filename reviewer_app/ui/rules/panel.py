"""The Rules tab: every persistent rule with its hits, and add / edit / revoke.

Edit is revoke + add (a rule's id names what decided past requests, so a rule is never changed in place): the
new rule is saved first, then the old one revoked. Revoking asks for confirmation. Hit counts follow the
database: the list is read again after each change the window's feed reports (rules are few: one query).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from reviewer_app.domain.rules import Rule
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.common.buttons import named_button
from reviewer_app.ui.common.coalesced import CoalescedRead
from reviewer_app.ui.common.keepers import DialogKeeper, TaskKeeper
from reviewer_app.ui.models.list_model import table_view
from reviewer_app.ui.rules.editor import RuleEditorDialog
from reviewer_app.ui.rules.habits import HabitsPanel
from reviewer_app.ui.rules.model import COL_FINDINGS, COL_NOTE, COL_PATTERN, RulesModel, StoredRule, rule_state
from reviewer_app.ui.window.live import LiveController

AGES_EVERY_MS = 15_000

# (rule, settle pending now, id of the rule it replaces, pending ids the preview showed)
SaveRule = Callable[[Rule, bool, str | None, Sequence[str]], None]


class RulesPanel(QWidget):
    """The rules list and its buttons. ``save_rule`` is how a finished editor's rule is committed (the window's
    triage hub: it may hold the rule's settlements for the undo grace period).

    Signals:
        failed(str): a read or write failed; for the banner.
        message(str): an action went through; for the status bar.
    """

    failed = Signal(str)
    message = Signal(str)

    def __init__(
        self,
        backend: SQLHITLBackend,
        live: LiveController,
        tasks: TaskKeeper,
        dialogs: DialogKeeper,
        save_rule: SaveRule,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("rulesPanel")
        self.backend = backend
        self.tasks = tasks
        self.dialogs = dialogs
        self.save_rule = save_rule
        self.known_scopes: Callable[[], dict[str, set[str]]] | None = None  # what a scope may name (the window)
        self.model = RulesModel(self)
        self._reader = CoalescedRead(
            tasks.spawn,
            self._load,
            lambda exc: self.failed.emit(f"Could not read the rules: {exc}"),
            self._update_buttons,
        )

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        bar = QHBoxLayout()
        self.add_button = named_button("Add rule…", "addRuleButton", "A new allow, ask or deny rule, with its preview")
        self.edit_button = named_button("Edit…", "editRuleButton", "Replace the selected rule (revoke + add)")
        self.revoke_button = named_button("Revoke…", "revokeRuleButton", "Revoke the selected rule (after confirming)")
        self.inactive_check = QCheckBox("Show revoked and expired")
        self.inactive_check.setObjectName("showInactiveRules")
        for widget in (self.add_button, self.edit_button, self.revoke_button):
            bar.addWidget(widget)
        bar.addStretch(1)
        bar.addWidget(self.inactive_check)
        layout.addLayout(bar)
        self.view = table_view("rulesView", "Rules", self.model)
        header = self.view.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(COL_PATTERN, QHeaderView.ResizeMode.Stretch)
        header.resizeSection(COL_NOTE, 140)
        header.resizeSection(COL_FINDINGS, 170)  # the first finding; the tooltip has them all
        self.habits = HabitsPanel(backend, tasks)
        self.model.findings = self.habits.findings.findings_for
        self.habits.on_findings = self.model.findings_changed
        self.habits.make_rule.connect(lambda pattern: self.open_add([pattern]))
        self.habits.failed.connect(self.failed)
        self._habit_rules: list[str] | None = None  # the rule ids the suggestions and findings were read for
        split = QSplitter(Qt.Orientation.Vertical)
        split.setObjectName("rulesSplit")
        split.addWidget(self.view)
        split.addWidget(self.habits)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout.addWidget(split, 1)
        self.status_label = QLabel()
        self.status_label.setObjectName("rulesStatus")
        layout.addWidget(self.status_label)

        self.add_button.clicked.connect(lambda _checked=False: self.open_add())
        self.edit_button.clicked.connect(self.open_edit)
        self.revoke_button.clicked.connect(self.confirm_revoke)
        self.inactive_check.toggled.connect(lambda _on: self.refresh())
        self.view.selectionModel().currentChanged.connect(lambda *_: self._update_buttons())
        self.view.doubleClicked.connect(lambda _index: self.open_edit())
        # Keys on the list, for an operator who never leaves the keyboard: Delete revokes, Return edits, Insert adds.
        rule_keys = (
            ("Delete", self.confirm_revoke, "revoke the selected rule (Rules tab)"),
            ("Return", self.open_edit, "edit the selected rule (Rules tab)"),
            ("Insert", self.open_add, "add a rule (Rules tab)"),
        )
        for keys, slot, what in rule_keys:
            shortcut = QShortcut(QKeySequence(keys), self.view, lambda slot=slot: slot())
            shortcut.setContext(Qt.ShortcutContext.WidgetShortcut)
            shortcut.setWhatsThis(what)  # the keymap (`?`) lists it
        self.add_button.setToolTip(self.add_button.toolTip() + " (Insert)")
        self.edit_button.setToolTip(self.edit_button.toolTip() + " (Return)")
        self.revoke_button.setToolTip(self.revoke_button.toolTip() + " (Delete)")
        live.refreshed.connect(self.refresh)  # hit counts move as rules decide calls
        self._ages = QTimer(self, interval=AGES_EVERY_MS)  # "expires in", "last hit … ago" move with the clock
        self._ages.timeout.connect(self._repaint_ages)
        self._ages.start()
        self._update_buttons()

    # -- the list --------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the rules again (one read in flight; a refresh asked meanwhile runs after it)."""
        self._reader()

    async def _load(self) -> None:
        rules = await self.backend.list_rules(include_inactive=self.inactive_check.isChecked())
        selected = self.selected()
        self.model.set_rules(rules)
        if selected is not None:
            row = self.model.row_of(selected.rule.id)
            if row >= 0:
                self.view.setCurrentIndex(self.model.index(row, 0))
        self._update_status()
        ids = [entry.rule.id for entry in rules]
        if ids != self._habit_rules:  # a rule came or went: what the history suggests moves
            self._habit_rules = ids
            self.habits.refresh()

    def _repaint_ages(self) -> None:
        if self.isVisible() and self.model.rowCount():
            self.view.viewport().update()

    def _update_status(self) -> None:
        rules = self.model.rules
        hits = sum(entry.hit_count for entry in rules)
        self.status_label.setText(f"{len(rules)} rule(s) · {hits} automatic decision(s)" if rules else "No rules yet")

    def selected(self) -> StoredRule | None:
        index = self.view.currentIndex()
        return self.model.rule_at(index.row()) if index.isValid() else None

    def select_rule(self, rule_id: str) -> bool:
        row = self.model.row_of(rule_id)
        if row < 0:
            return False
        self.view.setCurrentIndex(self.model.index(row, 0))
        return True

    def _update_buttons(self) -> None:
        entry = self.selected()
        active = entry is not None and rule_state(entry, self.model.now()) == "active"
        self.edit_button.setEnabled(entry is not None)
        self.revoke_button.setEnabled(active)

    # -- add, edit, revoke -------------------------------------------------------------------
    def _editor(self, title: str, ok_text: str, **kwargs: object) -> RuleEditorDialog:
        known = self.known_scopes() if self.known_scopes is not None else None
        dialog = RuleEditorDialog(
            self.backend,
            self.tasks.spawn,
            title=title,
            ok_text=ok_text,
            known=known,
            parent=self,
            **kwargs,  # type: ignore[arg-type]
        )
        return dialog

    def open_add(self, patterns: Sequence[str] = ()) -> RuleEditorDialog:
        """The rule editor for a new rule (``patterns``: prefilled, e.g. from a suggestion, with its preview)."""
        dialog = self._editor("Add rule", "Save rule", patterns=list(patterns))
        line = dialog.pattern_combo.lineEdit()
        if line is not None:
            line.setPlaceholderText("Bash(npm run test:*), Write(src/**), mcp__github__*")
        dialog.submitted.connect(lambda rule, settle: self.save_rule(rule, settle, None, dialog.settleable_ids()))
        self.dialogs.open(dialog)
        return dialog

    def open_edit(self) -> RuleEditorDialog | None:
        entry = self.selected()
        if entry is None:
            return None
        rule = entry.rule
        dialog = self._editor(
            f"Edit rule {rule.id}",
            "Save (revoke the old rule)",
            patterns=[rule.pattern],
            effect=rule.effect,
            scopes=[rule.scope, "global"],
            scope=rule.scope,
            note=rule.note,
            expires_at=rule.expires_at,
        )
        replaces = rule.id if entry.revoked_at is None else None
        dialog.submitted.connect(lambda new, settle: self.save_rule(new, settle, replaces, dialog.settleable_ids()))
        self.dialogs.open(dialog)
        return dialog

    def confirm_revoke(self) -> QMessageBox | None:
        entry = self.selected()
        if entry is None or entry.revoked_at is not None:
            return None
        rule = entry.rule
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Revoke rule",
            f"Revoke {rule.describe()}?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            self,
        )
        box.setObjectName("revokeRuleBox")
        box.setInformativeText(
            f"It decided {entry.hit_count} call(s). It stays on the record (requests it decided keep naming it); "
            "from now on its calls are asked again."
        )
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.button(QMessageBox.StandardButton.Yes).setText("Revoke")
        box.buttonClicked.connect(
            lambda button: (
                self.tasks.spawn(self.revoke(rule.id))
                if box.standardButton(button) == QMessageBox.StandardButton.Yes
                else None
            )
        )
        self.dialogs.open(box)
        return box

    async def revoke(self, rule_id: str) -> None:
        try:
            revoked = await self.backend.revoke_rule(rule_id, revoked_by=self.backend.reviewer)
        except Exception as exc:
            self.failed.emit(f"Could not revoke {rule_id}: {exc}")
            return
        self.message.emit(f"Revoked {rule_id}" if revoked else f"{rule_id} was already revoked")
        self.refresh()

    def focus_list(self) -> None:
        self.view.setFocus(Qt.FocusReason.ShortcutFocusReason)
        if not self.view.currentIndex().isValid() and self.model.rowCount():
            self.view.setCurrentIndex(self.model.index(0, 0, QModelIndex()))
