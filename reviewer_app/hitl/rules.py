"""Persistent rules: stored and revoked, previewed over past requests, and settling the requests they match.

A rule is the operator's own allow/deny/ask pattern. An allow or deny rule settles a new call on the record
(``rule:<id>`` with its audit row and the rule's hit) instead of asking a person, and can settle the pending
requests it matches once the operator has previewed them; nothing here is a reviewer's decision.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Collection, Iterable, Sequence

from reviewer_app.domain.hitl import HITLConflict, HITLNotFound, HITLRecord, HITLStatus, shown_arguments
from reviewer_app.domain.limits import check_request
from reviewer_app.domain.records import NewRequest, RequestQuery
from reviewer_app.domain.rule_outcome import call_of_record
from reviewer_app.domain.rules import Rule, Verdict, evaluate, prevailing_verdict
from reviewer_app.domain.settlement import settlement_for
from reviewer_app.domain.toolcall import ToolCall as PolicyCall
from reviewer_app.hitl.identity import default_reviewer
from reviewer_app.hitl.reads import StoreReads
from reviewer_app.persistence.store import StoreTx
from reviewer_app.persistence.store.rules import StoredRule


class RuleMethods(StoreReads):
    """Persistent rules: add, revoke, import, preview, and settle by them."""

    async def add_rule(self, rule: Rule, *, created_by: str | None = None, replaces: str | None = None) -> StoredRule:
        """Store a persistent rule (revoking ``replaces`` in the same transaction: an edit, audited as one);
        :class:`HITLConflict` when its id is taken."""

        def work(tx: StoreTx) -> None:
            if not tx.rules.add(rule, created_by=created_by or default_reviewer(), replaces=replaces):
                raise HITLConflict(f"a rule with id {rule.id!r} already exists")

        await self.write(work)
        return next(entry for entry in await self.list_rules(include_inactive=True) if entry.rule.id == rule.id)

    async def revoke_rule(self, rule_id: str, *, revoked_by: str | None = None) -> bool:
        """Revoke a rule (it stays on the record; the revocation is audited); False when unknown or already revoked."""
        who = revoked_by or default_reviewer()
        return await self.write(lambda tx: tx.rules.revoke(rule_id, revoked_by=who))

    async def import_rules(self, rules: Sequence[Rule], *, created_by: str | None = None) -> list[bool]:
        """Add several rules in one transaction; per rule, False when its id existed already (left unchanged)."""
        who = created_by or default_reviewer()
        return await self.write(lambda tx: [tx.rules.add(rule, created_by=who) for rule in rules])

    async def active_rules(self) -> list[Rule]:
        return [entry.rule for entry in await self.list_rules()]

    async def preview_rule(
        self,
        rule: Rule,
        *,
        statuses: Sequence[str] | None = None,
        page_size: int = 500,
        limit: int = 200,
        max_scanned: int = 100_000,
    ) -> list[HITLRecord]:
        """The past and pending requests ``rule`` would have decided, newest first.

        Requests are read a page at a time (never all at once); at most ``limit`` matches are returned and at
        most ``max_scanned`` requests read. An allow rule previews what it would settle: a high-risk call is
        not listed for a wildcard allow, exactly as :func:`evaluate` would leave it to a human. ``statuses``:
        every status unless given.
        """
        wanted = tuple(statuses) if statuses is not None else tuple(status.value for status in HITLStatus)
        now = time.time()
        matches: list[HITLRecord] = []
        offset = 0
        while offset < max_scanned and len(matches) < limit:
            query = RequestQuery(statuses=wanted, limit=page_size, offset=offset, newest_first=True)
            page = await self.list_records(query)
            for record in page:
                call = call_of_record(record)
                if call is not None and evaluate([rule], call, now) is not None:
                    matches.append(record)
                    if len(matches) >= limit:
                        break
            if len(page) < page_size:
                break
            offset += page_size
        return matches

    async def prevailing_rules(self, rule: Rule, records: Iterable[HITLRecord]) -> dict[str, Verdict]:
        """For the records ``rule`` matches: ``hitl_id`` → the verdict of another rule in force that prevails over
        it (a deny or ask rule where ``rule`` allows, a deny where it asks). Absent: ``rule``'s effect stands."""
        in_force = await self.active_rules()
        now = time.time()
        held = {}
        for record in records:
            call = call_of_record(record)
            verdict = prevailing_verdict(rule, in_force, call, now) if call is not None else None
            if verdict is not None:
                held[str(record["hitl_id"])] = verdict
        return held

    async def settle_pending_by_rule(
        self, rule_id: str, *, limit: int = 1000, only: Collection[str] | None = None
    ) -> list[HITLRecord]:
        """Settle now the pending requests an allow or deny rule in force matches (the preview's "settle these").

        Each request is decided in its own compare-and-set transaction, by ``rule:<id>`` with its audit row and a
        hit: one a reviewer decided meanwhile keeps that decision. An ask rule settles nothing, and nor does a rule
        another deny or ask rule in force prevails over for that request (:func:`prevailing_verdict`). ``only``:
        settle no request outside these ids (the window settles exactly what its preview showed).
        :class:`HITLNotFound` when no rule with this id is in force.
        """
        rule = next((entry.rule for entry in await self.list_rules() if entry.rule.id == rule_id), None)
        if rule is None:
            raise HITLNotFound(f"no rule in force with id {rule_id!r}")
        if rule.effect == "ask":
            return []
        candidates = await self.preview_rule(rule, statuses=(HITLStatus.PENDING.value,), limit=limit)
        if only is not None:
            allowed = set(only)
            candidates = [record for record in candidates if record["hitl_id"] in allowed]

        def settle_one(tx: StoreTx, hitl_id: str) -> HITLRecord | None:
            current = tx.requests.get(hitl_id)
            if current is None or current["status"] != HITLStatus.PENDING.value:
                return None
            call = call_of_record(current)
            now = time.time()
            settled = settlement_for(call, rules=[rule], now=now) if call is not None else None
            if settled is None or not settled.settles:
                return None
            assert call is not None
            if prevailing_verdict(rule, tx.rules.active(now), call, now) is not None:
                return None  # another deny or ask rule in force covers it: the policy as a whole does not settle it
            decision = settled.decision(shown_arguments(current))
            assert decision.reviewer is not None
            decided = tx.requests.decide(
                hitl_id, decision.to_user_response(), reviewer=decision.reviewer, message=decision.message
            )
            tx.rules.record_hit(rule.id)
            return decided

        settled: list[HITLRecord] = []
        for record in candidates:
            hitl_id = str(record["hitl_id"])
            decided = await self.write(lambda tx, hitl_id=hitl_id: settle_one(tx, hitl_id))  # type: ignore[misc]
            if decided is not None:
                settled.append(decided)
        return settled

    async def settle_by_rules(
        self, request: NewRequest, call: PolicyCall, *, title: str | None = None
    ) -> HITLRecord | None:
        """Settle a new call by the persistent rules, on the record, or return None to ask a human.

        An allow or deny rule creates ``request`` already decided by ``rule:<id>`` (with its audit row and the
        rule's hit) in one transaction; an ask rule, no rule, or an existing request with this id give None.
        ``call`` is the call as the rules judge it; ``title`` names the run when it is new.
        """
        check_request(dataclasses.asdict(request))
        rules = await self.active_rules()  # a plain read first: most calls meet no rule and need no write lock
        first = settlement_for(call, rules=rules) if rules else None
        if first is None or first.verdict is None or not first.settles:
            return None

        def work(tx: StoreTx) -> HITLRecord | None:  # again under the write lock: a rule may have changed
            if tx.requests.get(request.hitl_id) is not None:
                return None
            now = time.time()
            rules = tx.rules.active(now)
            settled = settlement_for(call, rules=rules, now=now) if rules else None
            verdict = settled.verdict if settled is not None and settled.settles else None
            if verdict is None:
                return None
            tx.runs.ensure_for(request, workspace=call.cwd, prompt=title)
            arguments = request.data.get("arguments")
            return tx.rules.settle(request, verdict, arguments, ensure_parents=False)

        return await self.write(work)
