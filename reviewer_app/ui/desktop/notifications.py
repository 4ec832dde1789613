"""Native notifications with Approve / Reject / Open (desktop-notifier: DBus on Linux, macOS, Windows).

A notification decides exactly the request it shows: it keeps the request's id and the SHA-256 of the arguments
it was raised for, and its Approve is the same compare-and-set decision as the window's. If the request was decided
elsewhere or its arguments changed meanwhile, nothing is decided and the window says so. Where the platform offers
no buttons the notification only opens the request. A distinct sound ("blocked on you", ``resources/``) plays with
it unless turned off (``notifications/sound`` in the settings).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, QSettings, Signal
from PySide6.QtWidgets import QWidget

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.hitl import HITLStatus, HITLType, shown_arguments
from reviewer_app.domain.records import RequestSummary
from reviewer_app.domain.sanitize import redact_secrets
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.decide.operation import DecisionOp

log = logging.getLogger(__name__)
SOUND_SETTING = "notifications/sound"
SOUND_FILE = "blocked-on-you.wav"
REJECT_MESSAGE = "rejected from a desktop notification"


@dataclass(frozen=True, slots=True)
class ShownRequest:
    """What one notification showed: the request and the digest of its arguments at that moment."""

    hitl_id: str
    title: str
    text: str
    args_sha256: str | None
    can_approve: bool


class NotificationActions(QObject):
    """What a notification's buttons do: the window's one decision operation (runtime first, compare-and-set).

    Signals:
        decided(str, str): the request (hitl_id, kind) was decided from a notification.
        refused(str): nothing was decided (decided elsewhere, arguments changed, an error); the reason.
        openRequested(str): show this request in the window.
    """

    decided = Signal(str, str)
    refused = Signal(str)
    openRequested = Signal(str)

    def __init__(self, op: DecisionOp, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.op = op

    async def approve(self, shown: ShownRequest) -> bool:
        if not shown.can_approve:
            self.refused.emit(f"{shown.hitl_id} cannot be approved from a notification: open it.")
            return False
        return await self._decide(shown, Decision(DecisionKind.APPROVE, args_sha256=shown.args_sha256))

    async def reject(self, shown: ShownRequest) -> bool:
        return await self._decide(
            shown, Decision(DecisionKind.REJECT, message=REJECT_MESSAGE, args_sha256=shown.args_sha256)
        )

    async def _decide(self, shown: ShownRequest, decision: Decision) -> bool:
        outcome = await self.op.decide(shown.hitl_id, decision)
        if not outcome.decided:
            self.refused.emit(f"Nothing was decided from the notification for {shown.title}. {outcome.problem}")
            return False
        self.decided.emit(shown.hitl_id, decision.kind.value)
        return True


async def shown_request(backend: SQLHITLBackend, row: RequestSummary) -> ShownRequest | None:
    """The request as a notification will show it, read now; None when it is no longer pending."""
    record = await backend.get(row.hitl_id)
    if record is None or record.get("status") != HITLStatus.PENDING.value:
        return None
    is_tool = record.get("hitl_type") != HITLType.ASK_USER.value and bool(record.get("tool_name"))
    allowed = (record.get("data") or {}).get("allowed_decisions")
    can_approve = is_tool and (not isinstance(allowed, list) or DecisionKind.APPROVE.value in allowed)
    what = row.tool_name or row.hitl_type
    agent = row.agent or "an agent"
    return ShownRequest(
        hitl_id=row.hitl_id,
        title=f"{agent} is blocked on you: {what}",
        text=redact_secrets(row.summary)[:300],
        args_sha256=args_digest(shown_arguments(record)),
        can_approve=can_approve,
    )


class NativeNotifier(QObject):
    """Sends a native notification for requests that arrive while the window is not active.

    ``available`` turns False once the platform refused a notification (no notification server): the tray's
    message is the fallback then (see :class:`ui.desktop.tray.TrayNotifier`).

    Signals:
        sent(object): a :class:`ShownRequest` (or a text for several requests) was notified.
        unavailable(str): the platform cannot show notifications; the reason.
    """

    sent = Signal(object)
    unavailable = Signal(str)

    def __init__(
        self,
        window: QWidget,
        op: DecisionOp,
        settings: QSettings,
        spawn: Callable[[Coroutine[Any, Any, Any]], Any],
    ) -> None:
        super().__init__(window)
        self._window = window
        self._backend = op.backend
        self._settings = settings
        self._spawn = spawn
        self.actions = NotificationActions(op, self)
        self.available = True
        self._notifier: Any = None
        self._capabilities: frozenset[Any] | None = None
        self.shown: dict[str, ShownRequest] = {}  # by notification identifier
        self.sound_action: Any = None  # the View menu's toggle (attach_native_notifier)

    @property
    def sound_enabled(self) -> bool:
        return str(self._settings.value(SOUND_SETTING, "true")).lower() not in ("false", "0", "no")

    def set_sound_enabled(self, enabled: bool) -> None:
        self._settings.setValue(SOUND_SETTING, "true" if enabled else "false")

    def wants(self, rows: list[RequestSummary]) -> bool:
        """Whether these new rows get a native notification (else the tray's message or nothing)."""
        window = self._window
        return bool(rows) and self.available and not (window.isActiveWindow() and not window.isMinimized())

    def notify_new(self, rows: list[RequestSummary]) -> None:
        if self.wants(rows):
            self._spawn(self.send_for(rows))

    def _desktop_notifier(self) -> Any:
        if self._notifier is None:
            from desktop_notifier import DesktopNotifier, Icon

            from reviewer_app.resources import resource_path

            self._notifier = DesktopNotifier(app_name="Reviewer", app_icon=Icon(path=resource_path("reviewer-128.png")))
        return self._notifier

    async def send_for(self, rows: list[RequestSummary]) -> str | None:
        """Notify ``rows`` (one notification); returns its identifier, None when nothing was sent."""
        try:
            from desktop_notifier import Button, Capability, Sound, Urgency

            from reviewer_app.resources import resource_path

            notifier = self._desktop_notifier()
            if self._capabilities is None:
                self._capabilities = await notifier.get_capabilities()
            buttons_ok = Capability.BUTTONS in self._capabilities
            sound = Sound(path=resource_path(SOUND_FILE)) if self.sound_enabled else None
            if len(rows) == 1:
                shown = await shown_request(self._backend, rows[0])
                if shown is None:
                    return None
                buttons = []
                if buttons_ok:
                    if shown.can_approve:
                        buttons.append(Button("Approve", on_pressed=lambda: self.press("approve", shown)))
                    buttons.append(Button("Reject", on_pressed=lambda: self.press("reject", shown)))
                    buttons.append(Button("Open", on_pressed=lambda: self.press("open", shown)))
                identifier = await notifier.send(
                    title=shown.title,
                    message=shown.text,
                    urgency=Urgency.Critical,
                    buttons=buttons,
                    on_clicked=lambda: self.press("open", shown),
                    sound=sound,
                )
                self.shown[str(identifier)] = shown
                self.sent.emit(shown)
                return str(identifier)
            first = rows[0]
            text = (
                f"{len(rows)} new requests, e.g. {first.tool_name or first.hitl_type}: {redact_secrets(first.summary)}"
            )
            identifier = await notifier.send(
                title="Reviewer: agents are blocked on you",
                message=text[:300],
                urgency=Urgency.Critical,
                buttons=[Button("Open", on_pressed=lambda: self.press("open", None))] if buttons_ok else [],
                on_clicked=lambda: self.press("open", None),
                sound=sound,
            )
            self.sent.emit(text)
            return str(identifier)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # no notification server, no DBus session: the tray takes over
            log.info("native notifications unavailable: %s", exc)
            self.available = False
            self.unavailable.emit(f"{type(exc).__name__}: {exc}")
            return None

    def press(self, action: str, shown: ShownRequest | None) -> None:
        """A notification's button or body was pressed (called on the loop by desktop-notifier)."""
        if action == "open" or shown is None:
            self.actions.openRequested.emit(shown.hitl_id if shown is not None else "")
        elif action == "approve":
            self._spawn(self.actions.approve(shown))
        elif action == "reject":
            self._spawn(self.actions.reject(shown))


def set_badge(count: int) -> None:
    """The pending count on the app's dock / taskbar / launcher icon, where the platform has one."""
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance()
    if isinstance(app, QGuiApplication):
        app.setBadgeNumber(count)


def attach_native_notifier(window: Any, settings: QSettings, *, enabled: bool = True) -> NativeNotifier:
    """Connect a :class:`NativeNotifier` to the main window: new requests, the badge, the actions' outcomes.

    The tray keeps its badge; its message is only the fallback when native notifications are unavailable.
    ``enabled=False`` (a window without a tray: screenshots, tests) sends none.
    """
    from PySide6.QtGui import QAction

    native = NativeNotifier(window, window.decision_op, settings, window.tasks.spawn)
    native.available = enabled
    tray = window.notifier
    tray.native = native.wants
    window.live.newPending.connect(native.notify_new)
    window.live.pendingCountChanged.connect(set_badge)  # the dock / taskbar badge (the tray icon draws its own)
    native.unavailable.connect(lambda _reason: tray.show_last_as_message())
    native.actions.refused.connect(window.show_error)
    native.actions.decided.connect(
        lambda hitl_id, kind: window.statusBar().showMessage(f"{kind} {hitl_id} from the notification.", 6000)
    )

    def open_request(hitl_id: str) -> None:
        window.bring_to_front()
        if hitl_id:
            window.show_tab(0)
            if not window.inbox.select_request(hitl_id):
                window.show_error(f"{hitl_id} is no longer pending: it was decided meanwhile.")

    native.actions.openRequested.connect(open_request)
    sound = QAction("Notification &sound", window, checkable=True)
    sound.setChecked(native.sound_enabled)
    sound.toggled.connect(native.set_sound_enabled)
    native.sound_action = sound
    return native
