"""Persistent rules for outside agents: the one place every adapter's call meets the rules engine.

Why: LangGraph, the OpenAI Agents SDK, Pydantic AI, the MCP proxy and the Claude Code hook's backend path all
submit calls through :class:`reviewer_app.integrations.core.ReviewClient`; it asks this module first, so a deny
rule stops a call and an allow rule lets it run in every one of them, each decision on the record as a request
decided by ``rule:<id>`` (``SQLHITLBackend.settle_by_rules``). An ``ask`` rule, or no rule, leaves the call to a
human as before.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from reviewer_app.domain.hitl import HITLRecord, HITLType
from reviewer_app.domain.records import NewRequest
from reviewer_app.domain.settlement import settlement_for
from reviewer_app.domain.toolcall import ToolCall

if TYPE_CHECKING:
    from reviewer_app.hitl import SQLHITLBackend
    from reviewer_app.integrations.core import ExternalCall


def policy_call(call: ExternalCall) -> ToolCall | None:
    """The call as the rules judge it; None for what rules do not decide (questions, calls with no tool)."""
    if call.hitl_type != HITLType.TOOL_APPROVAL.value or not call.tool_name:
        return None
    annotations = call.extra_data.get("annotations")
    return ToolCall(
        call.tool_name,
        dict(call.arguments) if isinstance(call.arguments, Mapping) else {},
        agent=call.agent,
        session_id=call.session_id,
        cwd=call.cwd,
        metadata={"annotations": dict(annotations)} if isinstance(annotations, Mapping) else {},
    )


def _new_request(call: ExternalCall) -> NewRequest:
    return NewRequest(**call.request_columns(), external=True)


async def settle_by_rules(backend: SQLHITLBackend, call: ExternalCall) -> HITLRecord | None:
    """Settle ``call`` by the persistent rules (allow or deny, on the record); None: a human decides."""
    target = policy_call(call)
    if target is None:
        return None
    return await backend.settle_by_rules(_new_request(call), target, title=call.title)


async def settle_by_waiver(backend: SQLHITLBackend, call: ExternalCall) -> HITLRecord | None:
    """Settle ``call`` by an approve-for-session waiver of its session (approved by ``session-rule:<id>``, on the
    record, with its audit row); None when no waiver covers it. Asked after the persistent rules, as the
    runtime's gate asks: a deny or ask rule beats a waiver."""
    target = policy_call(call)
    if target is None:
        return None
    return await backend.settle_by_waiver(_new_request(call), target, title=call.title)


async def rule_effect(backend: SQLHITLBackend, call: ToolCall) -> str | None:
    """The effect of the persistent rule that would decide ``call`` (allow, ask, deny), or None when none would.

    For a host that skips review for some calls (the MCP proxy's read-only tools and approve-for-session): any
    rule that applies sends the call through review instead, where :func:`settle_by_rules` settles an allow or
    deny on the record and an ask waits for a human.
    """
    rules = await backend.active_rules()
    if not rules:
        return None
    settled = settlement_for(call, rules=rules, now=time.time())
    return settled.effect if settled is not None else None
