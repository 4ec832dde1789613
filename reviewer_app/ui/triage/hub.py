"""Triage tools on top of the window: undo, risk chips and the high-risk confirm key, rules, bulk decisions.

Why one hub: these features cut across the inbox, the detail pane and the decision path, and the main window
stays a thin assembly: it builds :class:`Triage` once (plus three lines: the keyboard approvals pass through
:attr:`Triage.confirm`, closing flushes :attr:`Triage.undo`, the app drains it before the backend closes).

Keys (inbox and detail; letters never act in text fields): Shift+M approve and make a rule…, X mark/unmark,
Shift+X decide the marked…, Shift+L decide the similar…, Shift+W decide the whole run…, Ctrl+Shift+W the whole
session…; Ctrl+Z undoes the newest decision still in its grace period; Ctrl+4 shows the Rules tab.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QObject, QSettings, Qt
from PySide6.QtGui import QAction, QActionGroup, QKeySequence, QShortcut
from PySide6.QtWidgets import QMenu, QPushButton, QWidget

from reviewer_app.domain.decisions import Decision, DecisionKind
from reviewer_app.domain.rule_choices import pattern_choices
from reviewer_app.domain.rule_outcome import call_of_record
from reviewer_app.domain.rules import Rule, RuleError, parse_rule_pattern
from reviewer_app.ui.common.flow_layout import FlowLayout
from reviewer_app.ui.decide.risk_confirm import HighRiskConfirm
from reviewer_app.ui.inbox.risk import RiskCache
from reviewer_app.ui.rules.editor import RuleEditorDialog
from reviewer_app.ui.rules.panel import RulesPanel
from reviewer_app.ui.triage.bulk import BulkController
from reviewer_app.ui.triage.undo import UndoBar, UndoQueue
from reviewer_app.ui.window.settings import (
    UNDO_GRACE_CHOICES,
    hold_approvals,
    set_hold_approvals,
    set_undo_grace_seconds,
    undo_grace_seconds,
)

if TYPE_CHECKING:
    from reviewer_app.ui.window.main_window import MainWindow


def _exact(pattern: str) -> bool:
    try:
        return parse_rule_pattern(pattern).exact
    except RuleError:
        return False


class Triage(QObject):
    """Builds and connects the triage tools of one window (see the module docstring)."""

    def __init__(self, window: MainWindow, settings: QSettings) -> None:
        super().__init__(window)
        self.window = window
        self.settings = settings
        backend = window.backend

        self.undo = UndoQueue(undo_grace_seconds(settings), self)
        self.undo.hold_approvals = hold_approvals(settings)
        window.decisions.undo = self.undo
        self.undo_bar = UndoBar(self.undo)
        window.statusBar().insertPermanentWidget(0, self.undo_bar)
        self.undo_bar.follow(window.statusBar())

        self.risks = RiskCache(backend, window.tasks.spawn, self)
        window.inbox.model.set_risk_source(self.risks.risk)
        self.risks.arrived.connect(window.inbox.model.repaint_requests)
        window.detail.requestChecked.connect(self._note_detail_risk)  # the whole risk, secret scan included
        self.confirm = HighRiskConfirm(window.detail, window.decisions.request_decision, self)
        self.confirm.message.connect(lambda text, ms: window.statusBar().showMessage(text, ms))

        self.rules = RulesPanel(backend, window.live, window.tasks, window.dialogs, self.save_rule)
        self.rules.known_scopes = self.known_scopes
        window.left_tabs.addTab(self.rules, "Rules")
        self.rules.failed.connect(window.show_error)
        self.rules.message.connect(lambda text: window.statusBar().showMessage(text, 4000))

        self.bulk = BulkController(window)
        self.bulk.message.connect(lambda text, ms: window.statusBar().showMessage(text, ms))
        self.bulk.failed.connect(window.show_error)

        self.make_rule_button = QPushButton("Approve + rule…  ⇧M")
        self.make_rule_button.setObjectName("makeRuleButton")
        self.make_rule_button.setAccessibleName("Approve and make a rule")
        self.make_rule_button.setToolTip("Approve, and save a rule that settles calls like it from now on (Shift+M)")
        self.make_rule_button.setFocusPolicy(Qt.FocusPolicy.TabFocus)
        self.make_rule_button.clicked.connect(self.open_make_rule)
        bar = window.detail.decision_bar.layout()
        assert isinstance(bar, FlowLayout)
        bar.insertWidget(bar.indexOf(window.detail.approve_session_button) + 1, self.make_rule_button)
        window.detail.approve_button.installEventFilter(self)  # the rule button follows approve's state
        self.make_rule_button.setEnabled(window.detail.approve_button.isEnabled())
        self.make_rule_button.setVisible(window.detail.approve_button.isVisibleTo(window.detail))

        self._build_menu()
        self._build_keys()

    # -- the pieces ------------------------------------------------------------------------------
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.window.detail.approve_button and event.type() in (
            QEvent.Type.EnabledChange,
            QEvent.Type.ShowToParent,
            QEvent.Type.HideToParent,
        ):
            button = self.window.detail.approve_button
            self.make_rule_button.setEnabled(button.isEnabled())
            self.make_rule_button.setVisible(not button.isHidden())
        return False

    def _note_detail_risk(self, hitl_id: str) -> None:
        prepared = self.window.detail.prepared
        if prepared is not None and prepared.risk is not None and prepared.record.get("hitl_id") == hitl_id:
            self.risks.known(hitl_id, prepared.risk)

    def _build_menu(self) -> None:
        window = self.window
        menu_bar = window.menuBar()
        view_menu = next((a.menu() for a in menu_bar.actions() if a.text() == "&View"), None)
        self.rules_action = QAction("Ru&les", window, shortcut=QKeySequence("Ctrl+4"))
        self.rules_action.triggered.connect(self.show_rules)
        if isinstance(view_menu, QMenu):
            view_menu.addAction(self.rules_action)
        else:
            window.addAction(self.rules_action)
        decide = QMenu("&Decide", window)
        decide.setObjectName("decideMenu")
        help_action = next((a for a in menu_bar.actions() if a.text() == "&Help"), None)
        menu_bar.insertMenu(help_action, decide) if help_action is not None else menu_bar.addMenu(decide)
        self.undo_action = QAction("&Undo the last decision", window, shortcut=QKeySequence("Ctrl+Z"))
        self.undo_action.triggered.connect(self.undo_last)
        decide.addAction(self.undo_action)
        grace = decide.addMenu("Undo &grace period")
        group = QActionGroup(window)
        self.grace_actions: dict[int, QAction] = {}
        for seconds in UNDO_GRACE_CHOICES:
            action = QAction("Off (decide at once)" if seconds == 0 else f"{seconds} seconds", window, checkable=True)
            action.setChecked(abs(self.undo.grace_s - seconds) < 1e-9)
            action.triggered.connect(lambda _=False, s=seconds: self.set_grace(s))
            group.addAction(action)
            grace.addAction(action)
            self.grace_actions[seconds] = action
        grace.addSeparator()
        self.hold_approvals_action = QAction("Hold &approvals too (the agent waits)", window, checkable=True)
        self.hold_approvals_action.setChecked(self.undo.hold_approvals)
        self.hold_approvals_action.toggled.connect(self.set_hold_approvals)
        grace.addAction(self.hold_approvals_action)
        decide.addSeparator()
        # Letter keys live on the inbox and the detail pane (below); the menu names them after a tab.
        for text, slot in (
            ("Approve and make a &rule…\tShift+M", self.open_make_rule),
            ("&Mark or unmark the request\tX", self.bulk.toggle_mark),
            ("Decide the mar&ked requests…\tShift+X", self.bulk.decide_marked),
            ("Decide the &similar requests…\tShift+L", self.bulk.decide_similar),
            ("Decide the whole r&un…\tShift+W", self.bulk.decide_run),
            ("Decide the whole s&ession…\tCtrl+Shift+W", self.bulk.decide_session),
        ):
            action = QAction(text, window)
            action.triggered.connect(lambda _=False, f=slot: f())
            decide.addAction(action)
        self.decide_menu = decide

    def _build_keys(self) -> None:
        window = self.window
        bindings: tuple[tuple[str, str, Callable[[], Any]], ...] = (
            ("Shift+M", "approve and make a rule (narrowest pattern first, with its preview)", self.open_make_rule),
            ("X", "mark or unmark the request for a bulk decision", self.bulk.toggle_mark),
            ("Shift+X", "decide the marked requests (after a preview)", self.bulk.decide_marked),
            ("Shift+L", "decide the requests similar to this one (after a preview)", self.bulk.decide_similar),
            ("Shift+W", "decide every pending request of this run (after a preview)", self.bulk.decide_run),
            (
                "Ctrl+Shift+W",
                "decide every pending request of this session (after a preview)",
                self.bulk.decide_session,
            ),
        )
        self.shortcuts: list[QShortcut] = []
        areas: Sequence[QWidget] = (window.inbox.view, window.inbox.queue.view, window.detail)
        for area in areas:
            for keys, description, slot in bindings:
                shortcut = QShortcut(QKeySequence(keys), area)
                shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
                shortcut.setWhatsThis(description)
                shortcut.activated.connect(lambda f=slot: self._in_inbox(f))
                self.shortcuts.append(shortcut)

    def _in_inbox(self, slot: Callable[[], Any]) -> None:
        if self.window.inbox.active:
            slot()

    # -- actions ---------------------------------------------------------------------------------
    def show_rules(self) -> None:
        self.window.show_tab(self.window.left_tabs.indexOf(self.rules))
        self.rules.focus_list()

    def undo_last(self) -> None:
        entry = self.undo.undo_last()
        if entry is None:
            self.window.statusBar().showMessage(
                "Nothing to undo: decisions are committed once their countdown ends", 3000
            )

    def set_grace(self, seconds: float) -> None:
        """The undo grace period (a setting; 0 turns undo off). What is held now keeps its countdown."""
        self.undo.grace_s = seconds
        set_undo_grace_seconds(self.settings, seconds)
        for value, action in self.grace_actions.items():
            action.setChecked(abs(value - seconds) < 1e-9)

    def set_hold_approvals(self, hold: bool) -> None:
        """Whether plain approvals wait out the grace period too (a setting; off: they reach the agent at once)."""
        self.undo.hold_approvals = hold
        set_hold_approvals(self.settings, hold)
        if self.hold_approvals_action.isChecked() != hold:
            self.hold_approvals_action.setChecked(hold)

    def hold_and_commit(
        self, label: str, hitl_ids: Sequence[str], commit: Callable[[], Coroutine[Any, Any, set[str]]]
    ) -> None:
        """Decisions on ``hitl_ids`` made here: they leave the inbox now, ``commit`` runs when the grace period
        ends (at once when it is 0) and returns the ids no longer pending; the others come back."""
        window = self.window
        ids = list(dict.fromkeys(hitl_ids))
        window.decisions.deciding_here(ids)
        held = self.undo.grace_s > 0
        if held:
            shown = window.detail.hitl_id
            # Looked up before they leave: the request after them, where the operator was (not the inbox's top).
            after = window.inbox.model.next_after_removal(shown, ids) if shown in ids else None
            window.inbox.hold(ids)
            if shown in ids:
                window.decisions.show_next(shown, after)

        async def run() -> None:
            done: set[str] = set()
            try:
                done = await commit()
            except Exception as exc:
                window.show_error(f"{label}: not recorded ({type(exc).__name__}: {exc})")
            finally:
                if held:
                    window.inbox.release([i for i in ids if i in done], restore=False)
                    window.inbox.release([i for i in ids if i not in done], restore=True)

        self.undo.hold(label, tuple(ids), run, on_undo=lambda: window.decisions.restore(ids))

    async def _decide_one(self, hitl_id: str, decision: Decision) -> bool:
        """Decide through the window's one decision operation; True when the request is no longer pending."""
        outcome = await self.window.decision_op.decide(hitl_id, decision)
        if outcome.problem is not None:
            self.window.show_error(outcome.problem)
        return not outcome.still_pending

    def save_rule(
        self,
        rule: Rule,
        settle: bool,
        replaces: str | None,
        pending_ids: Sequence[str],
        approve: tuple[str, Decision] | None = None,
    ) -> None:
        """Save ``rule`` (revoking ``replaces``), approving a request and settling the pending matches when asked.

        A rule alone decides nothing in the window and is saved at once; with an approval or a settlement the
        whole action waits out the undo grace period, so an undo leaves no rule and no decision behind.
        """
        window = self.window
        backend = window.backend

        async def commit() -> set[str]:
            done: set[str] = set()
            if approve is not None and await self._decide_one(*approve):
                done.add(approve[0])
            stored = await backend.add_rule(rule, created_by=backend.reviewer, replaces=replaces)
            # Exactly the pending requests the preview showed: one that arrived since is asked as usual.
            settled = await backend.settle_pending_by_rule(rule.id, only=pending_ids) if settle else []
            done.update(str(record["hitl_id"]) for record in settled)
            text = f"Saved {stored.rule.describe()} ({rule.id})"
            if settled:
                text += f"; it settled {len(settled)} pending request(s)"
            window.statusBar().showMessage(text, 6000)
            self.rules.refresh()
            window.live.request_refresh()
            return done

        held = ([approve[0]] if approve is not None else []) + (list(pending_ids) if settle else [])
        if not held:

            async def save_only() -> None:
                try:
                    await commit()
                except Exception as exc:
                    window.show_error(f"The rule was not saved: {exc}")

            window.tasks.spawn(save_only())
            return
        label = ("Approved and saved " if approve is not None else "Saved ") + rule.pattern
        if settle:
            label += f" (settling {len(pending_ids)})"
        self.hold_and_commit(label, held, commit)

    def known_scopes(self) -> dict[str, set[str]]:
        """The agents, sessions and workspaces this window has seen: what a rule's scope may name."""
        known: dict[str, set[str]] = {"agent": set(), "session": set(), "workspace": set()}
        for summary in self.window.inbox.model.requests_in_scope():
            if summary.agent:
                known["agent"].add(summary.agent)
            known["session"].add(summary.session_id)
        for run in self.window.inbox.runs_model.all_runs():
            if run.agent:
                known["agent"].add(run.agent)
            known["session"].add(run.session_id)
            if run.workspace:
                known["workspace"].add(run.workspace)
        return known

    def open_make_rule(self) -> RuleEditorDialog | None:
        """Approve the shown request and save a rule, prefilled with the narrowest pattern that covers it."""
        window = self.window
        detail = window.detail
        prepared = detail.prepared
        if detail.is_ask or prepared is None or not detail.allowed("approve"):
            window.statusBar().showMessage("Approve and make a rule: select a pending tool request first", 3000)
            return None
        record = prepared.record
        call = call_of_record(record)
        choices = pattern_choices(call) if call is not None else []
        notice = ""
        risk = prepared.risk
        if risk is not None and risk.high:
            choices = [pattern for pattern in choices if _exact(pattern)]
            notice = (
                f"High risk ({'; '.join(risk.reasons[:3])}): only an exact rule can ever settle this call, "
                "so only exact patterns are offered."
            )
        if not choices:
            why = "no rule can settle a high-risk call of this tool" if notice else "no pattern can cover this call"
            window.statusBar().showMessage(f"Approve and make a rule: {why}; approve it by hand (a)", 5000)
            return None
        assert call is not None
        scopes = ["global"]
        if call.agent:
            scopes.append(f"agent:{call.agent}")
        if call.cwd and call.cwd.startswith("/"):
            scopes.append(f"workspace:{call.cwd}")
        if call.session_id:
            scopes.append(f"session:{call.session_id}")
        hitl_id = str(record["hitl_id"])
        dialog = RuleEditorDialog(
            window.backend,
            window.tasks.spawn,
            title=f"Approve and make a rule: {call.tool_name}",
            ok_text="Approve and save rule",
            patterns=choices,
            effect="allow",
            effect_fixed=True,
            pattern_editable=False,
            scopes=scopes,
            notice=notice,
            known=self.known_scopes(),
            parent=window,
        )
        approval = (hitl_id, Decision(DecisionKind.APPROVE, args_sha256=prepared.digest))
        dialog.submitted.connect(
            lambda rule, settle: self.save_rule(
                rule,
                settle,
                None,
                dialog.settleable_ids(),
                approve=approval,
            )
        )
        window.dialogs.open(dialog)
        return dialog
