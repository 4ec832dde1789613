"""``decide``: one decision on one request, refused if its arguments changed since the operator reviewed them."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from reviewer_app.cli.context import open_backend
from reviewer_app.cli.errors import EXIT_CHANGED, EXIT_CONFLICT, EXIT_NOT_FOUND, EXIT_USAGE
from reviewer_app.cli.output import dump, err, out
from reviewer_app.config import AppContext


def _read_args_file(path: str) -> str:
    """``--args-file``: a file, or stdin for ``-`` (no limit on size, unlike one argv string)."""
    return sys.stdin.buffer.read().decode("utf-8") if path == "-" else Path(path).read_text("utf-8")


async def cmd_decide(ctx: AppContext, args: argparse.Namespace) -> int:
    from reviewer_app.domain.decisions import Decision, DecisionError, DecisionKind, args_digest
    from reviewer_app.domain.hitl import HITLConflict, HITLNotFound
    from reviewer_app.hitl import shown_arguments

    edited = None
    if args.args_file is not None:
        if args.args is not None:
            err("error: give the edited arguments with --args or --args-file, not both")
            return EXIT_USAGE
        try:
            args.args = _read_args_file(args.args_file)
        except (OSError, UnicodeDecodeError) as exc:
            err(f"error: cannot read the edited arguments from {args.args_file}: {exc}")
            return EXIT_USAGE
    if args.args is not None:
        try:
            edited = json.loads(args.args)
        except json.JSONDecodeError as exc:
            err(f"error: --args is not valid JSON: {exc}")
            return EXIT_USAGE
        if not isinstance(edited, dict):
            err("error: --args must be a JSON object")
            return EXIT_USAGE
    kind = DecisionKind(args.decision)
    if kind is DecisionKind.EDIT and edited is None:
        err("error: edit needs the new arguments: --args '{...}'")
        return EXIT_USAGE
    if kind is not DecisionKind.EDIT and edited is not None:
        err(f"error: --args only goes with edit, not {kind.value}")
        return EXIT_USAGE
    backend = open_backend(ctx)
    try:
        record = await backend.get(args.hitl_id)
        if record is None:
            err(f"error: no HITL request with id {args.hitl_id!r}")
            return EXIT_NOT_FOUND
        shown = shown_arguments(record)
        current = args_digest(shown)
        if args.sha256 is not None and args.sha256.strip().lower() != current:
            err(
                f"error: {args.hitl_id} changed since you reviewed it: you named SHA-256 {args.sha256.strip()[:12]}…, "
                f"its arguments now hash to {current[:12]}…; they are now: "
                f"{json.dumps(shown, ensure_ascii=False, default=str)}"
            )
            return EXIT_CHANGED
        digest = current if kind.needs_hash else None
        try:
            decision = Decision(kind, message=args.message, edited_args=edited, args_sha256=digest)
        except DecisionError as exc:
            err(f"error: {exc}")
            return EXIT_USAGE
        try:
            decided = await backend.decide(args.hitl_id, decision)
        except HITLNotFound:
            err(f"error: no HITL request with id {args.hitl_id!r}")
            return EXIT_NOT_FOUND
        except HITLConflict as exc:
            err(f"error: {exc}")
            return EXIT_CONFLICT
        except DecisionError as exc:
            err(f"error: {exc}")
            return EXIT_USAGE
    finally:
        await backend.aclose()
    if kind.needs_hash:
        what = decided.get("tool_name") or decided["hitl_type"]
        err(f"{kind.value}: {what} with the arguments shown: {json.dumps(shown, ensure_ascii=False, default=str)}")
    if args.json:
        dump(decided)
    else:
        out(f"{decided['hitl_id']}: {kind.value} (by {backend.reviewer})")
    return 0
