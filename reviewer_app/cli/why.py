"""``reviewer-app why ID``: why a request reached a person, what its command does, what it will touch.

Computed now, on the backend's database thread (the record and rules are read there, the disk is read read-only
with a time budget). Every line is redacted and its control characters escaped, like all of the CLI's output.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from reviewer_app.cli.errors import EXIT_NOT_FOUND
from reviewer_app.cli.output import Printer
from reviewer_app.domain.sanitize import redact_data, redact_secrets
from reviewer_app.preview.describe import item_facts, network_text


def add_why_parser(sub: Any, common: Callable[[argparse.ArgumentParser], None]) -> argparse.ArgumentParser:
    why: argparse.ArgumentParser = sub.add_parser(
        "why", help="why a request was asked, what its command does and what it will touch"
    )
    why.add_argument("hitl_id")
    why.add_argument("--json", action="store_true", help="why, segments, effects and computed_at as JSON")
    why.add_argument("--budget", type=float, default=1.0, help="seconds the effects may take (default 1)")
    common(why)
    return why


def print_preview(preview: dict[str, Any], out: Printer) -> None:
    """The three parts as text for a terminal (``out`` escapes control characters)."""
    out(f"request {preview['hitl_id']}  (arguments sha256 {preview['args_sha256'][:12]}…)")
    out("Why it was asked:")
    for reason in preview["why"]:
        out(f"  - {reason}")
    if preview["segments"]:
        out("What it does:")
        for number, segment in enumerate(preview["segments"], 1):
            out(f"  {number}. {segment['text']}")
            out(f"     {segment['explanation']}")
    if preview.get("description"):
        out(f"Description ({preview['description']['label']}): {preview['description']['text']}")
    effects = preview["effects"]
    out("What it will touch:")
    for kind in ("writes", "deletes", "reads"):
        for item in effects[kind]:
            out(f"  {kind:<8} {item['path']}  [{item_facts(item)}]  by {item.get('by')}")
            for line in (item.get("diff") or "").splitlines()[:40]:
                out(f"           {line}")
    for item in effects["network"]:
        out(f"  network  {network_text(item)}  by {item.get('by')}")
    for item in effects["executes"]:
        code = f": {item['code']}" if item.get("code") else ""
        out(f"  executes {item['what']}{code}  by {item.get('by')}")
    if preview.get("touches"):
        out(f"  {preview['touches']}")
    for note in effects.get("notes") or ():
        out(f"  not computed: {note}")
    stamp = time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(preview["computed_at"]))
    out(f"computed at {stamp}")


async def run_why(backend: Any, args: argparse.Namespace, *, out: Printer, err: Printer, dump: Any) -> int:
    from reviewer_app.preview.request import preview_request

    preview = await backend.run(lambda: preview_request(backend.store, args.hitl_id, budget_s=max(args.budget, 0.0)))
    if preview is None:
        err(f"error: no HITL request with id {args.hitl_id!r}")
        return EXIT_NOT_FOUND
    data = redact_data(preview.to_dict())
    assert isinstance(data, dict)
    if args.json:
        dump(data)
    else:
        print_preview(data, lambda line: out(redact_secrets(line)))
    return 0
