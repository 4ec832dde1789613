"""Which ``reviewer_app`` files and functions one approval crosses in the backend: ``decide`` to the signed record.

A profiler hook on the loop and on the backend's database thread records every ``reviewer_app`` function entered
while one approval is decided and its audit signature checked (what the runtime does before the tool runs). It
prints the files and the backend's own functions in the order first entered; ``docs/ARCHITECTURE.md`` quotes the
figures ("One approval, from the backend's entry to the tool").

    PYTHONPATH=$PWD python bench/approval_path.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

import reviewer_app
from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.hitl import SQLHITLBackend

PACKAGE = Path(reviewer_app.__file__).parent
ARGUMENTS = {"command": "git status"}


class Crossings:
    """The ``reviewer_app`` functions entered, each once, in order."""

    def __init__(self) -> None:
        self.order: list[tuple[str, str]] = []
        self.seen: set[tuple[str, str]] = set()

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        filename = frame.f_code.co_filename
        if event != "call" or not filename.startswith(str(PACKAGE)):
            return
        key = (Path(filename).relative_to(PACKAGE.parent).as_posix(), frame.f_code.co_qualname)
        if key not in self.seen:
            self.seen.add(key)
            self.order.append(key)


async def trace_one_approval(database: Path) -> Crossings:
    backend = SQLHITLBackend(database, reviewer="bench")
    approve = Decision(DecisionKind.APPROVE, args_sha256=args_digest(ARGUMENTS))
    for hitl_id in ("warm-up", "traced"):
        await backend.create(
            hitl_id=hitl_id,
            hitl_type="tool_approval",
            session_id="s",
            invocation_id="i",
            data={"arguments": ARGUMENTS},
            tool_name="run_shell",
        )
    await backend.decide("warm-up", approve)  # first-use imports and compiled statements are not the path
    crossings = Crossings()
    await backend.run(sys.setprofile, crossings)  # the database thread
    sys.setprofile(crossings)
    record = await backend.decide("traced", approve)
    problems = await backend.unsigned_decisions([record])
    sys.setprofile(None)
    await backend.run(sys.setprofile, None)
    await backend.aclose()
    assert record["status"] == "completed" and not problems
    return crossings


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        crossings = asyncio.run(trace_one_approval(Path(folder) / "bench.db"))
    files = sorted({filename for filename, _ in crossings.order})
    backend = [(filename, name) for filename, name in crossings.order if filename.startswith("reviewer_app/hitl")]
    backend_files = {filename for filename, _ in backend}
    print(f"reviewer_app: {len(crossings.order)} functions in {len(files)} files")
    for filename in files:
        print(f"  {filename}")
    print(f"backend: {len(backend)} functions in {len(backend_files)} files")
    for filename, name in backend:
        print(f"  {filename}  {name}")


if __name__ == "__main__":
    main()
