"""Colours and icons that read well in light and dark mode, following the OS scheme.

The palette is only replaced where we own the style (Fusion on Linux); elsewhere
the native style follows the OS and we only pick our accent colours to match.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from PySide6.QtCore import QObject, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QGuiApplication, QIcon, QPainter, QPalette, QPixmap
from PySide6.QtWidgets import QApplication

from reviewer_app.resources import app_icon_pngs, app_icon_svg, resource_path


@cache
def icon(name: str) -> QIcon:
    """A bundled icon (``resources/icons/NAME.svg``; ``app`` is the app icon); cached, so call after the app exists."""
    if name == "app":
        app_icon = QIcon(str(app_icon_svg()))
        for png in app_icon_pngs():  # raster sizes too, for platforms without the SVG plugin
            app_icon.addFile(str(png))
        return app_icon
    return QIcon(str(resource_path(f"icons/{name}.svg")))


@dataclass(frozen=True)
class Theme:
    """Accent colours for one scheme; widgets read them when they paint."""

    dark: bool
    json_key: QColor
    json_string: QColor
    json_number: QColor
    json_literal: QColor
    json_punct: QColor
    diff_add_fg: QColor
    diff_add_bg: QColor
    diff_del_fg: QColor
    diff_del_bg: QColor
    diff_hunk: QColor
    muted: QColor
    warning: QColor
    danger: QColor
    ok: QColor
    info: QColor
    wait: QColor
    banner_bg: QColor
    banner_fg: QColor

    def status_color(self, status: str | None) -> QColor:
        """Chip colour of a tool or request status."""
        return {
            "success": self.ok,
            "completed": self.ok,
            "done": self.ok,
            "error": self.danger,
            "failed": self.danger,
            "rejected": self.danger,
            "running": self.info,
            "pending": self.wait,
            "waiting": self.wait,
            "queued": self.muted,
            "interrupted": self.warning,
            "cancelled": self.muted,
            "expired": self.muted,
            "steered": self.info,  # the reviewer chose another way: not the tool's error
            "aborted": self.warning,
            "decided": self.ok,
            "approve": self.ok,
            "approve_for_session": self.ok,
            "edit": self.ok,
            "respond": self.ok,
            "reject": self.danger,
            "steer": self.info,
            "cancel": self.muted,
            "expire": self.muted,
        }.get(status or "", self.muted)


LIGHT = Theme(
    dark=False,
    json_key=QColor("#1a5fb4"),
    json_string=QColor("#26734d"),
    json_number=QColor("#a3470f"),
    json_literal=QColor("#8b3fb3"),
    json_punct=QColor("#5e6670"),
    diff_add_fg=QColor("#1d6b37"),
    diff_add_bg=QColor("#e3f6e8"),
    diff_del_fg=QColor("#a02727"),
    diff_del_bg=QColor("#fbe6e6"),
    diff_hunk=QColor("#5a5fc7"),
    muted=QColor("#7a828e"),
    warning=QColor("#c77700"),
    danger=QColor("#c93c3c"),
    ok=QColor("#2b8a4b"),
    info=QColor("#2f6fd0"),
    wait=QColor("#d08a00"),
    banner_bg=QColor("#fff1d6"),
    banner_fg=QColor("#4d3500"),
)

DARK = Theme(
    dark=True,
    json_key=QColor("#79b1ff"),
    json_string=QColor("#8ed4a4"),
    json_number=QColor("#f2a66b"),
    json_literal=QColor("#d3a2f5"),
    json_punct=QColor("#9aa3ad"),
    diff_add_fg=QColor("#9be3b0"),
    diff_add_bg=QColor("#1d3a27"),
    diff_del_fg=QColor("#ffaaaa"),
    diff_del_bg=QColor("#442326"),
    diff_hunk=QColor("#a9acff"),
    muted=QColor("#98a0ab"),
    warning=QColor("#f0a43a"),
    danger=QColor("#f06a6a"),
    ok=QColor("#5fc27f"),
    info=QColor("#6aa6ff"),
    wait=QColor("#f2b632"),
    banner_bg=QColor("#4a3a12"),
    banner_fg=QColor("#fff0cc"),
)


def is_dark(palette: QPalette | None = None) -> bool:
    """Dark when the window background is darker than its text, whatever made it so."""
    pal = palette or QGuiApplication.palette()
    return pal.color(QPalette.ColorRole.Window).lightness() < pal.color(QPalette.ColorRole.WindowText).lightness()


def current() -> Theme:
    return DARK if is_dark() else LIGHT


def dark_palette() -> QPalette:
    pal = QPalette()
    window, base, text = QColor("#25272b"), QColor("#1c1e21"), QColor("#e6e8eb")
    pal.setColor(QPalette.ColorRole.Window, window)
    pal.setColor(QPalette.ColorRole.WindowText, text)
    pal.setColor(QPalette.ColorRole.Base, base)
    pal.setColor(QPalette.ColorRole.AlternateBase, QColor("#23262a"))
    pal.setColor(QPalette.ColorRole.ToolTipBase, QColor("#33363b"))
    pal.setColor(QPalette.ColorRole.ToolTipText, text)
    pal.setColor(QPalette.ColorRole.PlaceholderText, QColor("#8d939b"))
    pal.setColor(QPalette.ColorRole.Text, text)
    pal.setColor(QPalette.ColorRole.Button, QColor("#2f3237"))
    pal.setColor(QPalette.ColorRole.ButtonText, text)
    pal.setColor(QPalette.ColorRole.BrightText, QColor("#ff6b6b"))
    pal.setColor(QPalette.ColorRole.Link, QColor("#79b1ff"))
    pal.setColor(QPalette.ColorRole.Highlight, QColor("#3d6fb8"))
    pal.setColor(QPalette.ColorRole.HighlightedText, QColor("#ffffff"))
    pal.setColor(QPalette.ColorRole.Mid, QColor("#3a3d42"))
    pal.setColor(QPalette.ColorRole.Midlight, QColor("#34373c"))
    pal.setColor(QPalette.ColorRole.Dark, QColor("#15171a"))
    pal.setColor(QPalette.ColorRole.Light, QColor("#3f4248"))
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.WindowText, QPalette.ColorRole.ButtonText):
        pal.setColor(QPalette.ColorGroup.Disabled, role, QColor("#6d7279"))
    return pal


PREFERENCES = ("system", "light", "dark")
COUNTDOWN_SOON_S = 60  # an expiry countdown turns amber under a minute...
COUNTDOWN_URGENT_S = 10  # ... and red under ten seconds (the detail header and the inbox column alike)


def countdown_qcolor(expires_at: float, now: float) -> QColor | None:
    """The colour of an expiry countdown as it nears zero (None while there is time)."""
    left = expires_at - now
    if left < COUNTDOWN_URGENT_S:
        return current().danger
    if left < COUNTDOWN_SOON_S:
        return current().warning
    return None


class ThemeWatcher(QObject):
    """Applies the chosen scheme (``preference``: system, light or dark) now and whenever the OS changes.

    Signals:
        changed(bool): emitted with ``dark`` after the scheme changed.
    """

    changed = Signal(bool)

    def __init__(self, app: QApplication) -> None:
        super().__init__(app)
        self.setObjectName("themeWatcher")
        self._app = app
        self.preference = "system"
        self._light_palette = QPalette(app.palette())
        hints = app.styleHints()
        if hasattr(hints, "colorScheme"):  # Qt >= 6.5
            hints.colorSchemeChanged.connect(self.apply)
        self.apply()

    def os_prefers_dark(self) -> bool:
        hints = self._app.styleHints()
        if hasattr(hints, "colorScheme"):
            scheme = hints.colorScheme()
            if scheme == Qt.ColorScheme.Dark:
                return True
            if scheme == Qt.ColorScheme.Light:
                return False
        return is_dark(self._light_palette)

    def set_preference(self, preference: str) -> None:
        """Follow the OS (``system``) or force ``light`` or ``dark``; unknown names mean ``system``."""
        self.preference = preference if preference in PREFERENCES else "system"
        hints = self._app.styleHints()
        if hasattr(hints, "setColorScheme"):  # Qt >= 6.8: native styles follow it too
            scheme = {"light": Qt.ColorScheme.Light, "dark": Qt.ColorScheme.Dark}.get(
                self.preference, Qt.ColorScheme.Unknown
            )
            hints.blockSignals(True)  # apply() below, once
            try:
                if self.preference == "system":
                    hints.unsetColorScheme()
                else:
                    hints.setColorScheme(scheme)
            finally:
                hints.blockSignals(False)
        self.apply()

    def apply(self, *_args: object) -> None:
        dark = self.os_prefers_dark() if self.preference == "system" else self.preference == "dark"
        # Only own the palette where we own the style: native styles follow the OS (or the hint above) themselves.
        if self._app.style().name().lower() == "fusion":
            self._app.setPalette(dark_palette() if dark else self._light_palette)
        self.changed.emit(is_dark())


def has_watcher(app: QApplication) -> bool:
    return isinstance(app.findChild(ThemeWatcher, "themeWatcher"), ThemeWatcher)


def watcher_for(app: QApplication) -> ThemeWatcher:
    """The application's theme watcher (made on first use: tests and embedders may have none)."""
    watcher = app.findChild(ThemeWatcher, "themeWatcher")
    return watcher if isinstance(watcher, ThemeWatcher) else ThemeWatcher(app)


def badge_icon(count: int, size: int = 64) -> QIcon:
    """The app icon with the pending count in a red badge (tray and taskbar)."""
    pixmap = QPixmap(size, size)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    icon("app").paint(painter, 0, 0, size, size)
    if count > 0:
        text = str(count) if count < 100 else "99+"
        radius = size * 0.27 if len(text) < 3 else size * 0.33
        rect = QRectF(size - 2 * radius, 0, 2 * radius, 2 * radius)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor("#d93025"))
        painter.drawEllipse(rect)
        font = QFont()
        font.setBold(True)
        font.setPixelSize(int(radius * (1.1 if len(text) == 1 else 0.85)))
        painter.setFont(font)
        painter.setPen(QColor("#ffffff"))
        painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)
    painter.end()
    return QIcon(pixmap)
