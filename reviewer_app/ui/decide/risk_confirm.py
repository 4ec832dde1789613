"""A high-risk request approved from the keyboard needs the key twice: the first press only says why.

Why: at triage speed ``a`` is pressed by reflex. For a call the risk module rates high (``rm -rf``, a force push,
a write to ``.env``…) the first press shows the reasons in the status bar and arms the key for a few seconds;
only a second press of the same key on the same request approves it. Buttons are deliberate clicks and act
at once; other keys and other requests disarm it.

Shift+A (approve for the session) always takes two presses, whatever the risk: the first says exactly what the
session waiver will cover (``policy.describe_session_approval``), so nothing is waived that was not read.

While the detail pane is still scanning the arguments for secrets (a 1 MB request is shown before its scan ends),
the risk is not whole yet: ``a`` takes two presses then too, the first saying the scan still runs. A secret only
ever makes a call medium risk, and whatever makes it high is known before the request is shown, so the HIGH RISK
reasons are in that first message already.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from reviewer_app.domain.waivers import describe_session_approval
from reviewer_app.ui.detail.pane import DetailPane

CONFIRM_WINDOW_S = 4.0
# The keys as the buttons show them: a lone "A" would read as Shift+A, which approves for the whole session.
CONFIRMED_KINDS = {"approve": "a", "approve_for_session": "Shift+A"}


class HighRiskConfirm(QObject):
    """Passes decision keys on to ``decide``, holding back the first approval key of a high-risk request.

    Signals:
        message(str, int): what to press to confirm, and how long to show it (ms).
    """

    message = Signal(str, int)

    def __init__(self, detail: DetailPane, decide: Callable[[str], None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.detail = detail
        self.decide = decide
        self.clock: Callable[[], float] = time.monotonic
        self._armed: tuple[str, str] | None = None
        self._armed_at = 0.0

    @property
    def armed(self) -> tuple[str, str] | None:
        """(hitl_id, kind) waiting for its confirming key, if any."""
        if self._armed is not None and self.clock() - self._armed_at > CONFIRM_WINDOW_S:
            self._armed = None
        return self._armed

    def keyed(self, kind: str) -> None:
        """A decision key was pressed."""
        detail = self.detail
        risk = detail.prepared.risk if detail.prepared is not None else None
        hitl_id = detail.hitl_id
        high = risk is not None and risk.high
        waiver = kind == "approve_for_session"
        unchecked = not detail.checked()
        if kind in CONFIRMED_KINDS and hitl_id is not None and (high or waiver or unchecked) and detail.allowed(kind):
            if self.armed == (hitl_id, kind):
                self._armed = None
                self.decide(kind)
                return
            self._armed = (hitl_id, kind)
            self._armed_at = self.clock()
            key = CONFIRMED_KINDS[kind]
            parts = [f"HIGH RISK: {'; '.join(risk.reasons[:3])}"] if high and risk is not None else []
            if unchecked:
                parts.append("Still checking the arguments for secrets")
            if waiver:
                parts.append(f"it waives: {self._grant()}")
            verb = (
                "approve for the session"
                if waiver
                else ("approve" if high or not unchecked else "approve without waiting")
            )
            # The key to press comes first: a status bar at 1,024 px cut the end of a long waiver or risk list.
            self.message.emit(
                f"To {verb}, press {key} again within {CONFIRM_WINDOW_S:.0f} s — {' · '.join(parts)}",
                int(CONFIRM_WINDOW_S * 1000),
            )
            return
        self._armed = None
        self.decide(kind)

    def _grant(self) -> str:
        prepared = self.detail.prepared
        tool = self.detail.summary.tool_name if self.detail.summary is not None else None
        args = prepared.shown if prepared is not None else None
        return describe_session_approval(tool or "", args if isinstance(args, dict) else {})
