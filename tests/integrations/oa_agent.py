"""An OpenAI Agents SDK agent that runs offline: a ``Model`` that answers from the conversation.

First turn: two function calls (write, then delete), both needing approval. Next turn: a summary of the tool
outputs. Each tool appends one line to ``log`` when it really runs.

Run as a process (the kill test): ``python -m tests.integrations.oa_agent DB LOG start|resume``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agents import Agent, Model, ModelResponse, Usage, function_tool, set_tracing_disabled
from agents.testing import assistant_message, function_call

set_tracing_disabled(True)  # nothing leaves the machine

CALLS = [
    ("write_file", {"path": "notes.txt", "content": "hello"}, "call_write"),
    ("delete_file", {"path": "old.txt"}, "call_delete"),
]


class ConversationModel(Model):
    """Asks for the tools, then sums up what they returned; the same replies after a restart."""

    def __init__(self, calls: list[tuple[str, dict[str, Any], str]] | None = None) -> None:
        self.calls = CALLS if calls is None else calls

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        items = input if isinstance(input, list) else [{"role": "user", "content": input}]
        outputs = [
            str(i.get("output")) for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"
        ]
        if outputs:
            reply = [assistant_message("Done: " + " | ".join(outputs), item_id=f"msg-{len(items)}")]
        else:
            reply = [function_call(name, args, call_id=call_id) for name, args, call_id in self.calls]
        return ModelResponse(output=reply, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("this test model does not stream")


def tools(log: Path) -> list[Any]:
    def record(name: str, args: dict[str, Any]) -> None:
        with log.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"tool": name, "args": args}) + "\n")

    @function_tool(needs_approval=True)
    def write_file(path: str, content: str) -> str:
        """Write text to a file."""
        record("write_file", {"path": path, "content": content})
        return f"wrote {path}"

    @function_tool(needs_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        record("delete_file", {"path": path})
        return f"deleted {path}"

    return [write_file, delete_file]


def build_agent(log: Path, calls: list[tuple[str, dict[str, Any], str]] | None = None) -> Agent[Any]:
    return Agent(name="tidy-agent", instructions="Tidy the folder.", model=ConversationModel(calls), tools=tools(log))


def main() -> None:
    from reviewer_app.integrations.openai_agents import resume_reviewed, run_reviewed

    db, log, step = sys.argv[1:4]
    agent = build_agent(Path(log))
    print("running", flush=True)
    if step == "start":
        result = asyncio.run(run_reviewed(agent, "Tidy my folder", db=db, session_id="kill-test"))
    else:
        result = asyncio.run(resume_reviewed(agent, db=db, session_id="kill-test"))
    print(json.dumps({"final": str(result.final_output)}), flush=True)


if __name__ == "__main__":
    main()
