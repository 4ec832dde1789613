"""LangGraph and LangChain v1 agents in Reviewer's inbox: every interrupt becomes requests, decisions resume it.

::

    from reviewer_app.integrations.langgraph import run_reviewed

    agent = create_agent(model, tools, middleware=[HumanInTheLoopMiddleware(...)], checkpointer=saver)
    final_state = await run_reviewed(agent, {"messages": [...]}, {"configurable": {"thread_id": "t1"}}, db=DB)

It runs the compiled graph like ``graph.ainvoke(input, config)``. Whenever the graph stops on interrupts, each
action becomes one request (``HumanInTheLoopMiddleware``'s batched ``action_requests``, its ``per_call``
``tool_approval`` interrupts, or any other ``interrupt(value)`` as a question); once every one is decided — in any
order, by any process — the graph resumes with ``Command(resume={interrupt_id: answer})``, until it ends.

Requests are keyed by thread and interrupt id, and the graph's own checkpointer holds its place: after the
process died, ``run_reviewed(graph, None, config, db=DB)`` finds the same requests, resumes at once with those
already decided, and never asks twice. LangGraph is imported by the graph the caller built, not here.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from reviewer_app.domain.decisions import DecisionKind
from reviewer_app.domain.hitl import HITLType
from reviewer_app.domain.runs import RunState
from reviewer_app.integrations.core import (
    Database,
    ExternalCall,
    Outcome,
    Said,
    ToolCalled,
    ToolReturned,
    TranscriptEntry,
    block_id_for,
    open_client,
    stable_id,
)
from reviewer_app.integrations.langchain_hitl import LANGCHAIN_TO_REVIEWER, langchain_decision, reviewer_kinds

AGENT = "langgraph"


async def run_reviewed(
    graph: Any,
    input: Any,
    config: Mapping[str, Any],
    *,
    db: Database,
    agent: str = AGENT,
    timeout: float | None = None,
) -> Any:
    """Run ``graph`` to its end with Reviewer deciding every interrupt; returns the final state's values.

    ``input=None`` continues the thread where it stands (after a restart). ``timeout`` bounds each wait for
    decisions (:class:`TimeoutError`; the requests stay in the inbox and a later call picks them up).
    """
    driver = _Driver(lambda value: graph.ainvoke(value, config), lambda: graph.aget_state(config))
    return await _run(graph, driver, input, config, db=db, agent=agent, timeout=timeout)


def run_reviewed_sync(
    graph: Any,
    input: Any,
    config: Mapping[str, Any],
    *,
    db: Database,
    agent: str = AGENT,
    timeout: float | None = None,
) -> Any:
    """:func:`run_reviewed` for graphs with a synchronous checkpointer (``SqliteSaver``) or sync-only nodes.

    The graph runs with ``invoke``/``get_state`` on a worker thread; call it where no event loop is running.
    """

    def in_thread(fn: Callable[[], Any]) -> Awaitable[Any]:
        return asyncio.to_thread(fn)

    driver = _Driver(
        lambda value: in_thread(lambda: graph.invoke(value, config)), lambda: in_thread(lambda: graph.get_state(config))
    )
    return asyncio.run(_run(graph, driver, input, config, db=db, agent=agent, timeout=timeout))


class _Driver:
    """The two graph calls the loop needs, async or on a thread."""

    def __init__(self, invoke: Callable[[Any], Awaitable[Any]], state: Callable[[], Awaitable[Any]]) -> None:
        self.invoke = invoke
        self.state = state


async def _run(
    graph: Any,
    driver: _Driver,
    input: Any,
    config: Mapping[str, Any],
    *,
    db: Database,
    agent: str,
    timeout: float | None,
) -> Any:
    from langgraph.types import Command

    thread_id = _thread_id(config)
    session_id = f"{agent}-{thread_id}"
    schemas = _tool_schemas(graph)
    async with open_client(db, agent=agent) as client:

        async def invoke(value: Any) -> None:
            try:
                await driver.invoke(value)
            except Exception as exc:
                _invocation_id, title, _ = _this_run(thread_id, _messages((await driver.state()).values))
                await client.register_run(session_id=session_id, invocation_id=_invocation_id, title=title)
                await client.finish_run(session_id, _invocation_id, RunState.FAILED, error=str(exc) or repr(exc))
                raise

        if input is not None:
            await invoke(input)
        else:
            snapshot = await driver.state()
            if not snapshot.interrupts and snapshot.next:
                await invoke(None)  # the process died between steps: carry on from the checkpoint
        while True:
            snapshot = await driver.state()
            messages = _messages(snapshot.values)
            invocation_id, title, run_messages = _this_run(thread_id, messages)
            await client.register_run(session_id=session_id, invocation_id=invocation_id, title=title)
            await client.narrate_transcript(session_id, invocation_id, _transcript(run_messages))
            interrupts = list(snapshot.interrupts)
            if not interrupts:
                await client.finish_run(session_id, invocation_id)
                return snapshot.values
            asks = [
                _Ask(interrupt, thread_id, session_id, invocation_id, title, agent, run_messages, schemas)
                for interrupt in interrupts
            ]
            outcomes = await client.review_batch([call for ask in asks for call in ask.calls], timeout=timeout)
            resume: dict[str, Any] = {}
            for ask in asks:
                resume[ask.interrupt.id] = ask.answer(outcomes[: len(ask.calls)])
                outcomes = outcomes[len(ask.calls) :]
            await invoke(Command(resume=resume))


class _Ask:
    """One interrupt as Reviewer requests, and the answer its decisions make."""

    def __init__(
        self,
        interrupt: Any,
        thread_id: str,
        session_id: str,
        invocation_id: str,
        title: str | None,
        agent: str,
        run_messages: Sequence[Any],
        schemas: Mapping[str, dict[str, Any]],
    ) -> None:
        self.interrupt = interrupt
        value = interrupt.value
        common: dict[str, Any] = {
            "agent": agent,
            "session_id": session_id,
            "invocation_id": invocation_id,
            "title": title,
            "metadata": {"thread_id": thread_id, "interrupt_id": interrupt.id},
        }
        if _is_batch(value):
            self.mode = "batched"
            actions = list(value["action_requests"])
            configs = list(value["review_configs"])
            call_ids = _call_ids_for(actions, run_messages)
            self.names = [str(action["name"]) for action in actions]
            self.allowed: list[list[str]] = []
            self.calls = []
            for index, action in enumerate(actions):
                review = _review_config(configs, index, self.names[index])
                allowed_here = [str(kind) for kind in review.get("allowed_decisions", ())]
                self.allowed.append(allowed_here)
                schema = review.get("args_schema") or schemas.get(self.names[index])
                self.calls.append(
                    _tool_call(
                        stable_id(AGENT, thread_id, interrupt.id, str(index)),
                        self.names[index],
                        action.get("args"),
                        call_ids[index],
                        action.get("description"),
                        schema,
                        allowed_here,
                        common,
                    )
                )
        elif _is_per_call(value):
            self.mode = "per_call"
            self.names = [str(value["name"])]
            response_schema = interrupt.response_schema if isinstance(interrupt.response_schema, dict) else {}
            allowed_here = _allowed_in_schema(response_schema) or ["approve", "edit", "reject", "respond"]
            self.allowed = [allowed_here]
            schema = _edit_args_schema(response_schema) or schemas.get(self.names[0])
            call = _tool_call(
                stable_id(AGENT, thread_id, interrupt.id),
                self.names[0],
                value.get("args"),
                str(value.get("tool_call_id") or "") or None,
                value.get("description"),
                schema,
                allowed_here,
                common,
            )
            self.calls = [call]
        else:
            self.mode = "question"
            self.names = []
            self.allowed = []
            self.calls = [
                ExternalCall(
                    hitl_id=stable_id(AGENT, thread_id, interrupt.id),
                    tool_name=None,
                    arguments=_question(value),
                    hitl_type=HITLType.ASK_USER.value,
                    **common,
                )
            ]

    def answer(self, outcomes: Sequence[Outcome]) -> Any:
        if self.mode == "batched":
            decisions = zip(outcomes, self.names, self.allowed, strict=True)
            return {"decisions": [langchain_decision(*decision) for decision in decisions]}
        if self.mode == "per_call":
            return langchain_decision(outcomes[0], self.names[0], self.allowed[0])
        outcome = outcomes[0]
        return outcome.message or "" if outcome.kind is DecisionKind.RESPOND else outcome.text_for_model()


def _tool_call(
    hitl_id: str,
    name: str,
    arguments: Any,
    tool_call_id: str | None,
    description: Any,
    schema: Any,
    allowed_here: Iterable[str],
    common: dict[str, Any],
) -> ExternalCall:
    kinds = reviewer_kinds(allowed_here)
    invocation_id = common["invocation_id"]
    return ExternalCall(
        hitl_id=hitl_id,
        tool_name=name,
        arguments=arguments if arguments is not None else {},
        tool_call_id=tool_call_id,
        description=str(description) if description else None,
        schema=schema if isinstance(schema, dict) else None,
        allowed_decisions=kinds,
        block_id=block_id_for(invocation_id, tool_call_id) if tool_call_id else None,
        **common,
    )


def _is_batch(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("action_requests"), list)
        and isinstance(value.get("review_configs"), list)
    )


def _is_per_call(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") == "tool_approval" and "name" in value and "args" in value


def _review_config(configs: list[Any], index: int, name: str) -> Mapping[str, Any]:
    """The review config of action ``index``: the middleware aligns them by position; others list one per name."""
    candidates = [configs[index]] if index < len(configs) else []
    for config in [*candidates, *configs]:
        if isinstance(config, dict) and config.get("action_name") == name:
            return {str(key): value for key, value in config.items()}
    return {}


def _allowed_in_schema(schema: Mapping[str, Any]) -> list[str]:
    """The decision types a per-call ``response_schema`` accepts (a tagged union, or one plain object)."""
    mapping = (schema.get("discriminator") or {}).get("mapping")
    if isinstance(mapping, dict):
        return [str(kind) for kind in mapping]
    const = ((schema.get("properties") or {}).get("type") or {}).get("const")
    return [str(const)] if const else []


def _edit_args_schema(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """The JSON schema an edit's ``args`` must match, lifted out of a per-call ``response_schema``."""
    defs = schema.get("$defs") or {}
    edited = defs.get("EditedAction") or {}
    args = (edited.get("properties") or {}).get("args")
    if not isinstance(args, dict):
        return None
    return {**args, "$defs": defs} if defs else dict(args)


