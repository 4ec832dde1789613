"""Pydantic AI agents in Reviewer's inbox: deferred tool calls become requests, decisions become results.

::

    from reviewer_app.integrations.pydantic_ai import resume_reviewed, reviewer_handler, run_reviewed

    result = await run_reviewed(agent, "Tidy my folder", db=DB, session_id="tidy-1")   # durable
    result = await agent.run("Tidy my folder", capabilities=[reviewer_handler(db=DB)])  # inline, in-process

Tools that need approval (``requires_approval=True`` or ``ApprovalRequired``) and questions
(``CallDeferred(kind="question")``) come out of a run as ``DeferredToolRequests``. Each approval becomes a tool
request and each question an ask-user request; decisions go back as ``DeferredToolResults``: approve → ``True``,
edit → ``ToolApproved(override_args=…)`` (checked against the tool's schema first), reject and steer →
``ToolDenied(message)``, an answer → the question's result. A pause that includes calls to run elsewhere
(``kind="external"``) is returned to the caller as it is (``result.output`` is the ``DeferredToolRequests``).

:func:`run_reviewed` stores the run's messages with its requests (``tool_state``), so after a restart
:func:`resume_reviewed` continues without asking again. :func:`reviewer_handler` is Pydantic AI's
``HandleDeferredToolCalls`` capability: it resolves calls inside one run and survives no restart (the run's
other tool results of that step are not in its context to save). Pydantic AI is imported when used.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from reviewer_app.domain.decisions import DecisionKind
from reviewer_app.domain.hitl import HITLType
from reviewer_app.domain.runs import RunState
from reviewer_app.integrations.core import (
    TOOL_DECISIONS,
    Database,
    ExternalCall,
    Outcome,
    ReviewClient,
    Said,
    ToolCalled,
    ToolReturned,
    TranscriptEntry,
    block_id_for,
    new_session_id,
    open_client,
    saved_state,
    stable_id,
)

HOST = "pydantic-ai"
ALLOWED = TOOL_DECISIONS
"""What a reviewer may decide on an approval: Pydantic AI has no "answer instead of the tool" for approvals."""


async def run_reviewed(
    agent: Any,
    prompt: Any,
    *,
    db: Database,
    session_id: str | None = None,
    timeout: float | None = None,
    **run_kwargs: Any,
) -> Any:
    """``agent.run(prompt, **run_kwargs)`` with every deferred approval and question decided in Reviewer.

    Returns the final ``AgentRunResult``. ``session_id`` names the Reviewer session (reuse it with
    :func:`resume_reviewed` after a restart; default: a new one).
    """
    session_id = session_id or new_session_id(HOST)
    async with open_client(db, agent=_agent_name(agent)) as client:
        title = prompt if isinstance(prompt, str) else None
        invocation_id, round_ = await client.start_paused_run(session_id, HOST, title=title)
        loop = _Loop(client, agent, session_id, invocation_id, round_, timeout, run_kwargs)
        return await loop.until_done(await loop.step(prompt, None, None))


async def resume_reviewed(
    agent: Any, *, db: Database, session_id: str, timeout: float | None = None, **run_kwargs: Any
) -> Any:
    """Continue the session's paused run from its saved messages: decided requests apply at once.

    Raises :class:`LookupError` when the session has no paused run (it finished, or never stopped).
    """
    from pydantic_ai.messages import ModelMessagesTypeAdapter, ToolCallPart

    async with open_client(db, agent=_agent_name(agent)) as client:
        batch = await client.paused_batch(session_id, HOST, list, "Pydantic AI")
        messages = ModelMessagesTypeAdapter.validate_python(batch.state)
        approvals: list[Any] = []
        questions: list[Any] = []
        for record in batch.records:  # the pause's deferred calls, as its requests recorded them
            metadata = record.get("metadata") or {}
            part = ToolCallPart(str(metadata.get("tool")), metadata.get("args"), str(record["tool_call_id"]))
            (questions if metadata.get("deferred") == "question" else approvals).append(part)
        loop = _Loop(client, agent, session_id, batch.invocation_id, batch.round, timeout, run_kwargs)
        return await loop.until_done(await loop.answer(messages, approvals, questions))


def reviewer_handler(*, db: Database, session_id: str | None = None, timeout: float | None = None) -> Any:
    """Pydantic AI's ``HandleDeferredToolCalls`` capability, resolving approvals and questions in Reviewer.

    ``agent.run(..., capabilities=[reviewer_handler(db=DB)])``. Calls run elsewhere are declined, so they
    still come out as ``DeferredToolRequests`` (or go to the next handler).
    """
    from pydantic_ai.capabilities import HandleDeferredToolCalls

    async def handle(ctx: Any, requests: Any) -> Any:
        session = session_id or f"{HOST}-{ctx.conversation_id or ctx.run_id}"
        invocation_id = stable_id(HOST, session, "run", str(ctx.run_id))
        agent = ctx.agent
        async with open_client(db, agent=_agent_name(agent)) as client:
            await client.register_run(session_id=session, invocation_id=invocation_id, title=_title(ctx.prompt))
            await client.narrate_transcript(session, invocation_id, _transcript(ctx.messages, set()))
            approvals, questions = _deferred(requests)
            calls = _calls(approvals, questions, agent, session, invocation_id, None, None)
            if not calls:
                return None
            outcomes = await client.review_batch(calls, timeout=timeout)
            results, _not_run = _results(calls, outcomes)
            return results

    return HandleDeferredToolCalls(handler=handle)


class _Loop:
    """Run, ask about what the run deferred, answer, run on — until the output is not deferred any more."""

    def __init__(
        self,
        client: ReviewClient,
        agent: Any,
        session_id: str,
        invocation_id: str,
        round_: int,
        timeout: float | None,
        run_kwargs: dict[str, Any],
    ) -> None:
        from pydantic_ai.tools import DeferredToolRequests

        self.client, self.agent, self.session_id, self.invocation_id = client, agent, session_id, invocation_id
        self.round, self.timeout = round_, timeout
        output_type = run_kwargs.pop("output_type", None) or agent.output_type
        outputs = list(output_type) if isinstance(output_type, list) else [output_type]
        self.run_kwargs = {**run_kwargs, "output_type": [*outputs, DeferredToolRequests]}
        self.not_run: set[str] = set()

    async def step(self, prompt: Any, messages: Sequence[Any] | None, results: Any) -> Any:
        try:
            return await self.agent.run(
                prompt, message_history=messages, deferred_tool_results=results, **self.run_kwargs
            )
        except Exception as exc:
            error = str(exc) or type(exc).__name__
            await self.client.finish_run(self.session_id, self.invocation_id, RunState.FAILED, error=error)
            raise

    async def until_done(self, result: Any) -> Any:
        from pydantic_ai.tools import DeferredToolRequests

        while True:
            messages = result.all_messages()
            transcript = _transcript(messages, self.not_run)
            await self.client.narrate_transcript(self.session_id, self.invocation_id, transcript)
            if not isinstance(result.output, DeferredToolRequests):
                await self.client.finish_run(self.session_id, self.invocation_id)
                return result
            approvals, questions = _deferred(result.output)
            if len(approvals) + len(questions) < len(result.output.approvals) + len(result.output.calls):
                return result  # calls to run elsewhere: the whole pause goes back to the caller, nothing is asked
            result = await self.answer(messages, approvals, questions)

    async def answer(self, messages: Sequence[Any], approvals: list[Any], questions: list[Any]) -> Any:
        """Ask about one pause's deferred calls (saving the messages with them) and run on with the decisions."""
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        state = ModelMessagesTypeAdapter.dump_python(list(messages), mode="json")
        calls = _calls(approvals, questions, self.agent, self.session_id, self.invocation_id, self.round, state)
        outcomes = await self.client.review_batch(calls, timeout=self.timeout)
        results, not_run = _results(calls, outcomes)
        self.not_run |= not_run
        self.round += 1
        return await self.step(None, messages, results)


