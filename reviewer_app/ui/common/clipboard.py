"""Copying what the operator reads: a request's id, its command, its arguments; a run's or session's id.

Ids are shown middle-elided (:func:`ui.common.texts.short_id`), so copying is how the whole id leaves the window.
"""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QMenu, QWidget


def copy_text(text: str) -> None:
    QGuiApplication.clipboard().setText(text)


def command_of(shown: Any) -> str | None:
    """The shell command of a tool call's arguments, when it has one."""
    if isinstance(shown, dict):
        command = shown.get("command") or shown.get("cmd")
        if isinstance(command, str):
            return command
        if isinstance(command, list) and all(isinstance(part, str) for part in command):
            return " ".join(command)
    return None


def arguments_text(shown: Any) -> str:
    return json.dumps(shown, indent=2, ensure_ascii=False, default=str)


def request_menu(parent: QWidget, hitl_id: str, shown: Any, *, loaded: bool) -> QMenu:
    """Copy id / command / arguments of a request (command and arguments once its record is loaded)."""
    menu = QMenu(parent)
    menu.setObjectName("copyMenu")
    menu.addAction("Copy &id", lambda: copy_text(hitl_id))
    command = command_of(shown) if loaded else None
    copy_command = menu.addAction("Copy &command", lambda: copy_text(command or ""))
    copy_command.setEnabled(command is not None)
    copy_args = menu.addAction("Copy &arguments", lambda: copy_text(arguments_text(shown)))
    copy_args.setEnabled(loaded)
    return menu


def group_menu(parent: QWidget, kind: str, ident: str, title: str | None) -> QMenu:
    """Copy the id (and the title) of a run or a session row."""
    menu = QMenu(parent)
    menu.setObjectName("copyMenu")
    menu.addAction("Copy &id", lambda: copy_text(ident))
    if title:
        menu.addAction(f"Copy {kind} &title", lambda: copy_text(title))
    return menu