def _tool_schemas(graph: Any) -> dict[str, dict[str, Any]]:
    """The argument schemas of the graph's tools (a ``ToolNode``'s), so edits are checked before they run."""
    schemas: dict[str, dict[str, Any]] = {}
    nodes = getattr(graph, "nodes", None)
    for node in nodes.values() if isinstance(nodes, dict) else ():
        tools = getattr(getattr(node, "bound", None), "tools_by_name", None)
        for name, tool in tools.items() if isinstance(tools, dict) else ():
            schema: Any = getattr(tool, "tool_call_schema", None)
            if isinstance(schema, dict):
                schemas[name] = schema
            elif schema is not None and hasattr(schema, "model_json_schema"):
                try:
                    schemas[name] = schema.model_json_schema()
                except Exception:  # a schema pydantic cannot render: edits are then checked when the tool runs
                    continue
    return schemas


def _question(value: Any) -> dict[str, Any]:
    """A plain ``interrupt(value)`` as the question the window shows, keeping the value itself."""
    question: Any = value
    options: Any = None
    if isinstance(value, dict):
        question = value.get("question") or value.get("prompt") or value.get("message")
        options = value.get("options")
        if not isinstance(question, str):
            question = json.dumps(value, ensure_ascii=False, default=str, indent=2)
    elif not isinstance(value, str):
        question = json.dumps(value, ensure_ascii=False, default=str)
    shown: dict[str, Any] = {"question": question, "value": value}
    if isinstance(options, list):
        shown["options"] = [str(option) for option in options]
    return shown