def _deferred(requests: Any) -> tuple[list[Any], list[Any]]:
    """The approvals and the questions of a ``DeferredToolRequests`` (calls run elsewhere are not ours)."""
    questions = [part for part in requests.calls if requests.kind(part.tool_call_id) == "question"]
    return list(requests.approvals), questions


def _calls(
    approvals: Sequence[Any],
    questions: Sequence[Any],
    agent: Any,
    session_id: str,
    invocation_id: str,
    round_: int | None,
    state: Any,
) -> list[ExternalCall]:
    """One request per approval and per question, in the order Pydantic AI listed them."""
    pending = [(part, "approval") for part in approvals] + [(part, "question") for part in questions]
    calls = []
    for index, (part, kind) in enumerate(pending):
        arguments = part.args_as_dict()
        common: dict[str, Any] = {
            "hitl_id": stable_id(HOST, session_id, part.tool_call_id),
            "agent": _agent_name(agent),
            "session_id": session_id,
            "invocation_id": invocation_id,
            "tool_call_id": part.tool_call_id,
            "block_id": block_id_for(invocation_id, part.tool_call_id),
            "metadata": {"framework": HOST, "deferred": kind, "tool": part.tool_name, "args": arguments},
            "tool_state": saved_state(HOST, round_, index, state) if round_ is not None else None,
        }
        if kind == "approval":
            schema = _tool_schema(agent, part.tool_name)
            calls.append(
                ExternalCall(
                    tool_name=part.tool_name, arguments=arguments, schema=schema, allowed_decisions=ALLOWED, **common
                )
            )
        else:
            question = arguments.get("question") or arguments.get("prompt") or part.tool_name
            shown = {**arguments, "question": str(question)}
            calls.append(ExternalCall(tool_name=None, arguments=shown, hitl_type=HITLType.ASK_USER.value, **common))
    return calls


