"""The upstream MCP server's process: started with the proxy's session, stopped the MCP way, then less gently.

A stdio server is told to stop by closing its stdin; one that lingers past the grace period is terminated,
then killed, so the proxy never leaves an orphan behind.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence

from reviewer_app.integrations.mcp_proxy import framing
from reviewer_app.integrations.mcp_proxy.framing import LineWriter

SHUTDOWN_GRACE_S = 2.0


async def start_upstream(command: Sequence[str], env: Mapping[str, str] | None) -> asyncio.subprocess.Process:
    """The server's process with pipes on stdin and stdout (its stderr stays the proxy's, for the host's log)."""
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=dict(env) if env is not None else None,
        limit=framing.LINE_LIMIT,
    )
    assert process.stdin is not None and process.stdout is not None
    return process


async def stop_upstream(process: asyncio.subprocess.Process | None, stdin: LineWriter | None) -> None:
    """Close its stdin and wait; terminate, then kill, a server that does not exit within the grace period."""
    if process is None or process.returncode is not None:
        return
    if stdin is not None:
        stdin.close()
    try:
        await asyncio.wait_for(process.wait(), SHUTDOWN_GRACE_S)
        return
    except TimeoutError:
        pass
    with contextlib.suppress(ProcessLookupError):
        process.terminate()
    try:
        await asyncio.wait_for(process.wait(), SHUTDOWN_GRACE_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
