"""The ``?`` keymap, generated from the window's real keys so it cannot drift from them.

Every key of the window is either a QAction with a text (menus, window actions) or a QShortcut
whose ``whatsThis()`` describes it; :func:`keymap_entries` reads them all. A few keys that are
not shortcuts of the window (the arrows of a list, the keys inside a dialog) are listed as notes.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import QDialog, QLabel, QPushButton, QScrollArea, QVBoxLayout, QWidget

from reviewer_app.ui.common.screen_fit import fit_to_screen

NATIVE = QKeySequence.SequenceFormat.NativeText

# Keys handled by widgets themselves rather than by shortcuts: said here, once.
NOTES = (
    ("↓ / ↑", "next / previous row"),
    ("↓ / Return", "in the search box: go to the results, keeping the search"),
    ("Ctrl+Enter", "submit the text in a dialog"),
    ("1 … 9", "pick an answer's option in the answer dialog"),
)


def describe(text: str) -> str:
    """A menu text as a description: no mnemonic ampersands, no trailing ellipsis."""
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&").rstrip("…").strip()


def _belongs_to(widget: QWidget | None, window: QWidget) -> bool:
    """Whether a shortcut's widget is part of the window itself (not a dialog it opened)."""
    return widget is not None and widget.window() is window


def as_typed(keys: str) -> str:
    """A key as the operator types it: ``a`` for A (Qt names letters in capitals), ``Shift+A`` stays."""
    return keys.lower() if len(keys) == 1 and keys.isalpha() else keys


def _order(entry: tuple[str, str]) -> tuple[int, str, str]:
    """Letters first (a, then Shift+A), then other keys, then Ctrl and Alt combinations: the order one learns."""
    keys = entry[0]
    modifiers = keys.split("+")[:-1] if len(keys) > 1 else []
    base = keys.split("+")[-1] if keys not in ("+",) else keys
    rank = 0 if base.isalpha() and len(base) == 1 else 1
    return (rank * 10 + len(modifiers) + (4 if "Ctrl" in modifiers or "Alt" in modifiers else 0), base.lower(), keys)


def keymap_entries(window: QWidget) -> list[tuple[str, str]]:
    """(keys, what they do) for every key of ``window`` itself (not of the side windows it opened), each pair
    once, letters first as typed (``a``, ``Shift+A``), then the other keys, then Ctrl/Alt combinations."""
    seen: set[tuple[str, str]] = set()
    entries: list[tuple[str, str]] = []

    def add(keys: str, what: str) -> None:
        keys = as_typed(keys)
        if keys and (keys, what) not in seen:
            seen.add((keys, what))
            entries.append((keys, what))

    for action in window.findChildren(QAction):
        owner = action.parent()
        if isinstance(owner, QWidget) and not _belongs_to(owner, window):
            continue  # a side window's own keys (the audit window's Esc) are not this window's
        what = action.whatsThis() or describe(action.text())
        for sequence in action.shortcuts():
            if not sequence.isEmpty():
                add(sequence.toString(NATIVE), what)
    for shortcut in window.findChildren(QShortcut):
        parent = shortcut.parent()
        if shortcut.key().isEmpty() or not _belongs_to(parent if isinstance(parent, QWidget) else None, window):
            continue
        add(shortcut.key().toString(NATIVE), shortcut.whatsThis() or "(no description)")
    return sorted(entries, key=_order)


class KeymapDialog(QDialog):
    """The keyboard shortcuts of ``window`` as they are bound right now, non-modal."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self.setObjectName("keymapDialog")
        self.setWindowTitle("Keyboard shortcuts")
        layout = QVBoxLayout(self)
        rows = "".join(
            f"<tr><td style='padding-right:18px'><b>{html.escape(keys)}</b></td><td>{html.escape(what)}</td></tr>"
            for keys, what in [*keymap_entries(window), *NOTES]
        )
        self.label = QLabel(f"<table>{rows}</table>")
        self.label.setObjectName("keymapText")
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.label.setContentsMargins(4, 4, 4, 4)
        scroll = QScrollArea()
        scroll.setWidget(self.label)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        layout.addWidget(scroll, 1)
        close = QPushButton("Close")
        close.clicked.connect(self.close)
        layout.addWidget(close, 0, Qt.AlignmentFlag.AlignRight)
        wanted = self.label.sizeHint()
        self.resize(min(760, wanted.width() + 60), min(680, wanted.height() + 90))
        fit_to_screen(self)  # seen at 1024x640: 680 px left the last keys and the Close button off the screen
