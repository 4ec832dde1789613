"""A minimal MCP host: connects through the command line it is given, calls one tool, prints the result.

The kill test runs it as its own process and kills it while the call waits for a reviewer.
Usage: python mcp_host_script.py TOOL ARGS_JSON -- COMMAND [ARGS...]
"""

from __future__ import annotations

import json
import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import Implementation


async def main(tool: str, arguments: dict[str, object], command: list[str]) -> None:
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, client_info=Implementation(name="kill-test-host", version="1")) as session,
    ):
        await session.initialize()
        print("initialized", flush=True)
        result = await session.call_tool(tool, arguments)
        print(result.model_dump_json(by_alias=True), flush=True)


if __name__ == "__main__":
    split = sys.argv.index("--")
    anyio.run(main, sys.argv[1], json.loads(sys.argv[2]), sys.argv[split + 1 :])
