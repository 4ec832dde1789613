"""An agent in its own process that asks Reviewer before it acts.

Run it next to the window, on the same database::

    python examples/external_agent.py                      # the default database ($REVIEWER_DB or the user's)
    python examples/external_agent.py --db reviews.db --workdir /tmp/agent-scratch
    python examples/external_agent.py --db postgresql+psycopg://me@db.example/reviews   # a team's queue

It plans to write a file, narrates into its timeline (``emit_block``), raises a
``tool_approval`` request marked external (with the tool's JSON schema, so a
reviewer may edit the arguments), waits for the decision (``wait_for_response``;
on PostgreSQL it is woken by LISTEN/NOTIFY, on SQLite by the cheap change check)
and then does what the reviewer decided: writes the file as asked or as edited,
or does not, and reports the reviewer's message. Nothing here is private API.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from pathlib import Path
from typing import Any

from reviewer_app.config import resolve_database
from reviewer_app.domain.decisions import Decision
from reviewer_app.domain.runs import RunState
from reviewer_app.hitl import SQLHITLBackend

WRITE_FILE_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string", "minLength": 1}, "content": {"type": "string"}},
    "required": ["path", "content"],
    "additionalProperties": False,
}


def say(text: str) -> None:
    print(text, flush=True)


def write_file(workdir: Path, arguments: dict[str, Any]) -> Path:
    """The tool itself: a file inside ``workdir``, never outside it."""
    target = (workdir / arguments["path"]).resolve()
    if not target.is_relative_to(workdir.resolve()):
        raise ValueError(f"{arguments['path']!r} is outside the agent's folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(arguments["content"], encoding="utf-8")
    return target


async def main(args: argparse.Namespace) -> int:
    run_id = args.run_id or uuid.uuid4().hex[:8]
    session_id, invocation_id = f"{args.agent}-{run_id}", f"{args.agent}-{run_id}-run"
    arguments = {"path": args.path, "content": args.content}
    async with SQLHITLBackend(args.db, reviewer=args.agent) as backend:
        # Register the run so the runs board shows it, marked external, before the first request.
        await backend.write(
            lambda tx: (
                tx.runs.ensure_session(session_id, agent=args.agent, external=True),
                tx.runs.ensure(invocation_id, session_id, agent=args.agent, prompt=f"write {args.path}", external=True),
            )
        )

        async def block(kind: str, data: dict[str, Any], **extra: Any) -> str:
            event = await backend.emit_block(
                session_id=session_id, invocation_id=invocation_id, kind=kind, data=data, **extra
            )
            return event.block_id

        await block("text", {"content": f"I will write {args.path} ({len(args.content)} characters)."})
        tool_block = await block("tool_use", {"name": "write_file", "arguments": arguments, "status": "pending"})
        hitl_id = f"{invocation_id}-write"
        await backend.create(
            hitl_id=hitl_id,
            hitl_type="tool_approval",
            session_id=session_id,
            invocation_id=invocation_id,
            data={"arguments": arguments, "schema": WRITE_FILE_SCHEMA},
            metadata={"external": True, "agent": args.agent},
            block_id=tool_block,
            tool_name="write_file",
        )
        await block("hitl", {"hitl_id": hitl_id, "tool": "write_file"}, parent_id=tool_block)
        await backend.write(lambda tx: tx.runs.set_state(invocation_id, RunState.WAITING))
        say(f"waiting for a decision on {hitl_id}")
        try:
            record = await backend.wait_for_response(hitl_id, timeout=args.timeout)
        except TimeoutError:
            await backend.cancel(hitl_id)
            await backend.write(lambda tx: tx.runs.set_state(invocation_id, RunState.CANCELLED, error="no decision"))
            say(f"outcome: nobody decided {hitl_id} within {args.timeout} s; cancelled it")
            return 2
        await backend.write(lambda tx: tx.runs.set_state(invocation_id, RunState.RUNNING))
        decision = Decision.from_user_response(record["user_response"])
        who = decision.reviewer or "someone"
        if record["status"] == "completed" and decision.kind.runs_tool:
            final = decision.effective_args(arguments)
            try:
                written = write_file(args.workdir, final)
            except (OSError, ValueError) as exc:
                problem = str(exc)
                await block("tool_use", {"status": "error", "result": problem}, op="patch", block_id=tool_block)
                await backend.write(lambda tx: tx.runs.set_state(invocation_id, RunState.FAILED, error=problem))
                say(f"outcome: failed: {problem}")
                return 1
            result = f"wrote {written} ({decision.kind.value} by {who})"
            await block("tool_use", {"status": "success", "result": result}, op="patch", block_id=tool_block)
        else:
            why = decision.message or record["status"]
            result = f"did not write {args.path}: {decision.kind.value} by {who}: {why}"
            await block("tool_use", {"status": "error", "result": result}, op="patch", block_id=tool_block)
        await block("text", {"content": result})
        await backend.write(lambda tx: tx.runs.set_state(invocation_id, RunState.DONE))
        say(f"outcome: {result}")
        return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default=None, help="database path or URL (default: $REVIEWER_DB or the user's)")
    parser.add_argument("--agent", default="external-agent", help="the agent's name in the inbox")
    parser.add_argument("--run-id", default=None, help="a fixed id for this run (default: random)")
    parser.add_argument("--workdir", type=Path, default=Path.cwd() / "agent-scratch", help="where it may write")
    parser.add_argument("--path", default="notes.txt", help="the file it wants to write, inside --workdir")
    parser.add_argument("--content", default="Hello from an external agent.\n")
    parser.add_argument("--timeout", type=float, default=None, help="seconds to wait before giving up")
    args = parser.parse_args(argv)
    args.db = resolve_database(args.db)
    return args


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse_args())))
