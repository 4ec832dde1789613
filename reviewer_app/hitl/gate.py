"""The decision gate: the one path by which a reviewer's decision on a request is recorded.

Every way a person decides — the window, the CLI and other processes (:meth:`DecisionGate.decide`), aury-style
agents (:meth:`DecisionGate.respond`), bulk decisions (one ``decide`` per request), and the identical siblings an
approve-for-session approves with it — passes through :meth:`DecisionGate._through_gate` or, inside an open
transaction, :func:`record_decision`. So the checks are written once: the request is still pending and its hook
still waits for an answer; the decision suits the request and names the SHA-256 of the arguments shown (the
signature an approval carries; edits pass the tool's schema); the recorded reviewer is the backend's identity;
then the compare-and-set with its audit row, the waiver an approve-for-session grants, and after the commit the
wake-up of everyone waiting (:meth:`BackendCore.write`). The :class:`Decision` object is what the gate checks
and what it records; the stored ``user_response`` is its serialised form.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from reviewer_app.domain.decisions import Decision, DecisionError, DecisionKind, args_digest
from reviewer_app.domain.hitl import (
    STATUS_PENDING,
    TYPE_ASK_USER,
    HITLRecord,
    HITLStatus,
    HITLType,
    shown_arguments,
)
from reviewer_app.domain.json_schemas import SchemaProblem, best_error
from reviewer_app.domain.toolcall import is_shell_tool
from reviewer_app.domain.waivers import rule_for
from reviewer_app.hitl.abandoned import AbandonedRequest, refuse_if_abandoned, settle_if_abandoned
from reviewer_app.hitl.core import BackendCore
from reviewer_app.hitl.waivers import grant_waiver
from reviewer_app.persistence.store import StoreTx


def validate_decision(record: HITLRecord, decision: Decision) -> None:
    """Check a decision against the request it decides; raises :class:`DecisionError`."""
    is_ask = record.get("hitl_type") == TYPE_ASK_USER
    if is_ask and decision.kind not in (DecisionKind.RESPOND, DecisionKind.REJECT, DecisionKind.STEER):
        raise DecisionError(f"an ask_user request is answered, not {decision.kind.value}d")
    allowed = (record.get("data") or {}).get("allowed_decisions")
    if isinstance(allowed, list) and decision.kind.value not in allowed:
        offered = ", ".join(str(kind) for kind in allowed) or "nothing"
        raise DecisionError(f"this request does not allow {decision.kind.value} (it allows {offered})")
    answers_for_tool = isinstance(allowed, list) and DecisionKind.RESPOND.value in allowed  # LangChain's "respond"
    if not is_ask and decision.kind is DecisionKind.RESPOND and record.get("tool_name") and not answers_for_tool:
        raise DecisionError("a tool approval is approved, edited, rejected or steered, not answered")
    shown = shown_arguments(record)
    decision.check_hash(shown)
    if decision.kind is DecisionKind.EDIT:
        schema = (record.get("data") or {}).get("schema")
        if isinstance(schema, dict):
            try:
                error = best_error(decision.edited_args, schema)
            except SchemaProblem as exc:
                raise DecisionError(f"edited arguments cannot be checked: {exc}") from exc
            if error is not None:
                where = "/".join(str(p) for p in error.absolute_path) or "arguments"
                raise DecisionError(f"edited arguments are invalid at {where}: {error.message}")


def record_decision(
    tx: StoreTx,
    record: HITLRecord,
    decision: Decision | None,
    user_response: dict[str, Any] | None,
    *,
    reviewer: str,
) -> HITLRecord:
    """In the caller's transaction: check ``decision`` against the pending ``record``, then compare-and-set it
    (stored as ``user_response``) with its audit row, and add the waiver an approve-for-session grants.

    ``decision`` None: a bare aury-protocol answer, stored as given without checks (it runs no tool).
    """
    if decision is not None:
        validate_decision(record, decision)
    # An approval that passed validate_decision names the digest of the shown arguments: the audit row reuses it.
    shown_sha256 = decision.args_sha256 if decision is not None and decision.kind.needs_hash else None
    decided = tx.requests.decide(
        record["hitl_id"], user_response, reviewer=reviewer, current=record, shown_sha256=shown_sha256
    )
    if decision is not None:
        grant_waiver(tx, record, decision, reviewer=reviewer)
    return decided


class DecisionGate(BackendCore):
    """``decide`` and ``respond``, and the siblings an approve-for-session approves, through one gate."""

    async def decide(
        self, hitl_id: str, decision: Decision, *, then: Callable[[StoreTx, HITLRecord], object] | None = None
    ) -> HITLRecord:
        """Apply a reviewer's decision after checking it against what would run.

        Approvals must carry the SHA-256 of the arguments they approve; edits
        are validated against the tool's JSON schema when the request carries
        one (``data["schema"]``); approve-for-session adds its session rule in
        the same transaction and approves the session's identical pending calls.
        ``then`` writes, in that transaction too, what the decided record lets
        happen (a runtime commits the call it lets run).
        """
        reviewer = self.reviewer  # who decides is this backend's identity, not a name the caller asserts
        if decision.reviewer != reviewer:
            decision = dataclasses.replace(decision, reviewer=reviewer)
        return await self._through_gate(hitl_id, decision, decision.to_user_response(), then=then)

    async def respond(self, hitl_id: str, user_response: dict[str, Any]) -> None:
        """Complete a pending request with ``user_response`` (compare-and-set).

        A response that names a decision goes through the same gate as :meth:`decide`: one that would run
        a tool must name the SHA-256 of the arguments shown, and edits must pass the tool's schema. A bare
        protocol answer (no ``decision`` key) is stored as given. Either way the recorded reviewer is this
        backend's identity, never a name the response asserts.
        """
        if not isinstance(user_response, dict):
            raise TypeError("user_response must be a dict")
        response = dict(user_response)
        if "decision" in response or "reviewer" in response:
            response["reviewer"] = self.reviewer
        decision = Decision.from_user_response(response) if "decision" in response else None
        await self._through_gate(hitl_id, decision, response)

    async def _through_gate(
        self,
        hitl_id: str,
        decision: Decision | None,
        user_response: dict[str, Any],
        *,
        then: Callable[[StoreTx, HITLRecord], object] | None = None,
    ) -> HITLRecord:
        """Record ``decision`` (stored as ``user_response``) on the pending request, in one write transaction.

        A request that is no longer pending raises :class:`HITLConflict` naming who decided it (or
        :class:`HITLNotFound`); one whose hook is gone is settled as answered elsewhere and the decision refused.
        """
        attempted = str(decision.kind) if decision is not None else "respond to"  # a StrEnum: its text, in C
        reviewer = self.reviewer

        def work(tx: StoreTx) -> HITLRecord | AbandonedRequest:
            record = tx.requests.get(hitl_id)
            if record is None or record["status"] != STATUS_PENDING:
                raise tx.requests.conflict_for(hitl_id, attempted)
            abandoned = settle_if_abandoned(tx, record)
            if abandoned is not None:
                return AbandonedRequest(abandoned)
            decided = record_decision(tx, record, decision, user_response, reviewer=reviewer)
            if then is not None:
                then(tx, decided)
            return decided

        decided = refuse_if_abandoned(await self.write(work), attempted)
        if decision is not None and decision.kind is DecisionKind.APPROVE_FOR_SESSION:
            await self.settle_session_siblings(decided)
        return decided

    async def settle_session_siblings(self, approved: HITLRecord) -> list[HITLRecord]:
        """Approve the pending requests of ``approved``'s session that ask for the same call, at once.

        A sibling is the same tool with identical arguments as shown, or (shell tools) a command the exact scope
        approve-for-session granted covers (``'git' status`` for ``git status``). Each is decided in its own
        compare-and-set transaction, validated like any decision (hash of its own shown arguments, its
        ``allowed_decisions``): one decided elsewhere meanwhile keeps that decision. Returns the ones approved.
        """
        tool = approved.get("tool_name")
        if not tool or approved.get("hitl_type") != HITLType.TOOL_APPROVAL.value:
            return []
        shown = shown_arguments(approved)
        digest = args_digest(shown)
        rule = rule_for(tool, shown) if is_shell_tool(tool) and isinstance(shown, dict) else None
        pending = await self.run(self.store.requests.pending, session_id=approved["session_id"])
        reviewer = self.reviewer

        def sibling(record: HITLRecord) -> bool:
            if record["hitl_id"] == approved["hitl_id"] or record.get("tool_name") != tool:
                return False
            if record.get("hitl_type") != HITLType.TOOL_APPROVAL.value:
                return False
            args = shown_arguments(record)
            if args_digest(args) == digest:
                return True
            return rule is not None and isinstance(args, dict) and rule.matches(tool, args)

        def approve_one(tx: StoreTx, hitl_id: str) -> HITLRecord | None:
            current = tx.requests.get(hitl_id)
            if current is None or current["status"] != HITLStatus.PENDING.value or not sibling(current):
                return None
            decision = Decision(
                DecisionKind.APPROVE,
                message=f"approved for the session with {approved['hitl_id']}",
                args_sha256=args_digest(shown_arguments(current)),
                reviewer=reviewer,
            )
            try:
                return record_decision(tx, current, decision, decision.to_user_response(), reviewer=reviewer)
            except DecisionError:
                return None  # it does not allow approve: left for a human

        settled: list[HITLRecord] = []
        for record in pending:
            if sibling(record):
                hitl_id = str(record["hitl_id"])
                decided = await self.write(lambda tx, hitl_id=hitl_id: approve_one(tx, hitl_id))  # type: ignore[misc]
                if decided is not None:
                    settled.append(decided)
        return settled
