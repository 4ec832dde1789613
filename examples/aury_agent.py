"""An aury-agent ReactAgent whose tool calls wait for a reviewer in Reviewer.

Runs offline: a scripted model stands in for a real one. Start it, then decide in the window or::

    python examples/aury_agent.py --db reviews.db --workdir /tmp/scratch
    reviewer-app pending --db reviews.db
    reviewer-app decide <id> approve --db reviews.db     # or edit --args '{...}', reject/steer --message '...'

The model asks to write notes one after another, then asks a question (``ask_user``) and for a confirmation
(``confirm``); each waits for a decision. At the end the script prints, as JSON, the notes written and every
tool result the model read. Needs Python >= 3.13 and ``pip install aury-agent``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from aury.agents import ReactAgent
from aury.agents.hitl.ask_user import AskUserTool, ConfirmTool
from aury.agents.llm import MockLLMProvider
from aury.agents.llm.provider import Capabilities, LLMEvent, ToolCall
from aury.agents.tool import tool
from notes_folder import NOTE_PLAN, NotesFolder

from reviewer_app.config import resolve_database
from reviewer_app.integrations.aury import reviewer_middleware

PLAN: list[tuple[str, dict[str, Any]]] = [
    *(("write_note", note) for note in NOTE_PLAN),
    ("ask_user", {"question": "Which folder should the notes go to?", "options": ["notes", "inbox"]}),
    ("confirm", {"action": "delete the cache", "risk_level": "high"}),
]


class ScriptedModel(MockLLMProvider):  # type: ignore[misc]
    """Makes the calls of ``PLAN`` one per turn, then finishes; remembers every tool result it read."""

    capabilities = Capabilities(supports_tools=True)

    def __init__(self, plan: list[tuple[str, dict[str, Any]]]) -> None:
        super().__init__()
        self.plan = plan
        self.read: list[str] = []
        self.turn = 0

    async def complete(self, messages: list[Any], tools: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        if messages and getattr(messages[-1], "role", None) == "tool":
            content = messages[-1].content  # aury sends a list of tool_result parts
            parts = content if isinstance(content, list) else [{"content": content}]
            self.read.extend(str(part.get("content")) for part in parts if isinstance(part, dict))
        if self.turn < len(self.plan):
            name, arguments = self.plan[self.turn]
            call = ToolCall(id=f"call_{self.turn}", name=name, arguments=json.dumps(arguments))
            self.turn += 1
            yield LLMEvent(type="tool_call_start", tool_call=call)
            yield LLMEvent(type="tool_call", tool_call=call)
            yield LLMEvent(type="completed", finish_reason="tool_use")
            return
        yield LLMEvent(type="content", delta="Finished.")
        yield LLMEvent(type="completed", finish_reason="end_turn")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default=None, help="database path or URL (default: $REVIEWER_DB or the user's)")
    parser.add_argument("--workdir", type=Path, default=Path.cwd() / "agent-scratch")
    args = parser.parse_args()
    notes = NotesFolder(args.workdir)

    @tool
    def write_note(path: str, text: str) -> str:
        """Write a note into the agent's folder."""
        return notes.write(path, text)

    model = ScriptedModel(PLAN)
    agent = ReactAgent.create(
        llm=model,
        tools=[write_note, AskUserTool(), ConfirmTool()],
        middlewares=[reviewer_middleware(db=resolve_database(args.db), agent_name="notes-agent")],
    )
    async for _event in agent.run("Tidy my notes"):
        pass
    print(json.dumps({"written": notes.written, "model_read": model.read}))


if __name__ == "__main__":
    asyncio.run(main())
