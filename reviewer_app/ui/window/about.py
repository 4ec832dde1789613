"""Help → About: the versions and the database this window works on (its password never shown)."""

from __future__ import annotations

import re
import sys
from urllib.parse import unquote

import PySide6
from PySide6.QtCore import Qt, qVersion
from PySide6.QtWidgets import QMessageBox, QWidget

from reviewer_app import __version__
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.common import theme


def mask_url(url: str) -> str:
    """A database URL fit to show: passwords replaced by ***, SQLite files as plain paths."""
    if url.startswith("sqlite:///"):
        return unquote(url.removeprefix("sqlite:///")) or url
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", url)


def about_text(backend: SQLHITLBackend) -> str:
    return (
        f"<h3>Reviewer {__version__}</h3>"
        "<p>Review and decide what AI agents ask before they act.</p>"
        f"<table><tr><td>Qt</td><td>{qVersion()}</td></tr>"
        f"<tr><td>PySide6</td><td>{PySide6.__version__}</td></tr>"
        f"<tr><td>Python</td><td>{sys.version.split()[0]}</td></tr>"
        f"<tr><td>Database&nbsp;</td><td>{mask_url(backend.database_url)}</td></tr>"
        f"<tr><td>Reviewer</td><td>{backend.reviewer}</td></tr></table>"
    )


def open_about(backend: SQLHITLBackend, parent: QWidget) -> QMessageBox:
    """The About box, non-modal (deleted when closed)."""
    box = QMessageBox(parent)
    box.setObjectName("aboutBox")
    box.setWindowTitle("About Reviewer")
    box.setIconPixmap(theme.icon("app").pixmap(64, 64))
    box.setTextFormat(Qt.TextFormat.RichText)
    box.setText(about_text(backend))
    box.setModal(False)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.show()
    return box
