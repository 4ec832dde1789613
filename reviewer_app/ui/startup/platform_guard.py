"""Create the QApplication, or say in one line why the window cannot open here and exit: never a core dump.

Qt aborts the process (``qFatal``: exit 134 and a core file) when no platform plugin starts: no display server,
or the plugin's system libraries are missing. Two guards, both free when the start succeeds:

- before Qt: no ``DISPLAY``/``WAYLAND_DISPLAY`` for a platform that needs one raises :class:`WindowUnavailable`;
- during ``QApplication(...)``: a message handler catches Qt's fatal message, asks ``platform_deps`` which
  libraries the plugin lacks and how to install them, prints that line and leaves with ``EXIT_NO_WINDOW``
  (Qt would abort right after the handler returns, so this is the one place that may ``os._exit``).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from PySide6.QtCore import QLibraryInfo, QMessageLogContext, QtMsgType, qInstallMessageHandler
from PySide6.QtWidgets import QApplication

from reviewer_app.ui.startup import platform_deps
from reviewer_app.ui.startup.platform_deps import EXIT_NO_WINDOW

_PLUGIN_NAMED = re.compile(r'platform plugin "(?P<name>[^"]+)"')


class WindowUnavailable(RuntimeError):
    """The window cannot open on this machine; ``str()`` is the one line to show."""


def qt_plugins_dir() -> Path:
    """Where this Qt looks for plugins (PySide6's own, or the bundle's when frozen)."""
    return Path(QLibraryInfo.path(QLibraryInfo.LibraryPath.PluginsPath))


def failed_platform(messages: list[str]) -> str | None:
    """The plugin Qt named in its messages (``Could not load the Qt platform plugin "xcb"``)."""
    for message in reversed(messages):
        match = _PLUGIN_NAMED.search(message)
        if match:
            return match.group("name")
    return None


def create_application(argv: list[str]) -> QApplication:
    """``QApplication(argv)``; exits with ``EXIT_NO_WINDOW`` and one line on stderr if Qt cannot start."""
    problem = platform_deps.display_problem(os.environ)
    if problem:
        raise WindowUnavailable(problem)

    held: list[tuple[str, str]] = []  # Qt's warnings, shown once the start succeeded (its guesses mislead)

    def on_qt_message(kind: QtMsgType, context: QMessageLogContext, message: str) -> None:
        if kind != QtMsgType.QtFatalMsg:
            held.append((context.category or "", message))
            return
        messages = [text for _category, text in held] + [message]
        line = platform_deps.explain_failure(failed_platform(messages), extra_dirs=[qt_plugins_dir()])
        sys.stdout.flush()
        sys.stderr.write(f"reviewer-app: {line}\n")
        sys.stderr.flush()
        os._exit(EXIT_NO_WINDOW)

    previous = qInstallMessageHandler(on_qt_message)
    try:
        app = QApplication(argv)
    finally:
        qInstallMessageHandler(previous)
    for category, message in held:
        sys.stderr.write(f"{category}: {message}\n" if category and category != "default" else f"{message}\n")
    return app


__all__ = ["EXIT_NO_WINDOW", "WindowUnavailable", "create_application"]
