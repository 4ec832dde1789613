"""The backend's single database thread.

Every database call of the backend runs here, one at a time and in order (Anki's pattern), so the event loop —
and the Qt thread under qasync — never waits on SQLite; each result comes back on the loop that asked for it.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def resolve_future(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    """Complete ``future`` with the job's result or error, unless its caller gave up waiting (cancelled it)."""
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class DatabaseThread:
    """The backend's single database thread: runs jobs in order, hands results back to the caller's loop.

    A plain queue and ``call_soon_threadsafe`` rather than ``loop.run_in_executor``: the executor's
    future chaining cost ~10 µs more per call, and a decision's round trip pays it at every step
    (see bench/store_throughput.py). Like the executor it skips jobs whose caller was cancelled
    before they started, and :meth:`shutdown` lets queued jobs finish.
    """

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[tuple[asyncio.AbstractEventLoop, asyncio.Future[Any], Callable[[], Any]] | None]
        self._jobs = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the HITL backend is closed")
            self._jobs.put((loop, future, fn))
        return future

    def _main(self) -> None:
        while (job := self._jobs.get()) is not None:
            loop, future, fn = job
            if future.cancelled():
                continue
            result: Any = None
            error: BaseException | None = None
            try:
                result = fn()
            except BaseException as exc:  # handed to the awaiting caller, as an executor would
                error = exc
            try:
                loop.call_soon_threadsafe(resolve_future, future, result, error)
            except RuntimeError:  # the caller's loop is closed: nobody is waiting any more
                pass
            del job, future, fn, result, error

    def shutdown(self) -> None:
        """Finish the queued jobs, then stop the thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._jobs.put(None)
        if threading.current_thread() is not self._thread:
            self._thread.join()
