"""What the window shows beside a request: its risk, its preview's inputs, and why it went to a person.

The records are read on the database thread and judged on a worker thread (the secret scan and the shell
parsing cost a little), so neither the loop nor the database waits on the other.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Sequence

from reviewer_app.domain.risk import Risk, assess
from reviewer_app.domain.rule_outcome import call_of_record
from reviewer_app.domain.why import PreviewInputs, why_asked
from reviewer_app.hitl.core import BackendCore


class PreviewMethods(BackendCore):
    """Risk chips, a request's preview inputs, and the queue's "why asked" line."""

    async def assess_requests(self, hitl_ids: Sequence[str]) -> dict[str, Risk]:
        """The risk level and reasons of each request among ``hitl_ids`` (the window's risk chips).

        The records are read on the database thread and judged on a worker thread (the secret scan costs a
        little), so neither the loop nor the database waits on the other. A request that is not a tool call,
        or no longer exists, is left out.
        """
        wanted = list(dict.fromkeys(hitl_ids))
        records = await self.run(lambda: [self.store.requests.get(hitl_id) for hitl_id in wanted])

        def judge() -> dict[str, Risk]:
            risks: dict[str, Risk] = {}
            for record in records:
                call = call_of_record(record) if record is not None else None
                if record is not None and call is not None:
                    risks[str(record["hitl_id"])] = assess(call)
            return risks

        return await asyncio.to_thread(judge)

    async def preview_inputs(self, hitl_id: str) -> PreviewInputs | None:
        """What one request's preview needs from the database (record, rules, waivers, workspace), in one call."""
        from reviewer_app.persistence.preview_inputs import read_inputs

        return await self.run(read_inputs, self.store, hitl_id)

    async def why_of(self, hitl_id: str) -> tuple[str, ...] | None:
        """Why ``hitl_id`` went to a person (``domain.why.why_asked``), without the preview's effects: the flat
        queue's tooltip. None when the request no longer exists."""
        inputs = await self.preview_inputs(hitl_id)
        if inputs is None:
            return None

        def judge(inputs: PreviewInputs) -> tuple[str, ...]:
            call = call_of_record(inputs.record)
            if call is not None and call.cwd is None and inputs.workspace is not None:
                call = dataclasses.replace(call, cwd=inputs.workspace)
            risk = assess(call) if call is not None else None
            return why_asked(
                inputs.record,
                rules=inputs.rules,
                expired_rules=inputs.expired_rules,
                session_rules=inputs.session_rules,
                risk=risk,
                now=time.time(),
            )

        return await asyncio.to_thread(judge, inputs)
