"""A power-loop agent whose tool calls wait for a reviewer in Reviewer, inline or across restarts.

Runs offline: a scripted model stands in for a real one. Two ways, decide in the window or with
``reviewer-app decide <id> approve|edit|reject|steer --db reviews.db``::

    python examples/power_loop_agent.py --db reviews.db --state agent.db --workdir /tmp/notes            # gate
    python examples/power_loop_agent.py --db reviews.db --state agent.db --workdir /tmp/notes --pause    # durable
    python examples/power_loop_agent.py --db reviews.db --state agent.db --workdir /tmp/notes --resume   # later

With ``--pause`` the round's calls wait in power-loop's own store (``--state``): the process can die, and
``--resume`` settles them by their decisions in a new one. Prints, as JSON, the notes written and every tool
result the model read.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from notes_folder import NOTE_PLAN, ONE_NOTE, NotesFolder, example_parser
from power_loop import StatefulAgentLoop
from power_loop._vendor.llm_client.interface import LLMResponse
from power_loop.contracts.tools import ToolDefinition
from power_loop.tools.registry import ToolRegistry

from reviewer_app.config import resolve_database
from reviewer_app.integrations.power_loop import pause_for_review, review_gate, settle_and_resume


class ScriptedModel:
    """Calls ``write_note`` once per turn with the plan's next arguments, then finishes; remembers every tool
    result it read. Its turn is counted from the conversation, so a new process continues where one died."""

    def __init__(self, plan: list[dict[str, Any]]) -> None:
        self.plan = plan
        self.read: list[str] = []

    async def complete(self, request: Any, **_: Any) -> Any:
        messages = request.messages
        if messages and messages[-1].get("role") == "tool":
            self.read.append(str(messages[-1].get("content")))
        turn = sum(1 for message in messages if message.get("role") == "assistant" and message.get("tool_calls"))
        if turn >= len(self.plan):
            return LLMResponse(raw_text="Finished.")
        call = {"id": f"call_{turn}", "type": "function",
                "function": {"name": "write_note", "arguments": json.dumps(self.plan[turn])}}  # fmt: skip
        return LLMResponse(raw_text="", tool_calls=[call])

    def stream(self, request: Any) -> Any:
        raise NotImplementedError("the scripted model answers whole turns")

    async def close(self) -> None:
        return None


async def main() -> None:
    parser = example_parser(__doc__, "power-loop's own session store (SQLite)")
    parser.add_argument("--pause", action="store_true", help="the durable pause instead of the inline gate")
    parser.add_argument("--resume", action="store_true", help="settle the paused round of the last run")
    args = parser.parse_args()
    notes = NotesFolder(args.workdir)

    def write_note(path: str, text: str) -> str:
        return notes.write(path, text)

    tools = ToolRegistry()
    schema = {"type": "object", "properties": {"path": {"type": "string"}, "text": {"type": "string"}}}
    tools.register(ToolDefinition(name="write_note", description="Write a note.", input_schema=schema), write_note)
    durable = args.pause or args.resume
    model = ScriptedModel(ONE_NOTE if durable else NOTE_PLAN)
    loop = StatefulAgentLoop(llm=model, dsn=str(args.state), tool_registry=tools)
    db = resolve_database(args.db)
    session_file = args.state.with_suffix(".session")
    if args.resume:
        session_id = session_file.read_text().strip()
    else:
        session_id = await loop.new_session()
        session_file.write_text(session_id)
        if durable:
            pause_for_review(loop, db=db, agent_name="notes-agent")
        else:
            review_gate(loop, db=db, agent_name="notes-agent")
        await loop.send("Tidy my notes", session_id=session_id)
    if durable:  # wait here for the decisions; if this process dies, --resume picks the round up
        print("paused", flush=True)
        await settle_and_resume(loop, session_id, db=db, agent_name="notes-agent", wait=True)
    await loop.aclose()
    print(json.dumps({"written": notes.written, "model_read": model.read}))


if __name__ == "__main__":
    asyncio.run(main())
