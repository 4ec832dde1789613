"""A react-agent-harness agent whose gated tool calls wait for a reviewer in Reviewer.

Runs offline: a scripted model stands in for a real one. Start it, then decide in the window or with
``reviewer-app decide <id> approve|edit|reject|steer --db reviews.db``::

    python examples/react_agent_harness_agent.py --db reviews.db --state ./checkpoints --workdir /tmp/notes
    python examples/react_agent_harness_agent.py --db reviews.db --state ./checkpoints --workdir /tmp/notes --resume

The harness checkpoints each step before it asks: if the process dies while waiting, ``--resume`` continues the
run (``runtime.resume(key)``) and the decision already made applies. Prints, as JSON, the notes written and every
observation the model read.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agents.base import AgentConfig
from harness.checkpoint import FileCheckpointStore
from harness.runtime import AgentRegistry, AgentRuntime, ToolRegistry
from memory.manager import MemoryManager
from memory.stores import InMemoryEpisodicStore, InMemorySemanticStore
from notes_folder import NOTE_PLAN, ONE_NOTE, NotesFolder, example_parser

from reviewer_app.config import resolve_database
from reviewer_app.integrations.react_agent_harness import install_approver, last_resume_key


class ScriptedModel:
    """Answers each ReAct step with the plan's next ``write_note`` (counted from the conversation, so a resumed
    run continues where it stopped), then finishes; remembers every observation it read."""

    def __init__(self, plan: list[dict[str, Any]]) -> None:
        self.plan = plan
        self.read: list[str] = []

    async def complete(self, *, messages: list[dict[str, Any]], **_: Any) -> str:
        users = [str(m.get("content")) for m in messages if m.get("role") == "user"]
        feedback = [text for text in users if text.startswith(("Observation", "Human guidance:"))]
        if feedback:
            self.read.append(feedback[-1])
        turn = len(feedback)
        if turn >= len(self.plan):
            return json.dumps({"thought": "done", "action": "finish", "answer": "Finished.", "confidence": 1.0})
        return json.dumps({"thought": "write it", "action": "write_note", "args": self.plan[turn]})


class WriteNote:
    name = "write_note"
    description = "Write a note into the agent's folder. Args: path, text."
    cacheable = False

    def __init__(self, notes: NotesFolder) -> None:
        self.notes = notes

    async def execute(self, path: str, text: str) -> str:
        return self.notes.write(path, text)


async def main() -> None:
    parser = example_parser(__doc__, "the harness's checkpoint folder")
    parser.add_argument("--short", action="store_true", help="one note only")
    parser.add_argument("--resume", action="store_true", help="continue the last run from its checkpoint")
    args = parser.parse_args()
    notes = NotesFolder(args.workdir)
    model = ScriptedModel(ONE_NOTE if args.short or args.resume else NOTE_PLAN)
    config = AgentConfig(
        agent_id="notes",
        role="keeps notes",
        system_prompt="You keep the user's notes.",
        allowed_tools=["write_note"],
        hitl_tools=["write_note"],
        memory_context_enabled=False,
    )
    runtime = AgentRuntime(
        agent_registry=AgentRegistry().register(config),
        tool_registry=ToolRegistry().register(WriteNote(notes)),
        memory=MemoryManager(InMemorySemanticStore(), InMemoryEpisodicStore(), llm=model),
        llm=model,
        checkpoint_store=FileCheckpointStore(args.state),
    )
    db = resolve_database(args.db)
    install_approver(db=db, agent_name="notes-agent")
    if args.resume:
        key = await last_resume_key(db, agent_name="notes-agent")
        assert key is not None, "no run of this agent to resume"
        await runtime.resume(key)
    else:
        await runtime.run_agent("notes", "Tidy my notes")
    print(json.dumps({"written": notes.written, "model_read": model.read}))


if __name__ == "__main__":
    asyncio.run(main())
