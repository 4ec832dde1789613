"""What the window starts and must keep alive: asyncio tasks until they end, dialogs until they close.

qasync's loop keeps no strong reference to a task, so a task nobody holds can be collected
mid-flight; dialogs are opened with ``open()`` (never ``exec()`` inside a coroutine) and answer
through signals, so something must hold them while they are open.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from PySide6.QtWidgets import QDialog


class TaskKeeper:
    """Runs coroutines as tasks kept alive until they end; an unexpected failure goes to ``on_error``."""

    def __init__(self, on_error: Callable[[str], None]) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._on_error = on_error

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._on_error(f"Unexpected error: {task.exception()}")

    @property
    def busy(self) -> bool:
        return bool(self._tasks)

    def cancel_all(self) -> None:
        for task in list(self._tasks):
            task.cancel()


class DialogKeeper:
    """Non-modal dialogs, held from ``open()`` until they finish; then ``on_closed`` (focus goes back)."""

    def __init__(self, on_closed: Callable[[], None]) -> None:
        self._dialogs: list[QDialog] = []
        self._on_closed = on_closed

    def open(self, dialog: QDialog) -> None:
        self._dialogs.append(dialog)
        dialog.finished.connect(lambda _result: self._forget(dialog))
        dialog.open()

    def _forget(self, dialog: QDialog) -> None:
        if dialog in self._dialogs:
            self._dialogs.remove(dialog)
        dialog.deleteLater()
        self._on_closed()

    @property
    def open_dialogs(self) -> list[QDialog]:
        return list(self._dialogs)

    def close_all(self) -> None:
        for dialog in list(self._dialogs):
            dialog.close()
