"""Human titles for the inbox's group rows: a run is its prompt (or its integration's title), a session its first run's.

The runs board's model knows the newest runs with their prompts (integrations store their title there: Claude
Code's hook the session's first prompt). Titles are looked up on paint, so they are cached and the cache is
dropped whenever the runs model changes; a painted run the board does not hold (an old one in a big inbox) is
read from the database in the background, once, and the rows repaint when it arrives.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from PySide6.QtCore import QModelIndex, QObject, Signal

from reviewer_app.domain.records import RunRecord
from reviewer_app.ui.common.texts import one_line
from reviewer_app.ui.runs.model import RUN_ROLE, RunsModel


class RunTitles(QObject):
    """Titles of runs and sessions, read from the runs model.

    Signals:
        changed(): titles may read differently now (the inbox repaints).
    """

    changed = Signal()

    FETCH_BATCH = 64  # rows read per background round (a screenful)

    def __init__(
        self,
        runs: RunsModel,
        parent: QObject | None = None,
        *,
        fetch: Callable[[str], Awaitable[RunRecord | None]] | None = None,
        fetch_session: Callable[[str], Awaitable[dict[str, Any] | None]] | None = None,
        spawn: Callable[[Coroutine[Any, Any, None]], Any] | None = None,
    ) -> None:
        super().__init__(parent)
        self._runs = runs
        self._sessions: dict[str, str] | None = None
        self._first_runs: dict[str, RunRecord] = {}  # session id -> its first titled run (for _sessions)
        self._titles: dict[str, str | None] = {}  # run id -> title, for the runs the board holds
        self._fetch = fetch
        self._fetch_session = fetch_session
        self._spawn = spawn
        self._fetched: dict[str, str | None] = {}  # runs read from the database: their titles (None: none)
        self._places: dict[str, str | None] = {}  # sessions read from the database: their working directory
        self._wanted: list[tuple[str, str]] = []  # ("run" | "session", id)
        self._fetching = False
        # A run's title (its prompt) never changes, so state changes (dataChanged, a run moving between groups)
        # leave the titles alone; only runs new to the board can change a session's title. Re-deriving every
        # title and repainting the inbox on each run update held the GUI thread under 100 concurrent runs.
        runs.modelReset.connect(self._invalidate)
        runs.rowsInserted.connect(self._on_runs_inserted)

    def _invalidate(self, *_args: object) -> None:
        self._sessions = None
        self._titles.clear()
        self.changed.emit()

    def _on_runs_inserted(self, parent: QModelIndex, first: int, last: int) -> None:
        if self._sessions is None:
            return  # computed on the next ask, from every run
        new_title = False
        for row in range(first, last + 1):
            run = self._runs.index(row, 0, parent).data(RUN_ROLE)
            if not isinstance(run, RunRecord) or run.id in self._titles:
                continue  # a run moving between state groups: nothing new
            title = self._titles[run.id] = _title(run)
            if title is None:
                continue
            known = self._first_runs.get(run.session_id)
            if known is None or (run.created_at, run.updated_at_ms) < (known.created_at, known.updated_at_ms):
                self._first_runs[run.session_id] = run
                self._sessions[run.session_id] = title
                new_title = True
        if new_title:
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
        self._want("run", invocation_id)
        return None

    def session_title(self, session_id: str, first_run: str | None = None) -> str | None:
        """The title of the session's first run (by creation), else of ``first_run`` (its first one in the inbox),
        else where it works ("in ~/src/api": a Claude Code session's directory)."""
        if self._sessions is None:
            firsts: dict[str, RunRecord] = {}
            for run in self._runs.all_runs():
                if _title(run) is None:
                    continue
                known = firsts.get(run.session_id)
                if known is None or (run.created_at, run.updated_at_ms) < (known.created_at, known.updated_at_ms):
                    firsts[run.session_id] = run
            self._first_runs = firsts
            self._sessions = {session: _title(run) or "" for session, run in firsts.items()}
        title = self._sessions.get(session_id) or (self.run_title(first_run) if first_run is not None else None)
        if title:
            return title
        if session_id in self._places:
            place = self._places[session_id]
            return f"in {place}" if place else None
        self._want("session", session_id)
        return None

    def _want(self, kind: str, ident: str) -> None:
        fetcher = self._fetch if kind == "run" else self._fetch_session
        if fetcher is None or self._spawn is None or (kind, ident) in self._wanted:
            return
        self._wanted.append((kind, ident))
        if not self._fetching:
            self._fetching = True
            self._spawn(self._fetch_wanted())

    async def _fetch_wanted(self) -> None:
        try:
            while self._wanted:
                await asyncio.sleep(0)  # let the paint that asked finish (and ask for the rest of the screen)
                batch, self._wanted = self._wanted[: self.FETCH_BATCH], self._wanted[self.FETCH_BATCH :]
                for kind, ident in batch:
                    try:
                        await self._read(kind, ident)
                    except asyncio.CancelledError:
                        raise
                    except Exception:  # the database is away: the id stays shown; asked again on a later paint
                        self._wanted.clear()
                        return
                self._sessions = None
                self.changed.emit()
        finally:
            self._fetching = False

    async def _read(self, kind: str, ident: str) -> None:
        if kind == "run":
            assert self._fetch is not None
            run = await self._fetch(ident)
            self._fetched[ident] = _title(run) if run is not None else None
            return
        assert self._fetch_session is not None
        info = await self._fetch_session(ident)
        place = (info or {}).get("workspace")
        self._places[ident] = short_path(place) if isinstance(place, str) and place else None


def short_path(path: str) -> str:
    """A directory as a title: the home directory as ``~``."""
    home = os.path.expanduser("~")
    if home not in ("", "/", "~") and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home) :]
    return path


def _title(run: RunRecord) -> str | None:
    return one_line(run.prompt) or None
