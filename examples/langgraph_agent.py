"""A LangChain v1 agent (LangGraph underneath) whose tool calls wait for a reviewer in Reviewer.

Runs offline: LangChain's fake chat model stands in for a real one. Start it, then decide in the window or::

    python examples/langgraph_agent.py --db reviews.db --workdir /tmp/scratch
    reviewer-app pending --db reviews.db
    reviewer-app decide <id> approve --db reviews.db        # or edit --args '{...}', reject, steer, respond

With a durable checkpointer (``SqliteSaver``) instead of ``InMemorySaver``, a killed process picks up the same
requests when run again with ``input=None``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver

from reviewer_app.config import resolve_database
from reviewer_app.integrations.langgraph import run_reviewed_sync


class OfflineModel(GenericFakeChatModel):
    """Asks to write a note, then reports what the tool said: what a real model would do here."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> OfflineModel:
        return self

    def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        if isinstance(messages[-1], ToolMessage):
            result = str(messages[-1].content).splitlines()[-1]  # after LangChain's note when a reviewer edited
            reply = AIMessage(content=f"Finished: {result}")
        else:
            call = {"name": "write_note", "args": {"path": "notes.txt", "text": "Buy milk.\n"}, "id": "call_1"}
            reply = AIMessage(content="I will write the note.", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default=None, help="database path or URL (default: $REVIEWER_DB or the user's)")
    parser.add_argument("--workdir", type=Path, default=Path.cwd() / "agent-scratch")
    parser.add_argument("--thread", default="langgraph-demo", help="the LangGraph thread (Reviewer session)")
    args = parser.parse_args()

    def write_note(path: str, text: str) -> str:
        """Write a note into the agent's folder."""
        target = (args.workdir / path).resolve()
        if not target.is_relative_to(args.workdir.resolve()):
            return f"refused: {path} is outside the folder"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return f"wrote {path}"

    agent = create_agent(
        OfflineModel(messages=iter(())),
        tools=[write_note],
        middleware=[HumanInTheLoopMiddleware(interrupt_on={"write_note": True})],
        checkpointer=InMemorySaver(),
    )
    start = {"messages": [{"role": "user", "content": "Note that I need milk"}]}
    final = run_reviewed_sync(agent, start, {"configurable": {"thread_id": args.thread}}, db=resolve_database(args.db))
    print(f"agent: {final['messages'][-1].content}")


if __name__ == "__main__":
    main()
