"""A Pydantic AI agent whose tool calls wait for a reviewer in Reviewer.

Runs offline: a ``FunctionModel`` stands in for a real model. Start it, then decide in the window or::

    python examples/pydantic_ai_agent.py --db reviews.db --workdir /tmp/scratch --session notes-1
    reviewer-app decide <id> approve --db reviews.db        # or edit --args '{...}', reject, steer

The run's messages are saved with the requests: if the process dies while waiting, ``--resume`` continues the
same session without asking again. Inside one process, ``capabilities=[reviewer_handler(db=...)]`` does the
same for any ``agent.run``.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from reviewer_app.config import resolve_database
from reviewer_app.integrations.pydantic_ai import resume_reviewed, run_reviewed


def offline_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Asks to write a note, then reports what the tool said: what a real model would do here."""
    last = messages[-1]
    returns = [p for p in last.parts if p.part_kind == "tool-return"] if isinstance(last, ModelRequest) else []
    if returns:
        return ModelResponse(parts=[TextPart(f"Finished: {returns[-1].model_response_str()}")])
    return ModelResponse(parts=[ToolCallPart("write_note", {"path": "notes.txt", "text": "Buy milk.\n"}, "call_1")])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default=None, help="database path or URL (default: $REVIEWER_DB or the user's)")
    parser.add_argument("--workdir", type=Path, default=Path.cwd() / "agent-scratch")
    parser.add_argument("--session", default="pydantic-ai-demo", help="the Reviewer session of this run")
    parser.add_argument("--resume", action="store_true", help="continue the session's paused run")
    args = parser.parse_args()
    agent = Agent(FunctionModel(offline_model), name="notes-agent")

    @agent.tool_plain(requires_approval=True)
    def write_note(path: str, text: str) -> str:
        """Write a note into the agent's folder."""
        target = (args.workdir / path).resolve()
        if not target.is_relative_to(args.workdir.resolve()):
            return f"refused: {path} is outside the folder"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return f"wrote {path}"

    db = resolve_database(args.db)
    if args.resume:
        result = await resume_reviewed(agent, db=db, session_id=args.session)
    else:
        result = await run_reviewed(agent, "Note that I need milk", db=db, session_id=args.session)
    print(f"agent: {result.output}")


if __name__ == "__main__":
    asyncio.run(main())
