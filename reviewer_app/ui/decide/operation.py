"""The one way the window decides a request: keys, dialogs, triage, bulk and notifications all call it.

Why one operation: sending a decision and handling "someone else decided first" was written four times, each
worded differently and one (notifications) skipping the runtime, so a run waiting in this process resumed only
when its watcher next polled. Here (in the spirit of Anki's ``CollectionOp``): the decision goes through the
runtime when the window has one (the waiting run resumes at once), else straight to the backend; the work runs
on the backend's DB thread while the Qt thread goes on (``await``, never a blocking call); the result comes back
as a :class:`DecisionOutcome` that never raises, with one sentence for a conflict or a refusal.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from reviewer_app.domain.decisions import Decision, DecisionError
from reviewer_app.domain.hitl import HITLConflict, HITLNotFound, HITLRecord
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.detail.settled import conflict_phrase

if TYPE_CHECKING:
    from reviewer_app.runtime.runner import Runtime


@dataclass(frozen=True)
class DecisionOutcome:
    """What became of one decision sent from the window.

    ``record`` is the committed request on success. ``elsewhere`` is how the request was decided meanwhile when
    someone else decided first (``"it was rejected by bob at 14:02:11 (5s ago)"``). ``problem`` is the one
    sentence the window shows when the decision was not recorded, the same words on every path.
    """

    hitl_id: str
    decision: Decision
    record: HITLRecord | None = None
    elsewhere: str | None = None
    problem: str | None = None

    @property
    def decided(self) -> bool:
        return self.record is not None

    @property
    def still_pending(self) -> bool:
        """Neither this decision nor another one was recorded: the request waits as before."""
        return self.record is None and self.elsewhere is None


def conflict_message(elsewhere: str) -> str:
    """The one sentence for "someone else decided first", wherever the decision came from."""
    return f"Someone else decided first: {elsewhere}; yours was not recorded."


class DecisionOp(QObject):
    """Sends decisions from this window: through the runtime when there is one, else the backend.

    Signals:
        deciding(str): a decision on this request is on its way from this window (not news to announce later).
        decided(str, str): a decision (hitl_id, kind) was committed from this window.
    """

    deciding = Signal(str)
    decided = Signal(str, str)

    def __init__(self, backend: SQLHITLBackend, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.backend = backend
        self.runtime: Runtime | None = None  # set once the window has one (``MainWindow.set_runtime``)
        self.now: Callable[[], float] = time.time

    async def decide(self, hitl_id: str, decision: Decision) -> DecisionOutcome:
        """Commit ``decision`` on ``hitl_id`` (compare-and-set); never raises except on cancellation."""
        self.deciding.emit(hitl_id)
        try:
            if self.runtime is not None:
                record = await self.runtime.decide_and_resume(hitl_id, decision)
            else:
                record = await self.backend.decide(hitl_id, decision)
        except asyncio.CancelledError:
            raise
        except HITLConflict as exc:
            elsewhere = conflict_phrase(exc.record, self.now()) or str(exc)
            return DecisionOutcome(hitl_id, decision, elsewhere=elsewhere, problem=conflict_message(elsewhere))
        except (DecisionError, HITLNotFound) as exc:
            return DecisionOutcome(hitl_id, decision, problem=f"The decision was not recorded: {exc}")
        except Exception as exc:
            problem = f"Could not record the decision: {type(exc).__name__}: {exc}"
            return DecisionOutcome(hitl_id, decision, problem=problem)
        self.decided.emit(hitl_id, decision.kind.value)
        return DecisionOutcome(hitl_id, decision, record=record)

    async def decide_each(self, decisions: Iterable[tuple[str, Decision]]) -> list[DecisionOutcome]:
        """Several decisions, one compare-and-set each, in order: one decided elsewhere never stops the rest."""
        return [await self.decide(hitl_id, decision) for hitl_id, decision in decisions]
