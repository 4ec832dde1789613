"""The ``reviewer-app`` command: the window by default, headless subcommands for servers and scripts."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from reviewer_app import __version__
from reviewer_app.config import AppContext, resolve_database


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reviewer-app", description="Review and decide the approval requests AI agents raise before they act."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--db", help="database path or SQLAlchemy URL (default: $REVIEWER_DB or the user data dir)")
    parser.add_argument("--reviewer", help="name recorded on decisions (default: the OS user)")
    parser.add_argument("--demo", action="store_true", help="seed a demo workspace and start scripted demo runs")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("gui", help="open the window (the default)")
    return parser


def make_context(args: argparse.Namespace) -> AppContext:
    return AppContext(database=resolve_database(args.db), reviewer=args.reviewer)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    ctx = make_context(args)
    if args.command in (None, "gui"):
        from reviewer_app.ui.app import run_gui

        return run_gui(ctx, demo=args.demo)
    parser.error(f"unknown command {args.command!r}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
