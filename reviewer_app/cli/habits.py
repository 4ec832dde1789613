"""``reviewer-app stats`` and ``rules suggest`` / ``rules lint``: the operator's own numbers and rules that learn.

The history is read a page at a time (newest first, at most ``--limit`` requests, optionally only the last
``--days`` days) and judged by ``domain.habits``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from reviewer_app.cli.output import Printer
from reviewer_app.domain.hitl import HITLRecord


def add_stats_parser(sub: Any, common: Callable[[argparse.ArgumentParser], None]) -> argparse.ArgumentParser:
    stats: argparse.ArgumentParser = sub.add_parser(
        "stats", help="your own numbers: time to decide per tool and agent, approve rates, the share rules settle"
    )
    history_options(stats)
    stats.add_argument("--json", action="store_true")
    common(stats)
    return stats


def history_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--days", type=int, help="only requests created in the last DAYS days (default: all)")
    parser.add_argument("--limit", type=int, default=100_000, help="read at most this many requests (newest first)")


async def history(backend: Any, *, days: int | None, limit: int) -> list[HITLRecord]:
    """Decided and expired requests, newest first, a page at a time."""
    records: list[HITLRecord] = await backend.decided_history(days=days, limit=limit)
    return records


def _seconds(value: float) -> str:
    return f"{value:.0f}s" if value < 120 else f"{value / 60:.1f}m"


async def run_stats(backend: Any, args: argparse.Namespace, *, out: Printer, err: Printer, dump: Any) -> int:
    from reviewer_app.domain.habits import operator_numbers

    numbers = operator_numbers(await history(backend, days=args.days, limit=args.limit))
    if args.json:
        dump(numbers.to_dict())
        return 0
    out(
        f"{numbers.decided} decided ({numbers.by_people} by people, {numbers.by_rules} by rules: "
        f"{numbers.rule_share:.0%} settled by rules), {numbers.expired} expired"
    )
    for title, groups in (("per tool", numbers.per_tool), ("per agent", numbers.per_agent)):
        out(f"{title}:  decided  approved  time to decide p50 / p90")
        for group in groups:
            flag = "  <- rubber-stamp candidate" if group.rubber_stamp else ""
            out(
                f"  {group.name:<28} {group.decided:>6}  {group.approve_rate:>7.0%}   "
                f"{_seconds(group.p50_s):>6} / {_seconds(group.p90_s)}{flag}"
            )
    return 0


async def run_suggest(backend: Any, args: argparse.Namespace, *, out: Printer, dump: Any) -> int:
    from reviewer_app.domain.habits import suggest_rules

    records = await history(backend, days=args.days, limit=args.limit)
    suggestions = suggest_rules(records, await backend.active_rules(), time.time(), minimum=args.min)
    if args.json:
        dump([suggestion.to_dict() for suggestion in suggestions])
    elif not suggestions:
        out(f"no call was approved {args.min} times or more without a rule to settle it")
    else:
        for suggestion in suggestions:
            out(suggestion.describe())
    return 0


async def run_lint(backend: Any, args: argparse.Namespace, *, out: Printer, dump: Any) -> int:
    from reviewer_app.domain.habits import lint_rules

    entries = [(entry.rule, entry.hit_count, entry.last_hit_at) for entry in await backend.list_rules()]
    records = await history(backend, days=None, limit=args.limit)
    findings = lint_rules(entries, records, time.time(), days=args.days or 30)
    if args.json:
        dump([finding.to_dict() for finding in findings])
    elif not findings:
        out("no findings")
    else:
        for finding in findings:
            out(f"{finding.rule_id}  {finding.pattern}  {finding.problem}")
    return 0
