"""Noticing the agent host stop reading the hook's answer, from the moment the waiting request exists.

Standard library only: the lean path arms the watch as soon as it has written the waiting request, while the
full path is still loading (seconds on a busy machine). Until the full path takes the watch over, a host that
leaves ends the hook at once and its watchdog withdraws the request with the host's reason (see
:func:`.lean.tell_watchdog`); afterwards the full path withdraws it itself.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable

__all__ = ["StdoutWatch"]


class StdoutWatch:
    """A daemon thread blocked in ``poll`` on stdout that calls its current target once, when the reader goes.

    ``poll`` always reports POLLERR/POLLHUP/POLLNVAL, so stdout is registered for no event at all; a private pipe
    wakes the thread when the watch ends first.
    """

    def __init__(self, on_closed: Callable[[], None]) -> None:
        self._lock = threading.Lock()
        self._on_closed: Callable[[], None] | None = on_closed
        self._wake_write: int | None = None

    @classmethod
    def start(cls, on_closed: Callable[[], None]) -> StdoutWatch | None:
        """The running watch; None where stdout cannot be polled (Windows, no real stdout)."""
        try:
            import select

            poller = select.poll()
            poller.register(sys.stdout.fileno(), 0)
        except (AttributeError, OSError, ValueError):
            return None
        watch = cls(on_closed)
        wake_read, watch._wake_write = os.pipe()
        poller.register(wake_read, select.POLLIN)

        def wait() -> None:
            try:
                events = dict(poller.poll())
                if wake_read not in events:
                    watch._fire()
            except (OSError, RuntimeError):  # the loop closed meanwhile: nothing left to tell
                pass
            finally:
                os.close(wake_read)

        threading.Thread(target=wait, name="reviewer-hook-stdout-watch", daemon=True).start()
        return watch

    def retarget(self, on_closed: Callable[[], None]) -> bool:
        """From now on the host leaving calls ``on_closed``; False when it has left already (the old target ran)."""
        with self._lock:
            if self._on_closed is None:
                return False
            self._on_closed = on_closed
            return True

    def stop(self) -> None:
        """End the watch (its thread wakes and ends); the target is never called afterwards."""
        with self._lock:
            self._on_closed = None
            wake_write, self._wake_write = self._wake_write, None
        if wake_write is not None:
            os.close(wake_write)  # the read end hangs up: the thread wakes and ends

    def _fire(self) -> None:
        with self._lock:
            target, self._on_closed = self._on_closed, None
            if target is not None:
                target()
