"""A Pydantic AI agent that runs offline: a ``FunctionModel`` that answers from the conversation.

First turn: the calls in ``calls`` (write and delete need approval; ``ask_user`` defers a question). Next turn:
a summary of the tool returns. Each tool appends one line to ``log`` when it really runs.

Run as a process (the kill test): ``python -m tests.integrations.pa_agent DB LOG start|resume``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.exceptions import CallDeferred
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

CALLS = [
    ("write_file", {"path": "notes.txt", "content": "hello"}, "call_write"),
    ("delete_file", {"path": "old.txt"}, "call_delete"),
]
QUESTION = ("ask_user", {"question": "Which folder?"}, "call_ask")
EXTERNAL = ("run_elsewhere", {"job": "backup"}, "call_external")


def scripted(calls: list[tuple[str, dict[str, Any], str]]) -> FunctionModel:
    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        returns = (
            [p for p in last.parts if p.part_kind in ("tool-return", "retry-prompt")]
            if isinstance(last, ModelRequest)
            else []
        )
        if returns:
            summary = " | ".join(
                str(p.model_response_str() if p.part_kind == "tool-return" else p.content) for p in returns
            )
            return ModelResponse(parts=[TextPart(f"Done: {summary}")])
        return ModelResponse(parts=[ToolCallPart(name, args, call_id) for name, args, call_id in calls])

    return FunctionModel(reply)


def build_agent(log: Path, calls: list[tuple[str, dict[str, Any], str]] | None = None) -> Agent[None, str]:
    agent = Agent(scripted(CALLS if calls is None else calls), name="tidy-agent")

    def record(name: str, args: dict[str, Any]) -> None:
        with log.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"tool": name, "args": args}) + "\n")

    @agent.tool_plain(requires_approval=True)
    def write_file(path: str, content: str) -> str:
        """Write text to a file."""
        record("write_file", {"path": path, "content": content})
        return f"wrote {path}"

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        record("delete_file", {"path": path})
        return f"deleted {path}"

    @agent.tool_plain
    def ask_user(question: str) -> str:
        """Ask the operator a question."""
        raise CallDeferred(kind="question")

    @agent.tool_plain
    def run_elsewhere(job: str) -> str:
        """A job another system runs."""
        raise CallDeferred()

    return agent


def main() -> None:
    from reviewer_app.integrations.pydantic_ai import resume_reviewed, run_reviewed

    db, log, step = sys.argv[1:4]
    agent = build_agent(Path(log))
    print("running", flush=True)
    if step == "start":
        result = asyncio.run(run_reviewed(agent, "Tidy my folder", db=db, session_id="kill-test"))
    else:
        result = asyncio.run(resume_reviewed(agent, db=db, session_id="kill-test"))
    print(json.dumps({"final": str(result.output)}), flush=True)


if __name__ == "__main__":
    main()
