"""One request's preview: why it reached a person, what its command does, what it will touch.

Why: the window, ``reviewer-app why`` and the benchmark need the same three answers for a request. The
database part (the record, the rules, the session's waivers and workspace) is read in one call on the backend's
DB thread (``SQLHITLBackend.preview_inputs``, ``persistence.preview_inputs.read_inputs``); the rest
(:func:`preview_inputs`) reads only the disk and may run there too or on any worker thread. The preview is bound
to the SHA-256 of the arguments it was computed for: an
edit (a new hash) means a new preview.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from reviewer_app.domain.decisions import args_digest
from reviewer_app.domain.explain import Segment, explain_command
from reviewer_app.domain.hitl import HITLType, shown_arguments
from reviewer_app.domain.risk import Risk, assess, with_secrets
from reviewer_app.domain.rule_outcome import call_of_record
from reviewer_app.domain.toolcall import ToolCall, command_of, is_shell_tool
from reviewer_app.domain.why import PreviewInputs, why_asked
from reviewer_app.persistence.preview_inputs import read_inputs
from reviewer_app.preview.effects import DEFAULT_BUDGET_S, Effects, compute_effects

AGENT_WORDS = "the agent's own words (not checked)"
QUESTION_TOUCHES = "Nothing: a question runs no tool. Your answer goes back to the agent as text."
NOTHING_NAMED = "Nothing Reviewer can name."


@dataclass
class RequestPreview:
    """The three answers for one request, computed for the arguments hashing to ``args_sha256``."""

    hitl_id: str
    args_sha256: str
    why: tuple[str, ...]
    segments: tuple[Segment, ...]
    effects: Effects
    risk: Risk | None
    description: str | None = None
    workspace: str | None = None
    computed_at: float = field(default_factory=time.time)
    question: bool = False
    """A question (``ask_user``): a person's answer goes back to the agent as text; no tool runs on it."""

    def touches(self) -> str | None:
        """What it will touch in words when nothing is listed: the detail pane's sentence and ``why``'s alike."""
        if not self.effects.empty():
            return None
        return QUESTION_TOUCHES if self.question else NOTHING_NAMED

    def to_dict(self) -> dict[str, Any]:
        return {
            "hitl_id": self.hitl_id,
            "args_sha256": self.args_sha256,
            "why": list(self.why),
            "segments": [segment.to_dict() for segment in self.segments],
            "description": {"text": self.description, "label": AGENT_WORDS} if self.description else None,
            "effects": self.effects.to_dict(),
            "question": self.question,
            "touches": self.touches(),
            "workspace": self.workspace,
            "computed_at": self.computed_at,
        }


def preview_inputs(
    inputs: PreviewInputs,
    *,
    now: float | None = None,
    budget_s: float = DEFAULT_BUDGET_S,
    secrets: tuple[str, ...] | None = None,
) -> RequestPreview:
    """Why, what and effects for the request in ``inputs`` (reads the disk, never the database).

    ``secrets``: the secret scan's result when the caller already has it for these arguments (the detail pane
    scans them first), so the scan does not run twice.
    """
    now = time.time() if now is None else now
    record = inputs.record
    digest = args_digest(shown_arguments(record))
    call = call_of_record(record)
    if call is not None and call.cwd is None and inputs.workspace is not None:
        call = ToolCall(call.tool_name, call.arguments, call.agent, call.session_id, inputs.workspace, call.metadata)
    risk = None
    if call is not None:
        risk = assess(call) if secrets is None else with_secrets(assess(call, scan_secrets=False), secrets)
    why = why_asked(
        record,
        rules=inputs.rules,
        expired_rules=inputs.expired_rules,
        session_rules=inputs.session_rules,
        risk=risk,
        now=now,
    )
    command = command_of(call.tool_name, call.arguments) if call is not None and is_shell_tool(call.tool_name) else None
    segments = explain_command(command) if command is not None else ()
    effects = compute_effects(call, budget_s=budget_s, now=now) if call is not None else Effects(computed_at=now)
    data = record.get("data") if isinstance(record.get("data"), dict) else {}
    description = data.get("description") if isinstance(data, dict) else None
    if not isinstance(description, str) and call is not None:
        description = call.arguments.get("description") if isinstance(call.arguments.get("description"), str) else None
    return RequestPreview(
        hitl_id=str(record["hitl_id"]),
        args_sha256=digest,
        why=why,
        segments=segments,
        effects=effects,
        risk=risk,
        description=description if isinstance(description, str) else None,
        workspace=call.cwd if call is not None else inputs.workspace,
        computed_at=now,
        question=record.get("hitl_type") == HITLType.ASK_USER.value,
    )


def preview_request(
    store: Any, hitl_id: str, *, now: float | None = None, budget_s: float = DEFAULT_BUDGET_S
) -> RequestPreview | None:
    """Read and compute in one call (``reviewer-app why``, the benchmark: on the backend's DB thread)."""
    inputs = read_inputs(store, hitl_id, now=now)
    return None if inputs is None else preview_inputs(inputs, now=now, budget_s=budget_s)
