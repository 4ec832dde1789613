"""The backend's single database thread.

Every database call of the backend runs here, one at a time and in order (Anki's pattern), so the event loop —
and the Qt thread under qasync — never waits on SQLite; each result comes back on the loop that asked for it.
"""

from __future__ import annotations

import asyncio
import collections
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_CAN_RING = hasattr(os, "eventfd")  # Linux


def resolve_future(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    """Complete ``future`` with the job's result or error, unless its caller gave up waiting (cancelled it)."""
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class _Doorbell:
    """Hands finished jobs back to one plain asyncio selector loop through an eventfd the loop watches.

    ``call_soon_threadsafe`` makes a handle per result and wakes the loop through its self-pipe, a socket pair
    (a ``send`` here, two ``recv`` there, the second to learn it is empty); the bell is one ``eventfd`` write,
    one read, and no handle, and a write is skipped while the loop has not yet answered the previous one. Made on the
    loop's thread and closed there, or by the database thread once the loop is closed; :meth:`ring` is the database
    thread's.
    """

    __slots__ = ("_done", "_fd", "_rung", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._done: collections.deque[tuple[asyncio.Future[Any], Any, BaseException | None]] = collections.deque()
        self._rung = False
        self._fd: int = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        try:
            loop.add_reader(self._fd, self._answer)
        except BaseException:
            os.close(self._fd)
            raise

    def ring(self, future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
        """The database thread: queue the job's outcome and wake the loop unless a wake-up is already pending."""
        self._done.append((future, result, error))
        if not self._rung:
            self._rung = True
            # try/except, not contextlib.suppress: its three Python calls would sit between the job's end and the
            # loop's wake-up, at every result.
            try:
                os.eventfd_write(self._fd, 1)
            except OSError:  # closed: the loop is gone, nobody waits any more
                pass

    def _answer(self) -> None:
        """The loop: read the bell, then resolve every queued outcome (cleared first: a ring after it wakes again)."""
        if self._fd >= 0:
            try:  # not contextlib.suppress: three Python calls at every wake-up
                os.eventfd_read(self._fd)
            except BlockingIOError:
                pass
        self._rung = False
        done = self._done
        while done:
            resolve_future(*done.popleft())

    def close(self) -> None:
        """Close the descriptor; on the loop's thread while it is open (its outcomes still queued are resolved
        first), or anywhere once it is closed (whoever waited for them is gone)."""
        if self._fd < 0:
            return
        if not self.loop.is_closed():
            self.loop.remove_reader(self._fd)
            self._answer()
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)


def _rings(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether results for ``loop`` come back through a :class:`_Doorbell`: asyncio's own selector loop on Linux.
    Other loops keep ``call_soon_threadsafe`` (qasync's posts a Qt event, which its readers would go through too)."""
    return _CAN_RING and type(loop) is asyncio.SelectorEventLoop


class DatabaseThread:
    """The backend's single database thread: runs jobs in order, hands results back to the caller's loop.

    A plain queue rather than ``loop.run_in_executor``: the executor's future chaining cost ~10 µs more per
    call, and a decision's round trip pays it at every step (see bench/store_throughput.py). Results reach
    asyncio's own loop through a :class:`_Doorbell` (bound to the first such loop that submits), any other loop
    through ``call_soon_threadsafe``. Like the executor it skips jobs whose caller was cancelled before they
    started, and :meth:`shutdown` lets queued jobs finish.
    """

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[tuple[asyncio.Future[Any] | None, Callable[[], Any], _Doorbell | None] | None]
        self._jobs = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False
        self._bell: _Doorbell | None = None
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        """Queue ``fn`` for the database thread; the returned future (of the running loop) gets its result."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        bell = self._bell
        if bell is None or bell.loop is not loop:
            bell = self._bell_for(loop)
        with self._lock:
            if self._closed:
                raise RuntimeError("the HITL backend is closed")
            self._jobs.put((future, fn, bell))
        return future

    def _bell_for(self, loop: asyncio.AbstractEventLoop) -> _Doorbell | None:
        """The running ``loop``'s bell: made for the first loop that can have one, or for a later one once the loop
        it was made for is closed (the old one is closed by the database thread after the jobs queued before)."""
        if not _rings(loop):
            return None
        with self._lock:  # two loops' threads may ask at once: one of them replaces (and closes) the old bell
            if self._closed:
                raise RuntimeError("the HITL backend is closed")
            bell = self._bell
            if bell is not None and not bell.loop.is_closed():
                return bell if bell.loop is loop else None
            if bell is not None:
                self._jobs.put((None, bell.close, None))
            self._bell = bell = _Doorbell(loop)
        return bell

    def _main(self) -> None:
        while (job := self._jobs.get()) is not None:
            future, fn, bell = job
            if future is None:  # the thread's own chore (closing a bell)
                fn()
                continue
            if future.cancelled():
                continue
            result: Any = None
            error: BaseException | None = None
            try:
                result = fn()
            except BaseException as exc:  # handed to the awaiting caller, as an executor would
                error = exc
            if bell is not None:
                bell.ring(future, result, error)
            else:
                try:
                    future.get_loop().call_soon_threadsafe(resolve_future, future, result, error)
                except RuntimeError:  # the caller's loop is closed: nobody is waiting any more
                    pass
            del job, future, fn, result, error, bell
        with self._lock:
            bell, self._bell = self._bell, None
        if bell is not None:  # nothing rings it any more
            _close_on_its_loop(bell)

    def shutdown(self) -> None:
        """Finish the queued jobs, then stop the thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._jobs.put(None)
        if threading.current_thread() is not self._thread:
            self._thread.join()


def _close_on_its_loop(bell: _Doorbell) -> None:
    """Close ``bell`` now if its loop is closed, else on that loop's next turn (its reader is the loop's to remove)."""
    loop = bell.loop
    if loop.is_closed():
        bell.close()
        return
    try:
        loop.call_soon_threadsafe(bell.close)
    except RuntimeError:  # closed meanwhile
        bell.close()
