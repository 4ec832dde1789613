"""PySide6 6.12.0 on Python 3.11 aborted (``none_dealloc``) after a few thousand void Qt calls.

The dependency pin keeps that build out; this test makes ~20,000 such calls so a bad
build fails here rather than in an operator's window.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QLabel, QPushButton


def test_twenty_thousand_void_calls_do_not_abort(qtbot: Any) -> None:
    label = QLabel()
    button = QPushButton()
    qtbot.addWidget(label)
    qtbot.addWidget(button)
    for i in range(10_000):
        button.setEnabled(i % 2 == 0)  # returns None: the refcount of None is what broke
        label.setText(str(i))
    assert label.text() == "9999"
    assert not button.isEnabled()
