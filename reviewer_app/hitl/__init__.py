"""The public integration point for agent authors: aury-agent's ``HITLBackend`` on SQL.

::

    from reviewer_app.hitl import SQLHITLBackend, HITLConflict, HITLNotFound

    backend = SQLHITLBackend("reviews.db")  # a path or a SQLAlchemy URL; creates/migrates the DB
    await backend.create(hitl_id="h1", hitl_type="tool_approval", session_id="s1", invocation_id="i1",
                         data={"arguments": {"path": "notes.txt"}}, tool_name="write_file")
    record = await backend.wait_for_response("h1")

Every database call runs on one worker thread owned by the backend (Anki's
pattern), so the event loop — and the Qt thread under qasync — never waits on
SQLite. Decisions are compare-and-set: they apply only while the request is
pending, and they are committed before anything acts on them.

The backend is one package with a module per concept: ``core`` (the store on the database thread), ``gate`` (the
one path a reviewer's decision takes), ``protocol``, ``reads``, ``rules``, ``waivers``, ``expiry``, ``abandoned``,
``signed``, ``timeline``, ``previews``, ``habits``; ``backend`` assembles them into :class:`SQLHITLBackend`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reviewer_app.domain.decisions import Decision, DecisionError, DecisionKind
    from reviewer_app.domain.hitl import (
        HITLConflict,
        HITLError,
        HITLNotFound,
        SchemaTooNew,
        WriteRetriesExhausted,
        shown_arguments,
    )
    from reviewer_app.domain.limits import RequestRejected
    from reviewer_app.domain.records import RequestQuery
    from reviewer_app.hitl.backend import SQLHITLBackend
    from reviewer_app.hitl.gate import validate_decision
    from reviewer_app.hitl.identity import default_reviewer

# The exports are imported on first use (PEP 562): the window's first screen imports ``hitl.first_screen``, which
# must not pay for the backend (SQLAlchemy, the tables) before the window paints.
_EXPORTS = {
    "Decision": "reviewer_app.domain.decisions",
    "DecisionError": "reviewer_app.domain.decisions",
    "DecisionKind": "reviewer_app.domain.decisions",
    "HITLConflict": "reviewer_app.domain.hitl",
    "HITLError": "reviewer_app.domain.hitl",
    "HITLNotFound": "reviewer_app.domain.hitl",
    "SchemaTooNew": "reviewer_app.domain.hitl",
    "WriteRetriesExhausted": "reviewer_app.domain.hitl",
    "shown_arguments": "reviewer_app.domain.hitl",
    "RequestRejected": "reviewer_app.domain.limits",
    "RequestQuery": "reviewer_app.domain.records",
    "SQLHITLBackend": "reviewer_app.hitl.backend",
    "validate_decision": "reviewer_app.hitl.gate",
    "default_reviewer": "reviewer_app.hitl.identity",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = [
    "Decision",
    "DecisionError",
    "DecisionKind",
    "HITLConflict",
    "HITLError",
    "HITLNotFound",
    "RequestQuery",
    "RequestRejected",
    "SQLHITLBackend",
    "SchemaTooNew",
    "WriteRetriesExhausted",
    "default_reviewer",
    "shown_arguments",
    "validate_decision",
]
