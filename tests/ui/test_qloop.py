"""The UI tests' asyncio loop: running while a test runs, and leaving Qt and asyncio clean after it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from PySide6.QtCore import QObject, QTimer, Signal

from tests.ui.conftest import qasync_loop, run_async


class Ping(QObject):
    """Something to wait for in a nested Qt event loop.

    Signals:
        pinged(): emitted from a timer.
    """

    pinged = Signal()


async def loop_seen_by_a_task() -> asyncio.AbstractEventLoop:
    await asyncio.sleep(0.01)  # needs the running loop, as the window's tasks do
    return asyncio.get_running_loop()


def test_tasks_see_the_loop_and_nothing_is_left_running_afterwards(qapp: Any, qtbot: Any) -> None:
    for _round in range(2):  # a second loop on the same application works like the first
        with qasync_loop(qapp) as loop:
            assert run_async(qtbot, loop_seen_by_a_task()) is loop
        assert loop.is_closed()
        with pytest.raises(RuntimeError):
            asyncio.get_running_loop()
        ping = Ping()
        QTimer.singleShot(20, ping.pinged.emit)
        with qtbot.waitSignal(ping.pinged, timeout=2000):  # Qt's quit flag is clear: nested loops wait
            pass


def test_a_task_still_pending_at_the_end_is_cancelled(qapp: Any) -> None:
    with qasync_loop(qapp):
        task = asyncio.ensure_future(asyncio.sleep(3600))
    assert task.cancelled()
