"""A panel's push button, named for tests and screen readers and explained by its tooltip."""

from __future__ import annotations

from PySide6.QtWidgets import QPushButton


def named_button(text: str, name: str, tip: str, accessible: str | None = None) -> QPushButton:
    """A button with an object name, a tooltip and an accessible name (default: its text without a trailing "…")."""
    button = QPushButton(text)
    button.setObjectName(name)
    button.setAccessibleName(text.rstrip("…") if accessible is None else accessible)
    button.setToolTip(tip)
    return button
