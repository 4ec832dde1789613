"""What the proxy knows of the upstream's tools: learned from the host's tools/list answers, asked for when needed.

A gate needs a tool's annotations; a host may call a tool it never listed (or listed before a
``list_changed``), so the proxy then pages through tools/list itself.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger("reviewer_app.mcp_proxy")

MAX_LIST_PAGES = 100

Request = Callable[[str, dict[str, Any]], Awaitable[Any]]


class UpstreamTools:
    """The upstream's tool descriptions by name; ``complete`` once the proxy has read every page itself."""

    def __init__(self) -> None:
        self._tools: dict[str, dict[str, Any]] = {}
        self.complete = False

    def get(self, tool_name: str) -> dict[str, Any] | None:
        return self._tools.get(tool_name)

    def absorb(self, result: Any) -> None:
        """Learn the tools of one tools/list result (a page)."""
        tools = result.get("tools") if isinstance(result, dict) else None
        for tool in tools if isinstance(tools, list) else []:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                self._tools[tool["name"]] = tool

    def forget(self) -> None:
        """The upstream's tools changed (``notifications/tools/list_changed``)."""
        self._tools.clear()
        self.complete = False

    async def look_up(self, tool_name: str, call_meta: Any, request: Request) -> dict[str, Any] | None:
        """The upstream's description of a tool the host called without listing: ask for tools/list ourselves.

        The request carries the call's own ``_meta`` envelope (less its progress token): on the stateless
        2026 protocol that is where the protocol version and client capabilities travel with every request.
        """
        meta = {k: v for k, v in call_meta.items() if k != "progressToken"} if isinstance(call_meta, dict) else {}
        if not self.complete:
            cursor: Any = None
            try:
                for _ in range(MAX_LIST_PAGES):
                    params: dict[str, Any] = {"_meta": meta} if meta else {}
                    if cursor:
                        params["cursor"] = cursor
                    page = await request("tools/list", params)
                    self.absorb(page)
                    cursor = page.get("nextCursor") if isinstance(page, dict) else None
                    if not cursor:
                        break
                self.complete = True
            except (ConnectionError, RuntimeError) as exc:
                log.warning(f"mcp-proxy: could not list the upstream's tools: {exc}")
        return self._tools.get(tool_name)
