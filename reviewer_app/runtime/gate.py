"""The approval gate: which calls wait for a human, what their request says, and what each decision means.

Pure functions over the checkpoint's :class:`PendingCall` objects; the runner commits what they build.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reviewer_app.domain.decisions import Decision, DecisionError, DecisionKind, args_digest
from reviewer_app.domain.hitl import HITLRecord, HITLStatus, HITLType
from reviewer_app.domain.limits import (
    MAX_ID_CHARS,
    UNDECODABLE_KEY,
    RequestRejected,
    check_json_value,
    is_undecodable,
    scrub_text,
)
from reviewer_app.domain.records import NewRequest
from reviewer_app.domain.rule_outcome import verdict_message
from reviewer_app.domain.rules import Rule, Verdict
from reviewer_app.domain.settlement import settlement_for
from reviewer_app.domain.toolcall import ToolCall as PolicyCall
from reviewer_app.domain.waivers import ApprovalPolicy, SessionRule
from reviewer_app.runtime.checkpoint import CallStatus, PendingCall
from reviewer_app.runtime.llm_clients import ModelTurn, ToolCall
from reviewer_app.runtime.tools import ToolArgumentsError, ToolRegistry

ASK_USER = "ask_user"


@dataclass(frozen=True)
class RuleSettlement:
    """A call a persistent allow or deny rule decided: the request to record, already decided by the rule."""

    request: NewRequest
    verdict: Verdict


@dataclass(frozen=True)
class GateResult:
    """A call as the gate left it, plus the request to create when it needs a human (or the rule's record)."""

    call: PendingCall
    request: NewRequest | None
    settled: RuleSettlement | None = None
    """A call a persistent rule allowed or denied: recorded as a request already decided by ``rule:<id>``."""
    waiver: NewRequest | None = None
    """A gated call a session rule let through: recorded as a request already decided by the rule."""
    waived_by: tuple[int, SessionRule] | None = None


def screen_turn(turn: ModelTurn) -> tuple[ModelTurn, dict[str, str]]:
    """A model turn made safe to record: text scrubbed, poison tool arguments replaced by ``{}``.

    Returns the turn and, per refused call id, why its arguments were refused (its error result).
    Nothing a model sends can then break a checkpoint, the timeline or a listing.
    """
    refused: dict[str, str] = {}
    calls: list[ToolCall] = []
    for index, call in enumerate(turn.tool_calls):
        call_id = scrub_text(call.id).replace("\x00", "")[:MAX_ID_CHARS] or f"call_{index}"
        name = scrub_text(call.name).replace("\x00", "")[:MAX_ID_CHARS]
        arguments = call.arguments
        try:
            if is_undecodable(arguments):
                raise RequestRejected("readable arguments", str(arguments[UNDECODABLE_KEY]))
            check_json_value(arguments, "tool arguments")
        except RequestRejected as exc:
            refused[call_id] = f"error: tool arguments refused ({exc.limit}): {exc}"
            arguments = {}
        unchanged = call_id == call.id and name == call.name and arguments is call.arguments
        calls.append(call if unchanged else ToolCall(id=call_id, name=name, arguments=arguments))
    text = scrub_text(turn.text) if turn.text else turn.text
    thinking = scrub_text(turn.thinking) if turn.thinking else turn.thinking
    unchanged_calls = isinstance(turn.tool_calls, tuple) and all(
        screened is sent for screened, sent in zip(calls, turn.tool_calls, strict=True)
    )
    if text is turn.text and thinking is turn.thinking and unchanged_calls:
        return turn, refused  # the usual turn: nothing to scrub or refuse, nothing to copy
    return ModelTurn(text=text, thinking=thinking, tool_calls=tuple(calls)), refused


def gate_call(
    call: ToolCall,
    *,
    tools: ToolRegistry,
    policy: ApprovalPolicy,
    rules: list[tuple[int, SessionRule]],
    agent: str,
    session_id: str,
    invocation_id: str,
    block_id: str,
    now: float | None = None,
    refused: str | None = None,
    policy_rules: Sequence[Rule] = (),
    cwd: str | None = None,
) -> GateResult:
    """Decide how one model tool call proceeds: error at once, run at once, or wait for a request.

    ``refused``: the call's arguments were refused by :func:`screen_turn`; this is its error result.
    ``policy_rules``: the persistent rules in force (``domain.rules``): a deny rule turns the call into an error
    result that names the rule, an allow rule runs it without a human, an ask rule asks even when a session rule
    would waive it; allow and deny leave a request already decided by ``rule:<id>`` (``GateResult.settled``).
    ``cwd`` is the workspace the call runs in (scopes and path globs are judged against it).
    """
    pending = PendingCall(call_id=call.id, name=call.name, arguments=call.arguments, status=CallStatus.APPROVED)
    if refused is not None:
        pending.status = CallStatus.DONE
        pending.ok = False
        pending.result = refused
        return GateResult(pending, None)
    if call.name not in tools:
        pending.status = CallStatus.DONE
        pending.ok = False
        pending.result = f"error: unknown tool {call.name!r}; available tools: {', '.join(tools.names())}"
        return GateResult(pending, None)
    try:
        tools.validate(call.name, call.arguments)
    except ToolArgumentsError as exc:
        pending.status = CallStatus.DONE
        pending.ok = False
        pending.result = f"error: {exc}"
        return GateResult(pending, None)
    pending.validated = True
    spec = tools.get(call.name)
    moment = now if now is not None else time.time()
    verdict = None
    if call.name != ASK_USER and policy_rules:
        target = PolicyCall(call.name, call.arguments, agent=agent, session_id=session_id, cwd=cwd)
        by_rule = settlement_for(target, rules=policy_rules, now=moment)
        verdict = by_rule.verdict if by_rule is not None else None
    waived_by = None
    if call.name == ASK_USER:
        hitl_type = HITLType.ASK_USER.value
    elif verdict is not None and verdict.effect == "ask":
        hitl_type = HITLType.TOOL_APPROVAL.value
    elif verdict is not None:
        settled = RuleSettlement(
            _tool_request(call, spec.parameters, agent, session_id, invocation_id, block_id, cwd), verdict
        )
        if verdict.effect == "deny":
            pending.status = CallStatus.DONE
            pending.ok = False
            pending.decision = "reject"
            pending.result = f"error: {verdict_message(verdict)}"
        else:
            pending.decision = "approve"
        pending.hitl_id = settled.request.hitl_id
        pending.hitl_type = settled.request.hitl_type
        return GateResult(pending, None, settled)
    elif policy.needs_approval(call.name, call.arguments, side_effects=spec.side_effects):
        hitl_type = HITLType.TOOL_APPROVAL.value
        if rules:  # the session has waivers (a call to match against them is built only then)
            waived = settlement_for(PolicyCall(call.name, call.arguments), waivers=rules)
            waived_by = waived.waiver if waived is not None else None
    else:
        return GateResult(pending, None)
    expires_at = None
    if policy.expires_after_s:
        expires_at = int(now if now is not None else time.time()) + policy.expires_after_s
    request = _tool_request(
        call,
        spec.parameters,
        agent,
        session_id,
        invocation_id,
        block_id,
        cwd,
        hitl_type=hitl_type,
        expires_at=expires_at,
    )
    if waived_by is not None:  # no human needed, but on the record: the caller settles it as the rule's decision
        return GateResult(pending, None, waiver=request, waived_by=waived_by)
    pending.status = CallStatus.AWAITING_DECISION
    pending.hitl_id = request.hitl_id
    pending.hitl_type = hitl_type
    return GateResult(pending, request)


def _tool_request(
    call: ToolCall,
    schema: dict[str, Any],
    agent: str,
    session_id: str,
    invocation_id: str,
    block_id: str,
    cwd: str | None,
    *,
    hitl_type: str = HITLType.TOOL_APPROVAL.value,
    expires_at: int | None = None,
) -> NewRequest:
    """The request for a call: what a human sees, and the record of a call a rule decided (the same request)."""
    data: dict[str, Any] = {"arguments": call.arguments, "schema": schema, "agent": agent, "tool_call_id": call.id}
    if cwd:
        data["cwd"] = cwd
    if hitl_type == HITLType.ASK_USER.value:
        data["question"] = call.arguments.get("question", "")
        if call.arguments.get("options"):
            data["options"] = call.arguments["options"]
    return NewRequest(
        hitl_id=f"hitl_{secrets.token_hex(10)}",  # 80 random bits; uuid4() costs ~5x as much (on the suspend path)
        hitl_type=hitl_type,
        session_id=session_id,
        invocation_id=invocation_id,
        data=data,
        metadata={"agent": agent},
        block_id=block_id,
        tool_name=call.name,
        tool_call_id=call.id,
        expires_at=expires_at,
        agent=agent,
    )


def apply_outcome(call: PendingCall, record: HITLRecord) -> None:
    """Turn a decided request into the call's next status and, when it will not run, the model's result."""
    status = record.get("status")
    response = record.get("user_response")
    expired = status == HITLStatus.EXPIRED.value
    if status == HITLStatus.CANCELLED.value:
        _end_unrun(call, CallStatus.ABORTED, "<aborted: the request was cancelled>", DecisionKind.CANCEL.value)
        return
    try:
        decision = Decision.from_user_response(response if isinstance(response, dict) else None)
    except DecisionError as exc:
        _end_unrun(call, CallStatus.REJECTED, f"rejected by reviewer: unreadable decision ({exc})", "reject")
        return
    kind = decision.kind
    call.decision = kind.value
    is_ask = call.hitl_type == HITLType.ASK_USER.value or call.name == ASK_USER
    if kind.runs_tool and not is_ask:
        if decision.args_sha256 is not None and decision.args_sha256 != args_digest(call.arguments):
            # The request's arguments were changed before the approval: it approved something else than this call.
            refuse_unsigned(call, "the approval names other arguments than the call's (the request was changed)")
            return
        call.status = CallStatus.APPROVED
        call.run_arguments = decision.effective_args(call.arguments) if kind is DecisionKind.EDIT else None
        return
    if kind is DecisionKind.STEER:
        call.guidance = decision.message
        _end_unrun(call, CallStatus.STEERED, "not run: the reviewer sent guidance instead (next message)", kind.value)
        return
    if kind is DecisionKind.RESPOND:
        answer = decision.message or ""
        if is_ask:
            call.status = CallStatus.DONE
            call.ok = True
            call.result = answer
        else:
            _end_unrun(call, CallStatus.REJECTED, f"not run: the reviewer answered instead: {answer}", kind.value)
        return
    if expired:
        text = "rejected: no reviewer decided before the request expired (its default decision)"
    elif decision.message:
        text = f"rejected by reviewer: {decision.message}"
    else:
        text = "rejected by reviewer"
    _end_unrun(call, CallStatus.REJECTED, text, kind.value)


def refuse_unsigned(call: PendingCall, problem: str) -> None:
    """A decision that is not what the audit chain signed: the call does not run, and the model is told why."""
    _end_unrun(call, CallStatus.REJECTED, f"not run: {problem}", DecisionKind.REJECT.value)


def _end_unrun(call: PendingCall, status: CallStatus, result: str, decision: str) -> None:
    call.status = status
    call.result = result
    call.ok = False
    call.decision = decision


def result_text(call: PendingCall, output: str) -> str:
    """What the model sees for a call that ran; an edit is disclosed so the model knows what actually ran."""
    if call.run_arguments is not None and call.run_arguments != call.arguments:
        edited = json.dumps(call.run_arguments, ensure_ascii=False, sort_keys=True)
        return f"note: the reviewer edited the arguments; it ran with {edited}\n{output}"
    return output
