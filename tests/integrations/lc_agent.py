"""A LangChain v1 agent that runs offline: LangChain's fake chat model, scripted from the conversation.

The model asks for ``CALLS`` on the first turn and sums up the tool results on the next, so a restarted
process replays the same run. Each tool appends one line to ``log`` when it really runs.

Run as a process (the kill test): ``python -m tests.integrations.lc_agent DB CHECKPOINTS LOG start|resume``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import StructuredTool

from tests.integrations.lc_calls import CALLS

INTERRUPT_ON: dict[str, Any] = {
    "write_file": True,  # approve, edit, reject, respond
    "delete_file": {"allowed_decisions": ["approve", "reject"]},
}


class ScriptedChatModel(GenericFakeChatModel):
    """Tool calls first, then a summary of what the tools said."""

    calls: list[dict[str, Any]] = CALLS

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        if isinstance(messages[-1], ToolMessage):
            results = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
            reply = AIMessage(content="Done: " + " | ".join(results))
        else:
            reply = AIMessage(content="I will use my tools.", tool_calls=self.calls)
        return ChatResult(generations=[ChatGeneration(message=reply)])


def tools(log: Path) -> list[StructuredTool]:
    def run(name: str, args: dict[str, Any]) -> None:
        with log.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"tool": name, "args": args}) + "\n")

    def write_file(path: str, content: str) -> str:
        """Write text to a file."""
        run("write_file", {"path": path, "content": content})
        return f"wrote {path}"

    def delete_file(path: str) -> str:
        """Delete a file."""
        run("delete_file", {"path": path})
        return f"deleted {path}"

    return [StructuredTool.from_function(write_file), StructuredTool.from_function(delete_file)]


def build_agent(
    log: Path,
    checkpointer: Any,
    *,
    mode: str = "batched",
    calls: list[dict[str, Any]] | None = None,
    interrupt_on: dict[str, Any] | None = None,
) -> Any:
    model = ScriptedChatModel(messages=iter(()), calls=calls if calls is not None else CALLS)
    gates = interrupt_on or INTERRUPT_ON
    middleware = HumanInTheLoopMiddleware(interrupt_on=gates, interrupt_mode=mode)  # type: ignore[arg-type]
    return create_agent(model, tools=tools(log), middleware=[middleware], checkpointer=checkpointer)


def main() -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    from reviewer_app.integrations.langgraph import run_reviewed_sync

    db, checkpoints, log, step = sys.argv[1:5]
    config = {"configurable": {"thread_id": "kill-test"}}
    start = {"messages": [{"role": "user", "content": "Tidy my folder"}]}
    with SqliteSaver.from_conn_string(checkpoints) as saver:
        agent = build_agent(Path(log), saver)
        print("running", flush=True)
        final = run_reviewed_sync(agent, start if step == "start" else None, config, db=db)
    print(json.dumps({"final": str(final["messages"][-1].content)}), flush=True)


if __name__ == "__main__":
    main()
