"""The detail pane's header row: what is shown (a request's tool, agent, ids, age and expiry; a run's state),
the "external" badge and the Copy button.

Its own module because it is the pane's one part redrawn by the clock (the age and the countdown, every second):
the text is set only when it changed, since a new text costs the pane a layout.
"""

from __future__ import annotations

import html
import time

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMenu, QToolButton, QWidget

from reviewer_app.domain.hitl import HITLStatus, HITLType
from reviewer_app.domain.records import RequestSummary, RunRecord
from reviewer_app.ui.common import theme
from reviewer_app.ui.common.texts import format_countdown, short_id, tool_label
from reviewer_app.ui.detail.settled import human_time
from reviewer_app.ui.detail.timeline import ACTIVE_NOT_KNOWN_TIP, active_known, active_text
from reviewer_app.ui.runs.model import state_words

NON_BREAKING_HYPHEN = "\u2011"
EXTERNAL_BADGE_TIP = "raised by an agent in another process"
IDS_SHOWN = 20
"""How many characters of the session and run ids the request header shows (cut in the middle; whole on hover):
a Claude Code run id wrapped the header at 1,024 px."""


def countdown_color(expires_at: int, now: float) -> str | None:
    """The colour of an expiry countdown as it nears zero (None while there is time), as a name."""
    color = theme.countdown_qcolor(expires_at, now)
    return color.name() if color is not None else None


class DetailHeader(QWidget):
    """The header text (``label``), the external badge and the Copy button (its menu: ``copy_actions``, also the
    header's context menu)."""

    def __init__(self, copy_actions: list[QAction], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = QLabel()
        self.label.setObjectName("detailHeader")
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.label.addActions(copy_actions)
        self.label.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        self.external_badge = QLabel("external")
        self.external_badge.setObjectName("externalBadge")
        self.external_badge.setAccessibleName("External agent")
        self.external_badge.setToolTip(EXTERNAL_BADGE_TIP)
        self.external_badge.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.external_badge.hide()
        self.copy_button = QToolButton()
        self.copy_button.setObjectName("copyButton")
        self.copy_button.setText("Copy")
        self.copy_button.setAccessibleName("Copy to the clipboard")
        self.copy_button.setToolTip("Copy the id, the command or the arguments")
        self.copy_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.copy_button.setFocusPolicy(Qt.FocusPolicy.TabFocus)
        copy_menu = QMenu(self.copy_button)
        copy_menu.addActions(copy_actions)
        self.copy_button.setMenu(copy_menu)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.label, 1)
        row.addWidget(self.external_badge, 0, Qt.AlignmentFlag.AlignTop)
        row.addWidget(self.copy_button, 0, Qt.AlignmentFlag.AlignTop)

    def show_request(self, s: RequestSummary, now: float) -> None:
        """The request's tool (or "Question"), agent, ids, age and expiry countdown."""
        question = s.hitl_type == HITLType.ASK_USER.value  # seen: "ask_user question", as the inbox says "question"
        kind = "" if question else f"{s.hitl_type.replace('_', ' ')} · "
        what = "Question" if question else (tool_label(s.tool_name) or s.hitl_type)
        expires = ""
        if s.expires_at is not None and s.status == HITLStatus.PENDING.value:
            countdown = html.escape(f"expires {format_countdown(s.expires_at, now)}")
            color = countdown_color(s.expires_at, now)
            expires = f" · <b style='color:{color}'>{countdown}</b>" if color else f" · {countdown}"
        lines = [
            f"<span style='font-size:14pt'><b>{html.escape(what)}</b></span>"
            f"  <span style='color:{theme.current().muted.name()}'>{html.escape(kind)}"
            # non-breaking hyphens: "agent claude-" / "code" at 1,024 px; the name moves down whole
            f"agent {html.escape(s.agent or '?').replace('-', NON_BREAKING_HYPHEN)}</span>",
            f"session <code>{html.escape(short_id(s.session_id, IDS_SHOWN))}</code> · "
            f"run <code>{html.escape(short_id(s.invocation_id, IDS_SHOWN))}</code>",
            f"created {human_time(s.created_at, now)}{expires}",  # today's date said nothing and wrapped the line
        ]
        text = "<br>".join(lines)
        if text != self.label.text():  # a new text costs a layout: only when the age or countdown changed
            self.label.setText(text)
            self.label.setToolTip(f"session {s.session_id}\nrun {s.invocation_id}")
        self.show_external(s.external)

    def show_run(self, run: RunRecord) -> None:
        """The run's agent and state, ids, times, prompt and error."""
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.created_at))
        parts = [
            f"<span style='font-size:13pt'><b>{html.escape(run.agent or 'agent')}</b> run · "
            f"{html.escape(state_words(run))}</span>",
            f"run {html.escape(run.id)} · session {html.escape(run.session_id)}",
            f"started {started} · active {active_text(run)}"
            + ("" if active_known(run) else f" ({html.escape(ACTIVE_NOT_KNOWN_TIP.removeprefix('active time '))})")
            + (f" · {run.pending} pending" if run.pending else ""),
            f"<i>{html.escape((run.prompt or '')[:400])}</i>",
        ]
        if run.error:
            parts.append(f"<span style='color:{theme.current().danger.name()}'>{html.escape(run.error[:400])}</span>")
        self.label.setText("<br>".join(parts))
        self.show_external(run.external, "run")

    def show_external(self, external: bool, what: str = "request") -> None:
        """The "external" badge next to the header: this request (or run) comes from another process."""
        if external:
            style = (
                f"#externalBadge {{ background: {theme.current().json_literal.name()}; color: white;"
                " border-radius: 6px; padding: 1px 7px; font-weight: bold; }"
            )
            if self.external_badge.styleSheet() != style:  # re-polishing on every selection costs a few ms
                self.external_badge.setStyleSheet(style)
            self.external_badge.setToolTip(f"External {what}: {EXTERNAL_BADGE_TIP}")
        self.external_badge.setVisible(external)
