"""The write-ahead log checkpointed on a thread of its own, off every commit's path.

SQLite's automatic checkpoint runs inside the commit that fills the log past 1,000 pages: it copies the log into
the database file and syncs the disk twice, and the write waits for it. Our decisions fill a page-heavy log (the
request, its audit row, the history index and the hourly counts: ~130 kB a create and decide), so about one commit
in sixty paid a checkpoint, ~40% of a plain ``sqlite3`` loop's time on this schema (issue 29). The backend's
connections no longer checkpoint on commit (``Store.open(autocheckpoint=False)``); every :attr:`EVERY` commits
this thread runs a ``PASSIVE`` checkpoint, which never takes the write lock, so the next transactions commit
while it copies and syncs.

A log checkpointed while commits keep coming is never fully copied when the next write begins, so SQLite never
starts it over from its beginning and it grows for as long as the burst lasts. When a checkpoint finds the log
past :attr:`LIMIT_FRAMES`, the database thread checkpoints once right after its next commit, where no other write
of this process runs: that one copies the rest, and the write after it starts the log over.

Other processes' commits count too: once this process has committed, the thread also checkpoints every
:attr:`IDLE_S` seconds (a checkpoint with nothing to copy costs microseconds), so the log other writers leave (the
command line's commands, which do not checkpoint on commit either) is copied while a window or a run is open. A
hook, a process per tool call with a commit or two, checkpoints on commit as before (``checkpoint_on_commit``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class BackgroundWalCheckpoints:
    """Checkpoints ``checkpoint()`` (returns the frames the log holds) on a daemon thread made on first need.

    :meth:`committed` is told every commit (on the committing thread), :meth:`request` asks for a checkpoint now,
    :meth:`after_commit` runs the database thread's catch-up checkpoint when one is due.
    """

    EVERY = 100
    """Commits between two checkpoints (as the loop writes' ``CHECKPOINT_EVERY``)."""
    LIMIT_FRAMES = 4_000
    """A log past this many frames (~16 MB of 4 kB pages) is caught up by the database thread: in a burst of 4,000
    commits (2,000 requests created and decided) the log file peaked at ~23 MB, with 13 catch-ups and 39 checkpoints
    here (SQLite's own checkpoints keep it at ~4 MB)."""
    IDLE_S = 5.0
    """Seconds between two checkpoints when nothing asks for one (other processes' commits)."""

    def __init__(self, checkpoint: Callable[[], int], *, name: str = "reviewer-wal-checkpoints") -> None:
        self._checkpoint = checkpoint
        self._name = name
        self._commits = 0
        self._wanted = threading.Condition()
        self._pending = False
        self._running = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self.catch_up_due = False
        """Set when a checkpoint left the log past :attr:`LIMIT_FRAMES`; cleared by :meth:`after_commit`."""
        self.runs = 0
        """Checkpoints this thread ran (the tests and benchmarks read it)."""
        self.catch_ups = 0
        """Checkpoints the database thread ran because the log had grown past the limit."""

    def committed(self) -> None:
        """One more commit; every :attr:`EVERY` of them asks for a checkpoint (cheap: a counter). The first one
        starts the thread (its checkpoints every :attr:`IDLE_S` copy other processes' commits too)."""
        if self._thread is None:
            self._start()
        self._commits += 1
        if self._commits >= self.EVERY:
            self._commits = 0
            self.request()

    def after_commit(self) -> None:
        """On the database thread after its commit: the catch-up checkpoint, when a checkpoint asked for one."""
        if not self.catch_up_due:
            return
        self.catch_up_due = False
        self.catch_ups += 1
        self._run_checkpoint()

    def request(self) -> None:
        """Checkpoint soon, without waiting for it (several requests while one runs make one more run)."""
        with self._wanted:
            if self._closed:
                return
            self._pending = True
            self._start()
            self._wanted.notify()

    def _start(self) -> None:
        with self._wanted:
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._main, name=self._name, daemon=True)
                self._thread.start()

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until no checkpoint is asked for or running; False if ``timeout`` passed first."""
        with self._wanted:
            return self._wanted.wait_for(lambda: not (self._pending or self._running), timeout)

    def close(self) -> None:
        """Let a running checkpoint finish, then stop the thread (before the store closes its connections)."""
        with self._wanted:
            self._closed = True
            self._pending = False
            self._wanted.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _main(self) -> None:
        while True:
            with self._wanted:
                self._wanted.wait_for(lambda: self._pending or self._closed, self.IDLE_S)
                if self._closed:
                    self._wanted.notify_all()
                    return
                self._pending = False
                self._running = True
            try:
                frames = self._run_checkpoint()
                self.runs += 1
                if frames > self.LIMIT_FRAMES:
                    self.catch_up_due = True
            finally:
                with self._wanted:
                    self._running = False
                    self._wanted.notify_all()

    def _run_checkpoint(self) -> int:
        try:
            return self._checkpoint()
        except Exception as exc:  # the next one tries again; the log only grows meanwhile
            log.warning("write-ahead log checkpoint failed: %s", exc)
            return 0
