"""Waivers: what an approve-for-session grants, and a new call settled by a waiver of its session.

An approve-for-session decision adds its waiver in the decision's own transaction (the decision gate calls
:func:`grant_waiver`); a later call the waiver covers is created already approved by ``session-rule:<id>``, with
its audit row, instead of waiting for a person.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Sequence

from reviewer_app.domain.decisions import Decision, DecisionKind
from reviewer_app.domain.hitl import HITLRecord, HITLType, shown_arguments
from reviewer_app.domain.limits import check_request
from reviewer_app.domain.records import NewRequest
from reviewer_app.domain.rules import Rule
from reviewer_app.domain.settlement import settlement_for
from reviewer_app.domain.toolcall import ToolCall as PolicyCall
from reviewer_app.domain.waivers import SessionRule, rule_for
from reviewer_app.hitl.core import BackendCore
from reviewer_app.persistence.store import StoreTx


def grant_waiver(tx: StoreTx, record: HITLRecord, decision: Decision, *, reviewer: str) -> None:
    """Approve-for-session adds its waiver in the decision's transaction; its scope comes from the call
    itself and the operator's fixed list of shell tools, never from anything in the request's data."""
    if decision.kind is not DecisionKind.APPROVE_FOR_SESSION or not record.get("tool_name"):
        return
    args = shown_arguments(record)
    rule = rule_for(record["tool_name"], args if isinstance(args, dict) else {})
    if rule is None:  # the command can never be waived (substitution, unparseable…): this call only
        return
    tx.waivers.add(record["session_id"], rule, created_by=reviewer, hitl_id=record["hitl_id"])


class WaiverSettling(BackendCore):
    """A new call settled by a waiver of its session."""

    async def settle_by_waiver(
        self, request: NewRequest, call: PolicyCall, *, title: str | None = None
    ) -> HITLRecord | None:
        """Settle a new call an approve-for-session waiver of its session covers, on the record; None: ask a human.

        The request is created already approved by ``session-rule:<id>`` with its audit row, in one transaction,
        as the runtime's gate does. What settles the call is :func:`settlement_for`'s answer with the rules in
        force too: an ask rule keeps a waived call for a human, as on every other path. The waiver is matched by
        :meth:`SessionRule.matches` (a changed or compound shell command is not covered); questions and an
        existing request with this id give None.
        """
        if request.hitl_type != HITLType.TOOL_APPROVAL.value or not request.tool_name:
            return None
        check_request(dataclasses.asdict(request))
        arguments = call.arguments

        def covering(
            waivers: Iterable[tuple[int, SessionRule]], rules: Sequence[Rule]
        ) -> tuple[int, SessionRule] | None:
            settled = settlement_for(call, rules=rules, waivers=waivers) if waivers else None
            return settled.waiver if settled is not None else None

        # a plain read first: most calls have no waiver and need no write lock
        waivers = await self.run(self.store.waivers.entries, request.session_id)
        if not waivers or covering(waivers, await self.run(self.store.rules.active, time.time())) is None:
            return None

        def work(tx: StoreTx) -> HITLRecord | None:  # again under the write lock: the waiver is read where it is used
            if tx.requests.get(request.hitl_id) is not None:
                return None
            waiver = covering(tx.waivers.entries(request.session_id), tx.rules.active(time.time()))
            if waiver is None:
                return None
            tx.runs.ensure_for(request, workspace=call.cwd, prompt=title)
            return tx.waivers.settle(request, waiver[0], waiver[1], arguments, ensure_parents=False)

        return await self.write(work)