def _results(calls: Sequence[ExternalCall], outcomes: Sequence[Outcome]) -> tuple[Any, set[str]]:
    """Reviewer's decisions as ``DeferredToolResults``, and the calls that will not run."""
    from pydantic_ai.tools import DeferredToolResults, ToolApproved, ToolDenied

    approvals: dict[str, Any] = {}
    answers: dict[str, Any] = {}
    not_run: set[str] = set()
    for call, outcome in zip(calls, outcomes, strict=True):
        call_id = str(call.tool_call_id)
        if call.hitl_type == HITLType.ASK_USER.value:
            answers[call_id] = outcome.message if outcome.kind is DecisionKind.RESPOND else outcome.text_for_model()
        elif outcome.kind is DecisionKind.EDIT:
            approvals[call_id] = ToolApproved(override_args=outcome.arguments)
        elif outcome.runs_tool:
            approvals[call_id] = True
        else:
            approvals[call_id] = ToolDenied(outcome.text_for_model() or "The tool call was denied.")
            not_run.add(call_id)
    return DeferredToolResults(approvals=approvals, calls=answers), not_run


def _tool_schema(agent: Any, name: str) -> dict[str, Any] | None:
    """The tool's parameter schema from the agent's function toolsets, so an edit is checked before it runs."""
    for toolset in getattr(agent, "toolsets", None) or ():
        tools = getattr(toolset, "tools", None)
        tool = tools.get(name) if isinstance(tools, dict) else None
        schema = getattr(getattr(tool, "tool_def", None), "parameters_json_schema", None)
        if isinstance(schema, dict):
            return schema
    return None


def _transcript(messages: Iterable[Any], not_run: set[str]) -> list[TranscriptEntry]:
    entries: list[TranscriptEntry] = []
    for index, message in enumerate(messages):
        for position, part in enumerate(getattr(message, "parts", ()) or ()):
            kind = getattr(part, "part_kind", None)
            if kind == "text":
                entries.append(Said(f"text:{index}:{position}", str(part.content)))
            elif kind == "tool-call":
                entries.append(ToolCalled(part.tool_call_id, part.tool_name, part.args_as_dict()))
            elif kind == "tool-return":
                ok = part.tool_call_id not in not_run
                entries.append(ToolReturned(part.tool_call_id, part.model_response_str(), ok))
            elif kind == "retry-prompt" and getattr(part, "tool_call_id", None):
                entries.append(ToolReturned(part.tool_call_id, part.model_response(), False))
    return entries


def _title(prompt: Any) -> str | None:
    return prompt if isinstance(prompt, str) else None


def _agent_name(agent: Any) -> str:
    return str(getattr(agent, "name", None) or HOST)


__all__ = ["ALLOWED", "resume_reviewed", "reviewer_handler", "run_reviewed"]
