"""What every command shares: the global options, the context they name, the backend and the agent catalog."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from reviewer_app.config import AppContext, default_agents_file, resolve_database


def add_common_options(parser: argparse.ArgumentParser, *, in_subcommand: bool) -> None:
    """Global options, also accepted after the subcommand (``reviewer-app run demo "x" --db f.db``)."""
    default: Any = argparse.SUPPRESS if in_subcommand else None
    parser.add_argument(
        "--db", default=default, help="database path or SQLAlchemy URL (default: $REVIEWER_DB or the user data dir)"
    )
    parser.add_argument("--reviewer", default=default, help="name recorded on decisions (default: the OS user)")
    parser.add_argument(
        "--agents", default=default, help="agents TOML file (default: agents.toml in the user config dir, if any)"
    )
    parser.add_argument("--workspaces", default=default, help="folder for the sessions' workspaces")


def make_context(args: argparse.Namespace) -> AppContext:
    ctx = AppContext(
        database=resolve_database(getattr(args, "db", None)),
        reviewer=getattr(args, "reviewer", None),
        agents_file=Path(args.agents) if getattr(args, "agents", None) else None,
    )
    if getattr(args, "workspaces", None):
        ctx.workspaces_dir = Path(args.workspaces)
    return ctx


def open_backend(ctx: AppContext) -> Any:
    """The commands' backend. No GUI runs in these processes, so their quick write transactions run on the loop's
    own thread when nothing can make them wait there (``writes_on_loop``, see hitl/loop_writes.py)."""
    from reviewer_app.hitl import SQLHITLBackend

    return SQLHITLBackend(ctx.database, reviewer=ctx.reviewer, writes_on_loop=True)


def load_catalog(ctx: AppContext) -> Any:
    from reviewer_app.runtime.agents import AgentCatalog

    return AgentCatalog.load(ctx.agents_file, default_path=default_agents_file())
