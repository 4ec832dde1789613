"""Human titles for the inbox's group rows: a run is its prompt (or its integration's title), a session its first run's.

The runs board's model knows the newest runs with their prompts (integrations store their title there: Claude
Code's hook the session's first prompt). Titles are looked up on paint, so they are cached and the cache is
dropped whenever the runs model changes; a painted run the board does not hold (an old one in a big inbox) is
read from the database in the background, once, and the rows repaint when it arrives.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from PySide6.QtCore import QObject, Signal

from reviewer_app.domain.records import RunRecord
from reviewer_app.ui.runs.model import RunsModel
from reviewer_app.ui.texts import one_line


class RunTitles(QObject):
    """Titles of runs and sessions, read from the runs model.

    Signals:
        changed(): titles may read differently now (the inbox repaints).
    """

    changed = Signal()

    FETCH_BATCH = 64  # runs read per background round (a screenful of rows)

    def __init__(
        self,
        runs: RunsModel,
        parent: QObject | None = None,
        *,
        fetch: Callable[[str], Awaitable[RunRecord | None]] | None = None,
        spawn: Callable[[Coroutine[Any, Any, None]], Any] | None = None,
    ) -> None:
        super().__init__(parent)
        self._runs = runs
        self._sessions: dict[str, str] | None = None
        self._titles: dict[str, str | None] = {}  # run id -> title, for the runs the board holds
        self._fetch = fetch
        self._spawn = spawn
        self._fetched: dict[str, str | None] = {}  # runs read from the database: their titles (None: none)
        self._wanted: list[str] = []
        self._fetching = False
        for signal in (runs.modelReset, runs.rowsInserted, runs.rowsRemoved, runs.dataChanged, runs.rowsMoved):
            signal.connect(self._invalidate)

    def _invalidate(self, *_args: object) -> None:
        self._sessions = None
        self._titles.clear()
        self.changed.emit()

    def run_title(self, invocation_id: str) -> str | None:
        if invocation_id in self._titles:  # asked on every paint of the row: no refolding of a long prompt
            return self._titles[invocation_id]
        run = self._runs.run(invocation_id)
        if run is not None:
            title = self._titles[invocation_id] = _title(run)
            return title
        if invocation_id in self._fetched:
            return self._fetched[invocation_id]
        self._want(invocation_id)
        return None

    def _want(self, invocation_id: str) -> None:
        if self._fetch is None or self._spawn is None or invocation_id in self._wanted:
            return
        self._wanted.append(invocation_id)
        if not self._fetching:
            self._fetching = True
            self._spawn(self._fetch_wanted())

    async def _fetch_wanted(self) -> None:
        assert self._fetch is not None
        try:
            while self._wanted:
                await asyncio.sleep(0)  # let the paint that asked finish (and ask for the rest of the screen)
                batch, self._wanted = self._wanted[: self.FETCH_BATCH], self._wanted[self.FETCH_BATCH :]
                for invocation_id in batch:
                    try:
                        run = await self._fetch(invocation_id)
                    except asyncio.CancelledError:
                        raise
                    except Exception:  # the database is away: the id stays shown; asked again on a later paint
                        self._wanted.clear()
                        return
                    self._fetched[invocation_id] = _title(run) if run is not None else None
                self._sessions = None
                self.changed.emit()
        finally:
            self._fetching = False

    def session_title(self, session_id: str, first_run: str | None = None) -> str | None:
        """The title of the session's first run (by creation), else of ``first_run`` (its first one in the inbox)."""
        if self._sessions is None:
            firsts: dict[str, RunRecord] = {}
            for run in self._runs.all_runs():
                if _title(run) is None:
                    continue
                known = firsts.get(run.session_id)
                if known is None or (run.created_at, run.updated_at_ms) < (known.created_at, known.updated_at_ms):
                    firsts[run.session_id] = run
            self._sessions = {session: _title(run) or "" for session, run in firsts.items()}
        title = self._sessions.get(session_id)
        if title:
            return title
        return self.run_title(first_run) if first_run is not None else None


def _title(run: RunRecord) -> str | None:
    return one_line(run.prompt) or None
