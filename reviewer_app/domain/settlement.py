"""What settles a call: the one place that says whether a rule, ``--allow-tools`` or a waiver decides it, and why.

Why: the runtime's gate, the hooks (their standard-library fast path and their backend path), the library's
``ReviewClient`` and the MCP proxy all ask the same question of a call; the order of the sources, which of them
wins and the words the record and the agent are given live here, once. Plain Python, and cheap to import: the
rules engine and the waiver matcher are loaded only when a rule or waiver in force could concern the call, so the
hook's fast path pays for no parser it does not need.

Order: the persistent rules first (:func:`reviewer_app.domain.rules.evaluate`: deny > ask > allow; an ``ask``
settles nothing and stops the search: a human decides whatever else would waive the call); then ``allow_tools``
(only what the operator wrote into a hook command), a wildcard that never settles a high-risk or flagged call;
then the session's approve-for-session waivers (:meth:`SessionRule.matches`).

Public API:

- ``Settlement(effect, decided_by, message, rule_id=None, verdict=None, waiver=None)``: ``settles``, ``allow``,
  ``decision(arguments)``; ``Settlement.by_rule(verdict)``, ``Settlement.by_waiver(id, waiver)``,
  ``Settlement.by_allow_tools(tool)``
- ``settlement_for(call, *, rules=(), waivers=(), allow_tools=(), now=None, risk=None) -> Settlement | None``
- ``may_concern(pattern, tool_name) -> bool``: a stored rule's pattern text could match a call of this tool
  (read before the rule is built, so a rule about another tool costs nothing)
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.lean_rules import rule_settlement
from reviewer_app.domain.lean_settlement import ALLOW_TOOLS, allow_tools_settlement, may_concern, waiver_settlement

if TYPE_CHECKING:
    from reviewer_app.domain.risk import Risk
    from reviewer_app.domain.rules import Rule, Verdict
    from reviewer_app.domain.toolcall import ToolCall
    from reviewer_app.domain.waivers import SessionRule

__all__ = ["ALLOW_TOOLS", "Settlement", "may_concern", "settlement_for"]

SettlementEffect = Literal["allow", "ask", "deny"]


@dataclass(frozen=True, slots=True)
class Settlement:
    """Who decides a call without a reviewer, how, and the reason the record and the agent are given.

    ``effect`` ``ask`` settles nothing: a rule sends the call to a human. ``rule_id``: the persistent rule whose
    hit is counted; ``verdict``: the rules engine's verdict when a persistent rule decided; ``waiver``: the waiver
    (its row id and itself) when one did.
    """

    effect: SettlementEffect
    decided_by: str
    message: str
    rule_id: str | None = None
    verdict: Verdict | None = None
    waiver: tuple[int, SessionRule] | None = None

    @property
    def settles(self) -> bool:
        return self.effect != "ask"

    @property
    def allow(self) -> bool:
        return self.effect == "allow"

    def decision(self, arguments: Any) -> Decision:
        """The decision this settlement records (approve or reject), naming the arguments it judged."""
        if not self.settles:
            raise ValueError("an ask rule decides nothing: the call goes to a human")
        kind = DecisionKind.APPROVE if self.allow else DecisionKind.REJECT
        return Decision(kind, message=self.message, args_sha256=args_digest(arguments), reviewer=self.decided_by)

    @classmethod
    def by_rule(cls, verdict: Verdict) -> Settlement:
        """A persistent rule's verdict: "allowed by rule <id>: <pattern> (<note>)"."""
        rule = verdict.rule
        decided_by, text = rule_settlement(verdict.effect, rule.id, rule.pattern, rule.note)
        return cls(verdict.effect, decided_by, text, rule.id, verdict)

    @classmethod
    def by_waiver(cls, waiver_id: int, waiver: SessionRule) -> Settlement:
        """An approve-for-session waiver of the call's session, decided by ``session-rule:<id>``."""
        decided_by, message = waiver_settlement(waiver_id, waiver.describe())
        return cls("allow", decided_by, message, waiver=(waiver_id, waiver))

    @classmethod
    def by_allow_tools(cls, tool_name: str) -> Settlement:
        decided_by, message = allow_tools_settlement(tool_name)
        return cls("allow", decided_by, message)


def settlement_for(
    call: ToolCall,
    *,
    rules: Sequence[Rule] = (),
    waivers: Iterable[tuple[int, SessionRule]] = (),
    allow_tools: Iterable[str] = (),
    now: float | None = None,
    risk: Risk | None = None,
) -> Settlement | None:
    """What settles ``call``, or None when nothing does and a reviewer is asked (see the module docstring).

    An ``ask`` rule comes back as a Settlement whose ``settles`` is False (the caller asks a human, and may say
    which rule sent the call there). ``risk``: the call's risk when the caller has it already.
    """
    if rules:
        from reviewer_app.domain.rules import evaluate

        verdict = evaluate(rules, call, time.time() if now is None else now, risk=risk)
        if verdict is not None:  # an ask rule stops here too: no waiver or --allow-tools overrides it
            return Settlement.by_rule(verdict)
    if call.tool_name in set(allow_tools):
        from reviewer_app.domain.rules import wildcard_may_settle

        if wildcard_may_settle(call, risk=risk):
            return Settlement.by_allow_tools(call.tool_name)
    for waiver_id, waiver in waivers:
        if waiver.matches(call.tool_name, call.arguments, cwd=call.cwd, metadata=dict(call.metadata)):
            return Settlement.by_waiver(waiver_id, waiver)
    return None
