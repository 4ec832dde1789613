"""A LangChain agent on the langstage task board (langgraph-stream-parser / langstage-core) reviewed in Reviewer.

Runs offline: a scripted chat model stands in for a real one. Start it, then decide in the window or with
``reviewer-app decide <id> approve|edit|reject|steer|respond --db reviews.db``::

    python examples/langstage_agent.py --db reviews.db --workdir /tmp/notes

The task shows on Reviewer's Runs board as it moves queued → running → waiting → done; each pause of
``HumanInTheLoopMiddleware`` files one request per action and the task resumes once all are decided. Prints, as
JSON, the notes written, every tool result the model read and the task's final state.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langstage_core import SessionAdapter
from langstage_core.tasks import TERMINAL_STATES, InMemoryTaskStore, TaskRunner
from notes_folder import NOTE_PLAN, NotesFolder

from reviewer_app.config import resolve_database
from reviewer_app.integrations.langstage import ReviewedTaskStore, serve_decisions

TURNS = [[*NOTE_PLAN[:4], {"path": "e.txt", "text": "five"}], NOTE_PLAN[4:5], NOTE_PLAN[5:6]]
"""One batch of five calls (decided five ways), then the same note twice (approve for session, then waived)."""


MODEL_READ: list[str] = []
"""Every tool result the model read on its last turn (the whole conversation's)."""


class ScriptedChatModel(GenericFakeChatModel):
    """Makes each turn's calls, then sums up; the turn is counted from the conversation."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **_: Any) -> Any:
        turn = sum(1 for m in messages if isinstance(m, AIMessage) and m.tool_calls)
        results = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
        MODEL_READ[:] = results
        if turn >= len(TURNS):
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="Finished."))])
        calls = [{"name": "write_note", "args": note, "id": f"call_{turn}_{i}"} for i, note in enumerate(TURNS[turn])]
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="", tool_calls=calls))])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default=None, help="Reviewer's database (default: $REVIEWER_DB or the user's)")
    parser.add_argument("--workdir", type=Path, default=Path.cwd() / "agent-scratch")
    args = parser.parse_args()
    notes = NotesFolder(args.workdir)

    def write_note(path: str, text: str) -> str:
        """Write a note into the agent's folder."""
        return notes.write(path, text)

    model = ScriptedChatModel(messages=iter(()), disable_streaming=True)  # the board reads whole turns
    agent = create_agent(
        model,
        tools=[StructuredTool.from_function(write_note)],
        middleware=[HumanInTheLoopMiddleware(interrupt_on={"write_note": True})],
        checkpointer=InMemorySaver(),
    )
    db = resolve_database(args.db)
    runner = TaskRunner(SessionAdapter(graph=agent), ReviewedTaskStore(InMemoryTaskStore(), db=db), poll_interval=0.1)
    await runner.start()
    decisions = asyncio.create_task(serve_decisions(runner, db=db))
    task_id = await runner.enqueue(title="Tidy my notes", prompt="Tidy my notes")
    while (task := await runner.store.get(task_id))["state"] not in TERMINAL_STATES:  # noqa: ASYNC110  (no event)
        await asyncio.sleep(0.05)
    decisions.cancel()
    await runner.shutdown()
    print(json.dumps({"written": notes.written, "model_read": MODEL_READ, "state": task["state"]}))


if __name__ == "__main__":
    asyncio.run(main())
