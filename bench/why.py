"""Why + explanation + effects for one request, on the backend's database thread (issue 26).

A real SQLite file holds 79 pending requests built from the commands agents run (the explanation tests' table)
and 50 persistent rules; their workspace is a real git repository with a few thousand files (a ``build/`` tree
of 3,000 files for the recursive deletes). Each request is previewed cold: the parse, explanation and risk
caches are cleared first, as for a request the window shows for the first time. Everything runs through
``SQLHITLBackend.run`` (the DB thread, never the Qt thread): reading the record, the rules, the session's waivers
and workspace, then the reasons, the segments and the effects (disk and git read with a 250 ms budget).

Reference, measured in the same run and interleaved request by request: reading the same record alone on the
same thread (``store.requests.get``), the floor any per-request work pays.
Prints ``GOAL why_preview_p50_ms <measured> <=50ms PASS|MISS``.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from common import Goal, describe_ms, machine_info, report

from reviewer_app.domain import explain, shell
from reviewer_app.domain.rules import Rule
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.preview.request import preview_request
from tests.preview.test_commands_table import TABLE  # the real-world commands (common.py puts the checkout first)

TARGET_MS = 50.0
ROUNDS = 3


def workspace(root: Path) -> Path:
    work = root / "project"
    (work / "src").mkdir(parents=True)
    for directory in range(30):
        folder = work / "build" / f"d{directory}"
        folder.mkdir(parents=True)
        for number in range(100):
            (folder / f"o{number}.o").write_bytes(b"")
    for number in range(500):
        (work / "src" / f"m{number}.py").write_text(f"x = {number}\n")
    (work / "package.json").write_text('{"scripts": {"test": "jest --ci"}}')
    (work / "Makefile").write_text("lint:\n\truff check .\n")
    (work / "README.md").write_text("# project\n")
    git = ["git", "-c", "user.email=b@example.com", "-c", "user.name=b", "-C", str(work)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "src", "package.json", "Makefile", "README.md"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    subprocess.run([*git, "remote", "add", "origin", "https://github.com/acme/app.git"], check=True)
    return work


async def seed(backend: SQLHITLBackend, work: Path) -> list[str]:
    ids = []
    for number, (command, *_rest) in enumerate(TABLE):
        hitl_id = f"why-{number}"
        await backend.create(
            hitl_id=hitl_id,
            hitl_type="tool_approval",
            session_id="s1",
            invocation_id="i1",
            tool_name="Bash",
            data={"arguments": {"command": command}, "cwd": str(work), "hook_event": "PermissionRequest"},
            metadata={"agent": "claude-code", "external": True},
        )
        ids.append(hitl_id)
    now = time.time()
    patterns = [f"Bash(npm run script{n}:*)" for n in range(20)] + [f"Write(src/pkg{n}/**)" for n in range(20)]
    patterns += ["Bash(git status)", "Bash(rm:*)", "Bash(curl:*)", "Bash(make:*)", "WebFetch(domain:example.com)"]
    for number, pattern in enumerate(patterns):
        await backend.add_rule(Rule("allow", pattern, id=f"rule_{number}", created_at=now))
    for number in range(5):
        await backend.add_rule(Rule("ask", f"Bash(terraform apply{number}:*)", id=f"rule_ask{number}", created_at=now))
    return ids


def clear_caches() -> None:
    """As for a request shown for the first time: nothing parsed, explained or assessed yet."""
    shell.parse_command.cache_clear()
    explain.explain_command.cache_clear()  # the risk verdict is never cached: it depends on the file system


async def measure(backend: SQLHITLBackend, ids: list[str]) -> tuple[list[float], list[float], int]:
    store = backend.store
    for hitl_id in ids:  # imports (bashlex, dulwich, detect-secrets) once, outside the figures
        await backend.run(preview_request, store, hitl_id)
    previews: list[float] = []
    reads: list[float] = []
    cut = 0
    for _round in range(ROUNDS):
        for hitl_id in ids:
            started = time.perf_counter()
            await backend.run(store.requests.get, hitl_id)
            reads.append(time.perf_counter() - started)
            await backend.run(clear_caches)
            started = time.perf_counter()
            preview = await backend.run(preview_request, store, hitl_id)
            previews.append(time.perf_counter() - started)
            assert preview is not None and preview.why
            cut += any(item.get("at_least") for item in preview.effects.deletes)
    return previews, reads, cut


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="reviewer-bench-why-") as directory:
        root = Path(directory)
        work = workspace(root)

        async def run() -> tuple[list[float], list[float], int]:
            async with SQLHITLBackend(root / "why.db", reviewer="bench") as backend:
                ids = await seed(backend, work)
                return await measure(backend, ids)

        previews, reads, cut = asyncio.run(run())
    preview_ms = describe_ms(previews)
    read_ms = describe_ms(reads)
    slowest = max(previews) * 1000
    print(f"requests: {len(TABLE)} commands x {ROUNDS} rounds, caches cleared before each preview")
    print(
        f"why + explanation + effects: p50 {preview_ms['p50_ms']:.2f} ms, p90 {preview_ms['p90_ms']:.2f} ms, "
        f"max {slowest:.1f} ms ({cut} previews stopped a walk at the budget)"
    )
    print(f"reference, the record read alone: p50 {read_ms['p50_ms']:.3f} ms, p90 {read_ms['p90_ms']:.3f} ms")
    print(f"mean {statistics.fmean(previews) * 1000:.2f} ms per preview")
    report(
        [Goal("why_preview_p50_ms", preview_ms["p50_ms"], TARGET_MS, "ms", at_least=False)],
        {"preview": preview_ms, "record_read": read_ms, "machine": machine_info()},
        bench="why",
    )


if __name__ == "__main__":
    main()
