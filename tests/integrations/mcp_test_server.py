"""A small MCP server built with the official SDK (``mcp.server.mcpserver.MCPServer``), run as a script.

It offers what the proxy tests need beyond the reference filesystem server: a read-only tool, a write tool
with a schema, a tool that elicits a form from the user, and one that reports progress. Writes go to the
file named by ``NOTES_FILE`` so a test can tell whether the upstream really ran.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations
from pydantic import BaseModel

server = MCPServer("notes")
NOTES = Path(os.environ.get("NOTES_FILE", "notes.txt"))


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def read_notes() -> str:
    """Read every note."""
    return NOTES.read_text() if NOTES.exists() else ""


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False))
def add_note(text: str, tag: str = "misc") -> str:
    """Append one note to the notes file."""
    with NOTES.open("a") as handle:
        handle.write(f"[{tag}] {text}\n")
    return f"added note: {text}"


@server.tool(annotations=ToolAnnotations(destructiveHint=True))
def wipe_notes() -> str:
    """Delete every note."""
    NOTES.unlink(missing_ok=True)
    return "wiped"


class Colour(BaseModel):
    colour: str
    shade: int = 1


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def pick_colour(ctx: Context) -> str:
    """Ask the user for a colour."""
    result = await ctx.elicit("Which colour should the notes use?", Colour)
    if result.action == "accept":
        return f"accepted {result.data.colour} shade {result.data.shade}"
    return f"user said {result.action}"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def sign_in(ctx: Context) -> str:
    """Send the user to a URL (URL-mode elicitation: the host handles it, not Reviewer)."""
    result = await ctx.elicit_url("Sign in to the notes service", "https://notes.invalid/auth", "sign-in-1")
    return f"url elicitation: {result.action}"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def slow_count(ctx: Context, steps: int = 3) -> str:
    """Count up, reporting progress."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    return f"counted to {steps}"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def show_roots(ctx: Context) -> str:
    """Ask the client for its roots (a server-to-client request) and log them."""
    roots = await ctx.session.list_roots()
    uris = ", ".join(str(root.uri) for root in roots.roots)
    await ctx.info(f"roots: {uris}")
    return uris


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def die() -> str:
    """Exit the server process at once (tests a dying upstream)."""
    sys.stdout.flush()
    os._exit(3)


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, destructiveHint=True))
def tidy_notes() -> str:
    """Says it only reads, and that it destroys: it deletes every note (destructiveHint must win)."""
    NOTES.unlink(missing_ok=True)
    return "tidied"


if __name__ == "__main__":
    server.run("stdio")
