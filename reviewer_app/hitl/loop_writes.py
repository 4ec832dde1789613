"""Write transactions on the event loop's own thread, for processes with no GUI (an opt-in of the backend).

A write handed to the database thread pays two thread wake-ups (there and back), more than SQLite spends on most
of our transactions (issue 29: the store ran at 0.42x a plain ``sqlite3`` loop, the hop ~200 µs a transaction). A
headless process (``reviewer-app run``, the other CLI commands, a library user on a plain asyncio loop) may instead
run the transaction where it is, on a connection that never waits: its ``BEGIN IMMEDIATE`` fails at once when
another connection holds the write lock, and its commits never checkpoint (a checkpoint syncs the disk). Whenever a
loop write cannot be sure to be quick it does not run, and the write goes to the database thread as before:

* the running loop is a Qt one (qasync's, as the window runs, or PySide6's own): its thread is the GUI's, which
  never waits on the database;
* a write handed to the database thread is still in flight (a loop write would overtake it);
* the write lock is taken, this connection is in use, or any trouble the retry policy rides out (nothing was
  committed: the database thread runs the whole transaction again, with its retries);
* a loop write lately took longer than :attr:`LoopWrites.SLOW_S` because of its own work or a wait (a huge row, a
  slow disk): none for a while. A write the system paused to run other processes is not judged (on a busy machine
  the loop waits for a CPU whichever thread writes);
* the write-ahead log has grown past its limit (``catch_up_due``): the database thread catches it up right after
  that write's commit (``hitl/wal_checkpoints.py``). Loop commits never checkpoint, so with every write here the log
  was never started over and grew without end, each commit and read slower than the last.

The transaction, its statements, its ``BEGIN IMMEDIATE`` and its commit are the store's usual ones, so a decision is
committed before anything acts on it and a crash leaves the same states as on the database thread.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from typing import Final, TypeVar

from reviewer_app.persistence.retry import transient_reason
from reviewer_app.persistence.store import WriterBusy

T = TypeVar("T")

if sys.platform == "linux":
    import resource

    def _times_preempted() -> int | None:
        """How often the system has taken the CPU from this thread for another (involuntary context switches): a
        write that met one may have been slow for that alone."""
        return resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw

else:  # pragma: no cover - elsewhere every slow write counts

    def _times_preempted() -> int | None:
        return None


class NotRun:
    """What :meth:`LoopWrites.attempt` returns when the write must go to the database thread."""


NOT_RUN: Final = NotRun()


QT_LOOP_MODULES = ("qasync", "PySide6")
"""Where the asyncio loops that run on Qt's event loop come from (the window uses qasync's)."""


def on_qt_loop() -> bool:
    """True when the running asyncio loop is driven by Qt: its thread is then a Qt thread, the GUI's in the window."""
    return type(asyncio.get_running_loop()).__module__.startswith(QT_LOOP_MODULES)


class LoopWrites:
    """Runs write transactions on the calling thread when that cannot make it wait (see the module's docstring).

    ``checkpoint``: called (off the loop) after every :attr:`CHECKPOINT_EVERY` loop commits, since they never
    checkpoint and the write-ahead log would otherwise grow without bound. ``catch_up_due``: whether the log is past
    its limit, so the next write goes to the database thread, whose commit catches it up.
    """

    SLOW_S = 0.05
    """A loop write slower than this sends the writes to the database thread for :attr:`COOL_DOWN_S` (the first
    one, which opens the connection, excepted)."""
    COOL_DOWN_S = 1.0
    CHECKPOINT_EVERY = 100

    def __init__(self, checkpoint: Callable[[], None], catch_up_due: Callable[[], bool] = lambda: False) -> None:
        self._checkpoint = checkpoint
        self._catch_up_due = catch_up_due
        self._paused_until = 0.0
        self.thread_writes = 0
        """Writes handed to the database thread and not yet back (kept by the backend)."""
        self.committed_here = 0
        """How many writes committed on the loop's thread (the benchmarks print it)."""

    def usable(self) -> bool:
        """Whether a write may be tried here now (cheap: asked before every write)."""
        return (
            self.thread_writes == 0
            and time.monotonic() >= self._paused_until
            and not self._catch_up_due()
            and not on_qt_loop()
        )

    def attempt(self, work: Callable[[], T]) -> T | NotRun:
        """``work()`` (one whole transaction on the loop writer), or :data:`NOT_RUN` when it could not begin here
        or met trouble the database thread's retries ride out (it was rolled back). Other errors are raised."""
        began, cpu, preempted = time.monotonic(), time.thread_time(), _times_preempted()
        try:
            result = work()
        except WriterBusy:
            return NOT_RUN
        except Exception as exc:
            if transient_reason(exc) is None:
                raise
            return NOT_RUN
        finished = time.monotonic()
        if finished - began > self.SLOW_S and self.committed_here and self._slow_here(cpu, preempted):
            self._paused_until = finished + self.COOL_DOWN_S
        self.committed_here += 1
        if self.committed_here % self.CHECKPOINT_EVERY == 0:
            self._checkpoint()
        return result

    def _slow_here(self, cpu: float, preempted: int | None) -> bool:
        """Whether a write that took long did so by its own work or by blocking (the disk, a lock), not because the
        system ran other processes meanwhile (then the next slow one is judged: a slow disk stays slow)."""
        if time.thread_time() - cpu > self.SLOW_S / 2:
            return True
        return preempted is None or _times_preempted() == preempted
