"""What ``reviewer-app mcp-proxy`` adds to an ungated ``tools/call``, against a direct connection, in one run.

Two copies of the same upstream MCP server (built with the official SDK's ``MCPServer``) run side by side: one
spoken to directly over stdio, one through the proxy (with its Reviewer database and timeline writes). The
script speaks raw newline-delimited JSON-RPC to both, so no client library's cost hides in the figures, and
alternates which side goes first on every round so both meet the same machine load. The call is a read-only
tool (it passes the gate without a request), the proxy's fast path.

Goals: the proxy adds at most 2 ms at p50 and 10 ms at p99.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

from common import REPO_ROOT, Goal, clock, describe_ms, new_database, report, settle

SERVER = REPO_ROOT / "tests" / "integrations" / "mcp_test_server.py"
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}


class Side:
    """One stdio MCP connection spoken to in raw JSON-RPC lines."""

    def __init__(self, name: str, process: asyncio.subprocess.Process) -> None:
        self.name = name
        self.process = process
        self.next_id = 1

    @classmethod
    async def start(cls, name: str, command: list[str], env: dict[str, str]) -> Side:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
            cwd=REPO_ROOT,
            limit=1 << 24,
        )
        side = cls(name, process)
        await side.request_raw(INIT)
        await side.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await side.call("tools/list", {})
        return side

    async def send(self, message: dict[str, object]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        await self.process.stdin.drain()

    async def request_raw(self, message: dict[str, object]) -> dict[str, object]:
        await self.send(message)
        assert self.process.stdout is not None
        while True:
            answer = json.loads(await self.process.stdout.readline())
            if answer.get("id") == message["id"]:
                return dict(answer)

    async def call(self, method: str, params: dict[str, object]) -> dict[str, object]:
        self.next_id += 1
        answer = await self.request_raw({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        if "error" in answer:
            raise RuntimeError(f"{self.name}: {answer['error']}")
        return answer

    async def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), 10)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()


def prepare(tmp: Path) -> tuple[dict[str, str], Path]:
    """The upstream's notes file and a fresh Reviewer database."""
    env = {**os.environ, "NOTES_FILE": str(tmp / "notes.txt")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    (tmp / "notes.txt").write_text("a short note\n")
    return env, new_database(tmp / "bench.db")


async def measure(rounds: int, warmup: int) -> tuple[list[float], list[float]]:
    with tempfile.TemporaryDirectory(prefix="reviewer-bench-mcp-") as tmp:
        env, db = prepare(Path(tmp))
        upstream = [sys.executable, str(SERVER)]
        proxy_cmd = [sys.executable, "-m", "reviewer_app", "mcp-proxy", "--name", "notes", "--db", str(db), "--"]
        direct = await Side.start("direct", upstream, env)
        proxied = await Side.start("proxy", [*proxy_cmd, *upstream], env)
        timings: dict[str, list[float]] = {"direct": [], "proxy": []}
        params: dict[str, object] = {"name": "read_notes", "arguments": {}}
        try:
            settle()
            for index in range(warmup + rounds):
                order = (direct, proxied) if index % 2 == 0 else (proxied, direct)
                for side in order:
                    started = clock()
                    await side.call("tools/call", params)
                    elapsed = clock() - started
                    if index >= warmup:
                        timings[side.name].append(elapsed)
        finally:
            await direct.close()
            await proxied.close()
        return timings["direct"], timings["proxy"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=100)
    args = parser.parse_args()
    direct, proxied = asyncio.run(measure(args.rounds, args.warmup))
    d, p = describe_ms(direct), describe_ms(proxied)
    for name, stats in (("direct", d), ("proxy", p)):
        print(
            f"{name:>6}: n={stats['n']} p50 {stats['p50_ms']:.3f} ms  p90 {stats['p90_ms']:.3f} ms  "
            f"p99 {stats['p99_ms']:.3f} ms  max {stats['max_ms']:.3f} ms"
        )
    added_p50 = p["p50_ms"] - d["p50_ms"]
    added_p99 = p["p99_ms"] - d["p99_ms"]
    print(f" added: p50 {added_p50:.3f} ms, p99 {added_p99:.3f} ms per ungated tools/call")
    goals = [
        Goal("mcp_proxy_added_p50", added_p50, 2.0, "ms", at_least=False),
        Goal("mcp_proxy_added_p99", added_p99, 10.0, "ms", at_least=False),
    ]
    report(goals, {"direct": d, "proxy": p}, bench="mcp_proxy")


if __name__ == "__main__":
    main()