def _thread_id(config: Mapping[str, Any]) -> str:
    thread_id = (config.get("configurable") or {}).get("thread_id")
    if thread_id in (None, ""):
        raise ValueError('run_reviewed needs config={"configurable": {"thread_id": ...}} and a checkpointer')
    return str(thread_id)


def _messages(values: Any) -> list[Any]:
    messages = values.get("messages") if isinstance(values, dict) else None
    return list(messages) if isinstance(messages, list) else []


def _this_run(thread_id: str, messages: Sequence[Any]) -> tuple[str, str | None, list[Any]]:
    """The run is the thread's latest human turn: its id (stable across restarts), title and messages."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if getattr(message, "type", None) == "human":
            key = str(getattr(message, "id", None) or index)
            title = _text(message) or None
            return stable_id(AGENT, thread_id, key), title, list(messages[index + 1 :])
    return stable_id(AGENT, thread_id), None, list(messages)


def _transcript(messages: Iterable[Any]) -> list[TranscriptEntry]:
    entries: list[TranscriptEntry] = []
    for position, message in enumerate(messages):
        kind = getattr(message, "type", None)
        if kind == "ai":
            entries.append(Said(f"text:{getattr(message, 'id', None) or position}", _text(message)))
            for call in getattr(message, "tool_calls", None) or ():
                if call.get("id"):
                    entries.append(ToolCalled(str(call["id"]), str(call.get("name")), call.get("args")))
        elif kind == "tool" and getattr(message, "tool_call_id", None):
            ok = getattr(message, "status", "success") != "error"
            entries.append(ToolReturned(str(message.tool_call_id), _text(message), ok))
    return entries


def _call_ids_for(actions: Sequence[Any], run_messages: Sequence[Any]) -> list[str | None]:
    """The model's tool-call ids of a batch's actions: the latest AI message's calls, matched by name and args."""
    calls: list[dict[str, Any]] = []
    for message in reversed(run_messages):
        if getattr(message, "type", None) == "ai":
            calls = [dict(call) for call in getattr(message, "tool_calls", None) or ()]
            break
    ids: list[str | None] = []
    used: set[int] = set()
    for action in actions:
        found = None
        for index, call in enumerate(calls):
            if index not in used and call.get("name") == action.get("name") and call.get("args") == action.get("args"):
                used.add(index)
                found = str(call.get("id")) if call.get("id") else None
                break
        ids.append(found)
    return ids


def _text(message: Any) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            part if isinstance(part, str) else part.get("text", "") for part in content if isinstance(part, str | dict)
        ]
        return "".join(str(part) for part in parts)
    return str(content)


__all__ = ["LANGCHAIN_TO_REVIEWER", "run_reviewed", "run_reviewed_sync"]
