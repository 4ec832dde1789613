"""The rule editor: effect, pattern, scope, expiry and note, with the preview of what the rule would match.

Why the preview sits beside the form: a rule is only safe when the operator sees, before saving, the past and
pending requests it would have decided (``SQLHITLBackend.preview_rule``), and can settle the pending ones at
once. Used for "Add rule…", "Edit rule…" (revoke + add) and "Approve and make a rule…" from a request.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Coroutine, Mapping, Sequence
from typing import Any

import shiboken6
from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent, QKeySequence, QShortcut, QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from reviewer_app.domain.rules import EFFECTS, Rule, RuleError, Verdict, new_rule_id, parse_duration
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.common import theme
from reviewer_app.ui.models.request_list import RequestListModel, request_list_view

PREVIEW_DEBOUNCE_MS = 250
PREVIEW_LIMIT = 200
NEVER = "never"
AS_BEFORE = "as before"
EXPIRY_CHOICES = (NEVER, "1h", "1d", "1w", "30d")
SCOPE_KINDS = ("agent", "session", "workspace")


class RuleEditorDialog(QDialog):
    """A rule form with its live preview. Opened with ``open()``; answers through ``submitted``.

    Signals:
        submitted(object, bool): the new :class:`Rule`, and whether to settle its pending matches now.
        previewed(int): a preview finished; how many requests it lists (tests and the status line).
    """

    submitted = Signal(object, bool)
    previewed = Signal(int)

    def __init__(
        self,
        backend: SQLHITLBackend,
        spawn: Callable[[Coroutine[Any, Any, Any]], Any],
        *,
        title: str,
        ok_text: str,
        patterns: Sequence[str] = (),
        effect: str = "allow",
        effect_fixed: bool = False,
        pattern_editable: bool = True,
        scopes: Sequence[str] = ("global",),
        scope: str = "global",
        note: str = "",
        expires_at: float | None = None,
        notice: str = "",
        known: Mapping[str, Collection[str]] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("ruleEditorDialog")
        # What a scope may name: the agents, sessions and workspaces this window has seen (None: not checked).
        self.known = {kind: set(values) for kind, values in known.items()} if known is not None else None
        if self.known is not None and ":" in scope:  # editing a rule: its own scope stays acceptable
            kind, _, value = scope.partition(":")
            self.known.setdefault(kind, set()).add(value)
        self.setWindowTitle(title)
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.backend = backend
        self._spawn = spawn
        self._generation = 0
        self._kept_expires_at = expires_at
        self.pending_matches = 0
        self.held: dict[str, Verdict] = {}  # previewed requests another deny/ask rule in force keeps: id → its verdict

        form = QFormLayout()
        self.effect_combo = QComboBox()
        self.effect_combo.setObjectName("ruleEffect")
        self.effect_combo.setAccessibleName("Effect")
        self.effect_combo.addItems(list(reversed(EFFECTS)))  # allow, ask, deny
        self.effect_combo.setCurrentText(effect)
        self.effect_combo.setEnabled(not effect_fixed)
        self.pattern_combo = QComboBox()
        self.pattern_combo.setObjectName("rulePattern")
        self.pattern_combo.setAccessibleName("Pattern, narrowest first")
        self.pattern_combo.setEditable(pattern_editable)
        self.pattern_combo.addItems(list(patterns))
        self.pattern_combo.setToolTip(
            "The narrowest pattern that covers the request comes first; wider ones are your explicit choice"
        )
        self.pattern_combo.setMinimumContentsLength(36)
        self.scope_combo = QComboBox()
        self.scope_combo.setObjectName("ruleScope")
        self.scope_combo.setAccessibleName("Scope")
        self.scope_combo.setEditable(True)
        self.scope_combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        known_now = self.known or {}
        known_choices = [f"{kind}:{value}" for kind in SCOPE_KINDS for value in sorted(known_now.get(kind, ()))]
        self.scope_combo.addItems(list(dict.fromkeys([scope, *scopes, *known_choices])))
        self.scope_combo.setToolTip("global, or pick an agent, session or workspace this window has seen")
        self.scope_combo.setCurrentText(scope)
        self.expires_combo = QComboBox()
        self.expires_combo.setObjectName("ruleExpires")
        self.expires_combo.setAccessibleName("Expires after")
        self.expires_combo.setEditable(True)
        self.expires_combo.addItems(([AS_BEFORE] if expires_at is not None else []) + list(EXPIRY_CHOICES))
        self.expires_combo.setToolTip("never, or a duration: 30s, 15m, 1h, 2d, 1w")
        self.note_edit = QLineEdit(note)
        self.note_edit.setObjectName("ruleNote")
        self.note_edit.setAccessibleName("Note")
        self.note_edit.setPlaceholderText("why this rule exists (optional)")
        form.addRow("&Effect:", self.effect_combo)
        form.addRow("&Pattern:", self.pattern_combo)
        form.addRow("S&cope:", self.scope_combo)
        form.addRow("E&xpires:", self.expires_combo)
        form.addRow("&Note:", self.note_edit)
        for combo in (self.pattern_combo, self.scope_combo, self.expires_combo):
            line = combo.lineEdit()
            if line is not None:
                line.installEventFilter(self)  # an Alt+letter no mnemonic took is not typed

        left = QVBoxLayout()
        left.addLayout(form)
        self.notice_label = QLabel(notice)
        self.notice_label.setObjectName("ruleNotice")
        self.notice_label.setWordWrap(True)
        self.notice_label.setVisible(bool(notice))
        self.notice_label.setStyleSheet(f"color: {theme.current().danger.name()}; font-weight: bold;")
        left.addWidget(self.notice_label)
        self.error_label = QLabel()
        self.error_label.setObjectName("ruleError")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet(f"color: {theme.current().danger.name()};")
        self.error_label.hide()
        left.addWidget(self.error_label)
        self.settle_check = QCheckBox("Settle the pending matches now")
        self.settle_check.setObjectName("settlePending")
        self.settle_check.setAccessibleName("Settle the pending matches now")
        self.settle_check.setEnabled(False)
        left.addWidget(self.settle_check)
        left.addStretch(1)

        right = QVBoxLayout()
        self.preview_label = QLabel("Preview: loading…")
        self.preview_label.setObjectName("previewLabel")
        self.preview_label.setWordWrap(True)
        self.preview_model = RequestListModel(self)
        self.preview_view = request_list_view("rulePreview", "Requests this rule would match", self.preview_model)
        right.addWidget(self.preview_label)
        right.addWidget(self.preview_view, 1)

        columns = QHBoxLayout()
        left_box = QWidget()
        left_box.setLayout(left)
        left_box.setMinimumWidth(420)
        right_box = QWidget()
        right_box.setLayout(right)
        columns.addWidget(left_box, 2)
        columns.addWidget(right_box, 3)
        outer = QVBoxLayout(self)
        outer.addLayout(columns, 1)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.ok_button = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok_button.setText(ok_text)
        self.ok_button.setObjectName("dialogOkButton")
        self.ok_button.setToolTip(f"{ok_text} (Ctrl+Enter)")
        self.buttons.accepted.connect(self.try_submit)
        self.buttons.rejected.connect(self.reject)
        outer.addWidget(self.buttons)
        for keys in ("Ctrl+Return", "Ctrl+Enter"):
            QShortcut(QKeySequence(keys), self, self.try_submit)
        self.resize(1180, 520)

        self._preview_timer = QTimer(self, singleShot=True, interval=PREVIEW_DEBOUNCE_MS)
        self._preview_timer.timeout.connect(self.refresh_preview)
        self.effect_combo.currentTextChanged.connect(lambda _t: self._changed())
        self.pattern_combo.currentTextChanged.connect(lambda _t: self._changed())
        self.scope_combo.currentTextChanged.connect(lambda _t: self._changed())
        self.refresh_preview()
        if self.known is not None:
            self._spawn(self._learn_agents())

    async def _learn_agents(self) -> None:
        """Agents recorded in the database but not on screen now are known too (a rule for them is not refused)."""
        try:
            stats = await self.backend.decision_stats(since_s=None)
        except Exception:
            return  # the window's own list stays the check
        if self.known is None or not shiboken6.isValid(self):
            return
        self.known.setdefault("agent", set()).update(name for name, _ in stats.per_agent if name != "(unknown)")
        if self.error_label.isVisible():
            self.refresh_preview()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.activateWindow()

    # -- the rule --------------------------------------------------------------------------
    def rule(self, now: float | None = None) -> Rule:
        """The rule as the form says; RuleError naming what is wrong."""
        now = time.time() if now is None else now
        effect = self.effect_combo.currentText()
        pattern = self.pattern_combo.currentText()
        scope = self.scope_combo.currentText().strip() or "global"
        note = self.note_edit.text().strip()
        expires = self.expires_combo.currentText().strip()
        if expires == AS_BEFORE:
            expires_at = self._kept_expires_at
        elif expires in ("", NEVER):
            expires_at = None
        else:
            expires_at = now + parse_duration(expires)
        rule = Rule(effect, pattern, scope, expires_at, note, new_rule_id(), now).checked()  # type: ignore[arg-type]
        self._check_scope(rule.scope)
        return rule

    def _check_scope(self, scope: str) -> None:
        """Refuse a scope that can match nothing: a name no request ever carried, or text with control characters."""
        if any(not ch.isprintable() for ch in scope):
            raise RuleError(f"scope {scope!r}: contains control characters (a stray key?)")
        kind, _, value = scope.partition(":")
        if self.known is None or kind not in ("agent", "session"):
            return
        known = self.known.get(kind, set())
        if value not in known:
            names = ", ".join(sorted(known)[:6]) or "none yet"
            raise RuleError(
                f"no {kind} named {value!r} has asked here (known: {names}): a rule scoped to it would match nothing"
            )

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            mods = event.modifiers()
            alt = mods & Qt.KeyboardModifier.AltModifier and not mods & Qt.KeyboardModifier.ControlModifier
            if alt and event.text() and event.text().isprintable():
                return True
        return super().eventFilter(watched, event)

    def _changed(self) -> None:
        self._generation += 1  # what the preview shows no longer matches the form
        self.settle_check.setEnabled(False)
        self.preview_label.setText("Preview: updating…")
        self._preview_timer.start()

    def refresh_preview(self) -> None:
        self._preview_timer.stop()
        self._generation += 1
        if not self.pattern_combo.currentText().strip():
            self._show_error("")
            self.ok_button.setEnabled(False)
            self.preview_model.set_records([])
            self.preview_label.setText("Preview: type a pattern, e.g. Bash(npm run test:*) or Write(src/**)")
            self.settle_check.setEnabled(False)
            return
        try:
            rule = self.rule()
        except RuleError as exc:
            self._show_error(str(exc))
            self.preview_model.set_records([])
            self.preview_label.setText("Preview: fix the rule first")
            self.settle_check.setEnabled(False)
            return
        self._show_error("")
        self._spawn(self._preview(self._generation, rule))

    async def _preview(self, generation: int, rule: Rule) -> None:
        try:
            records = await self.backend.preview_rule(rule, limit=PREVIEW_LIMIT)
            held = await self.backend.prevailing_rules(rule, records)  # judged with every rule in force
            risks = await self.backend.assess_requests([str(r["hitl_id"]) for r in records])
        except Exception as exc:
            if generation == self._generation and shiboken6.isValid(self):
                self.preview_label.setText(f"Preview failed: {exc}")
            return
        if generation != self._generation or not shiboken6.isValid(self):
            return
        self.preview_model.set_records(records, risks)
        self.held = held
        pending = len(self.settleable_ids())
        kept = sum(1 for record in records if record["status"] == "pending" and str(record["hitl_id"]) in held)
        self.pending_matches = pending
        more = " (the newest 200)" if len(records) >= PREVIEW_LIMIT else ""
        decided = len(records) - pending - kept
        kept_text = f", {kept} pending kept by a deny or ask rule in force" if kept else ""
        self.preview_label.setText(
            f"<b>{len(records)}</b> request(s) match{more}: <b>{pending}</b> pending{kept_text}, {decided} decided"
        )
        verb = {"allow": "approve", "deny": "reject"}.get(rule.effect)
        if verb is None:
            self.settle_check.setText("An ask rule settles nothing")
        else:
            self.settle_check.setText(f"Settle the {pending} pending match(es) now ({verb} them by this rule)")
        self.settle_check.setEnabled(verb is not None and pending > 0)
        if not self.settle_check.isEnabled():
            self.settle_check.setChecked(False)
        self.previewed.emit(len(records))

    def settleable_ids(self) -> list[str]:
        """The previewed pending requests this rule would settle: none another deny or ask rule in force keeps."""
        return [
            str(r["hitl_id"])
            for r in self.preview_model.records
            if r["status"] == "pending" and str(r["hitl_id"]) not in self.held
        ]

    def _show_error(self, text: str) -> None:
        self.error_label.setText(text)
        self.error_label.setVisible(bool(text))
        self.ok_button.setEnabled(not text)

    def done(self, result: int) -> None:
        self._generation += 1  # a preview still loading has nobody to show it to
        self._preview_timer.stop()
        super().done(result)

    def try_submit(self) -> None:
        try:
            rule = self.rule()
        except RuleError as exc:
            self._show_error(str(exc))
            return
        settle = self.settle_check.isEnabled() and self.settle_check.isChecked()
        self.submitted.emit(rule, settle)
        self.accept()
