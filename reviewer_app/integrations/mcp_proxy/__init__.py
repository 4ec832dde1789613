"""``reviewer-app mcp-proxy``: an MCP server that sits between any MCP host and an upstream stdio MCP server.

Everything passes through as JSON-RPC lines; only ``tools/call`` requests the gate selects wait for a
Reviewer decision, and an upstream's form elicitation becomes a question in Reviewer.
"""

from reviewer_app.integrations.mcp_proxy.gating import GatePolicy
from reviewer_app.integrations.mcp_proxy.proxy import McpProxy

__all__ = ["GatePolicy", "McpProxy"]
