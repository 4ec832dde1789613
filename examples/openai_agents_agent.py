"""An OpenAI Agents SDK agent whose tool calls wait for a reviewer in Reviewer.

Runs offline: a small ``Model`` stands in for OpenAI's. Start it, then decide in the window or::

    python examples/openai_agents_agent.py --db reviews.db --workdir /tmp/scratch --session notes-1
    reviewer-app decide <id> approve --db reviews.db        # or approve_for_session, reject, steer

Its run state is saved with the requests: if the process dies while waiting, ``--resume`` continues the same
session without asking again. The SDK cannot run a call with edited arguments, so edit is not offered.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from agents import Agent, Model, ModelResponse, Usage, function_tool, set_tracing_disabled
from agents.testing import assistant_message, function_call

from reviewer_app.config import resolve_database
from reviewer_app.integrations.openai_agents import resume_reviewed, run_reviewed


class OfflineModel(Model):
    """Asks to write a note, then reports what the tool said: what a real model would do here."""

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        outputs = [i["output"] for i in input if isinstance(i, dict) and i.get("type") == "function_call_output"]
        if outputs:
            reply = [assistant_message(f"Finished: {outputs[-1]}", item_id="msg-final")]
        else:
            reply = [function_call("write_note", {"path": "notes.txt", "text": "Buy milk.\n"}, call_id="call_1")]
        return ModelResponse(output=reply, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default=None, help="database path or URL (default: $REVIEWER_DB or the user's)")
    parser.add_argument("--workdir", type=Path, default=Path.cwd() / "agent-scratch")
    parser.add_argument("--session", default="openai-agents-demo", help="the Reviewer session of this run")
    parser.add_argument("--resume", action="store_true", help="continue the session's paused run")
    args = parser.parse_args()
    set_tracing_disabled(True)  # offline: no traces sent to OpenAI

    @function_tool(needs_approval=True)
    def write_note(path: str, text: str) -> str:
        """Write a note into the agent's folder."""
        target = (args.workdir / path).resolve()
        if not target.is_relative_to(args.workdir.resolve()):
            return f"refused: {path} is outside the folder"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return f"wrote {path}"

    agent = Agent(name="notes-agent", instructions="Keep the user's notes.", model=OfflineModel(), tools=[write_note])
    db = resolve_database(args.db)
    if args.resume:
        result = await resume_reviewed(agent, db=db, session_id=args.session)
    else:
        result = await run_reviewed(agent, "Note that I need milk", db=db, session_id=args.session)
    print(f"agent: {result.final_output}")


if __name__ == "__main__":
    asyncio.run(main())
