"""``reviewer-app mcp-proxy …``: run the proxy, or wrap/unwrap a host's MCP configuration."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Sequence

USAGE = (
    "reviewer-app mcp-proxy --name NAME [--db DB] [--gate PATTERN]... [--allow PATTERN]... -- COMMAND [ARGS...]\n"
    "       reviewer-app mcp-proxy wrap|unwrap claude-code|claude-desktop|codex [options]"
)


def proxy_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reviewer-app mcp-proxy",
        usage=USAGE,
        description="Serve an upstream stdio MCP server to an MCP host, with its tool calls reviewed in Reviewer.",
    )
    parser.add_argument("--name", required=True, help="the server's name (tools are shown as mcp__NAME__TOOL)")
    parser.add_argument("--db", help="database path or SQLAlchemy URL (default: $REVIEWER_DB or the user data dir)")
    parser.add_argument(
        "--gate", action="append", default=[], metavar="PATTERN", help="always review tools matching PATTERN"
    )
    parser.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="PATTERN",
        help="never review tools matching PATTERN (unless also --gate)",
    )
    parser.add_argument(
        "--progress-interval",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="progress notifications to a waiting host this often (default 5)",
    )
    return parser


def main(argv: Sequence[str]) -> int:
    argv = list(argv)
    if argv[:1] in (["wrap"], ["unwrap"]):
        from reviewer_app.integrations.mcp_proxy.hostconfig import main as config_main

        return config_main(argv)
    parser = proxy_parser()
    if "--" not in argv:
        if "-h" in argv or "--help" in argv:
            parser.parse_args(["--help"])
        parser.print_usage(sys.stderr)
        sys.stderr.write("error: give the upstream server's command after --\n")
        return 2
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1 :]
    args = parser.parse_args(options)
    if not command:
        parser.error("give the upstream server's command after --")
    if not args.name.strip() or "__" in args.name:
        parser.error("--name must be non-empty and must not contain '__'")
    try:
        return asyncio.run(
            serve(
                args.name,
                command,
                db=args.db,
                gate=args.gate,
                allow=args.allow,
                progress_interval=args.progress_interval,
            )
        )
    except KeyboardInterrupt:
        return 130


async def serve(
    name: str,
    command: Sequence[str],
    *,
    db: str | None,
    gate: Sequence[str] = (),
    allow: Sequence[str] = (),
    progress_interval: float = 5.0,
) -> int:
    from reviewer_app.config import resolve_database
    from reviewer_app.hitl import SQLHITLBackend
    from reviewer_app.integrations.core import ReviewClient
    from reviewer_app.integrations.mcp_proxy.framing import open_stdio
    from reviewer_app.integrations.mcp_proxy.gating import GatePolicy
    from reviewer_app.integrations.mcp_proxy.proxy import McpProxy

    try:
        backend = SQLHITLBackend(resolve_database(db))
    except Exception as exc:  # no database, no gate: refuse to serve rather than pass calls through unreviewed
        sys.stderr.write(f"mcp-proxy: cannot open the Reviewer database: {exc}\n")
        return 1
    try:
        proxy = McpProxy(
            name=name,
            command=command,
            client=ReviewClient(backend, agent=f"mcp:{name}"),
            policy=GatePolicy(server=name, gate=tuple(gate), allow=tuple(allow)),
            progress_interval=progress_interval,
        )
        host_in, host_out = await open_stdio()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT, getattr(signal, "SIGHUP", None)):
            if signum is not None:
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.add_signal_handler(signum, proxy.stop)
        try:
            return await proxy.run(host_in, host_out)
        except FileNotFoundError as exc:
            sys.stderr.write(f"mcp-proxy: cannot start {command[0]!r}: {exc}\n")
            return 127
        finally:
            host_out.close()
    finally:
        await backend.aclose()
