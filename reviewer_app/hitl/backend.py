"""``SQLHITLBackend``: the service every caller uses, assembled from the backend's parts.

Each part is one concept in its own module, built on :class:`~reviewer_app.hitl.core.BackendCore` (the store on
one database thread); this class only puts them together, so its public API is the union of theirs.
"""

from __future__ import annotations

from reviewer_app.hitl.abandoned import AbandonedHookSweep
from reviewer_app.hitl.expiry import ExpirySweep
from reviewer_app.hitl.gate import DecisionGate
from reviewer_app.hitl.habits import HabitMethods
from reviewer_app.hitl.previews import PreviewMethods
from reviewer_app.hitl.protocol import ProtocolMethods
from reviewer_app.hitl.rules import RuleMethods
from reviewer_app.hitl.timeline import TimelineWrites
from reviewer_app.hitl.waivers import WaiverSettling


class SQLHITLBackend(
    ProtocolMethods,
    DecisionGate,
    RuleMethods,
    WaiverSettling,
    ExpirySweep,
    AbandonedHookSweep,
    TimelineWrites,
    PreviewMethods,
    HabitMethods,
):
    """aury-agent's ``HITLBackend`` protocol, durable in SQLite or PostgreSQL.

    Extensions beyond the protocol: :meth:`wait_for_response`, :meth:`expire_due`,
    :meth:`decide` (validated reviewer decisions), listing for the UI, and
    :meth:`emit_block` for agents in other processes to write their timeline.
    """
