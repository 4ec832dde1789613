"""Human titles for the inbox's group rows: a run is its prompt (or its integration's title), a session its first run's.

The runs board's model knows every run with its prompt (integrations store their title there: Claude Code's
hook the session's first prompt, the MCP proxy its server). Titles are looked up on paint, so they are cached
and the cache is dropped whenever the runs model changes.
"""

from __future__ import annotations

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

    def __init__(self, runs: RunsModel, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._runs = runs
        self._sessions: dict[str, str] | None = None
        for signal in (runs.modelReset, runs.rowsInserted, runs.rowsRemoved, runs.dataChanged, runs.rowsMoved):
            signal.connect(self._invalidate)

    def _invalidate(self, *_args: object) -> None:
        self._sessions = None
        self.changed.emit()

    def run_title(self, invocation_id: str) -> str | None:
        run = self._runs.run(invocation_id)
        return _title(run) if run is not None else None

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
