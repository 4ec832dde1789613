"""``reviewer-app rules``: persistent allow / ask / deny rules from the command line.

``add`` prints the rule with its id, ``list`` shows hit counts, ``preview`` shows the past and pending requests a
pattern would have matched (read a page at a time) and, for each, a deny or ask rule in force that keeps it from the
new rule (a rule is judged with every rule in force, as are the requests ``add --settle-pending`` settles),
``revoke`` ends a rule (it stays on the record), and ``export`` / ``import`` write and read a TOML policy file teams
can share (all or nothing on import).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reviewer_app.cli.errors import EXIT_NOT_FOUND, EXIT_USAGE
from reviewer_app.cli.output import Dumper, Printer


def add_rules_parser(sub: Any, common: Callable[[argparse.ArgumentParser], None]) -> argparse.ArgumentParser:
    """The ``rules`` subcommand and its actions; ``common`` adds the global options (``--db``…) to each action."""
    rules: argparse.ArgumentParser = sub.add_parser(
        "rules", help="persistent allow / ask / deny rules: add, list, preview, revoke, export, suggest, lint"
    )
    actions = rules.add_subparsers(dest="rules_action", required=True)
    add = actions.add_parser("add", help="add a rule; prints it with its id")
    add.add_argument("effect", choices=["allow", "ask", "deny"])
    add.add_argument("pattern", help="Bash(git status), Bash(npm run test:*), Write(src/**), mcp__github__*…")
    add.add_argument("--scope", default="global", help="global (default), agent:NAME, session:ID or workspace:PATH")
    add.add_argument("--expires", metavar="DURATION", help="e.g. 30s, 15m, 1h, 2d, 1w (default: never)")
    add.add_argument("--note", default="", help="why the rule exists")
    add.add_argument(
        "--settle-pending", action="store_true", help="also settle now the pending requests it matches (see preview)"
    )
    add.add_argument("--json", action="store_true")
    listing = actions.add_parser("list", help="the rules in force, with hit counts")
    listing.add_argument("--all", action="store_true", help="include revoked and expired rules")
    listing.add_argument("--json", action="store_true")
    preview = actions.add_parser("preview", help="the past and pending requests a pattern would match")
    preview.add_argument("pattern")
    preview.add_argument("--effect", choices=["allow", "ask", "deny"], default="allow")
    preview.add_argument("--scope", default="global")
    preview.add_argument("--limit", type=int, default=200, help="show at most this many matches (default 200)")
    preview.add_argument("--json", action="store_true")
    revoke = actions.add_parser("revoke", help="revoke a rule (it stays on the record)")
    revoke.add_argument("rule_id")
    export = actions.add_parser("export", help="write the rules in force to a TOML policy file ('-': stdout)")
    export.add_argument("file")
    export.add_argument("--force", action="store_true", help="overwrite the file if it exists")
    imported = actions.add_parser("import", help="add the rules of a TOML policy file (all or nothing)")
    imported.add_argument("file")
    from reviewer_app.cli.habits import history_options

    suggest = actions.add_parser("suggest", help="rules the history argues for (calls you approve every time)")
    history_options(suggest)
    suggest.add_argument("--min", type=int, default=5, help="approved at least this many times (default 5)")
    suggest.add_argument("--json", action="store_true")
    lint = actions.add_parser("lint", help="rules that never match, are shadowed, or match high-risk calls")
    history_options(lint)
    lint.add_argument("--json", action="store_true")
    for parser in (rules, add, listing, preview, revoke, export, imported, suggest, lint):
        common(parser)
    return rules


def _when(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _rule_line(entry: Any) -> str:
    rule = entry.rule
    parts = [rule.id, f"{rule.effect:<5}", rule.pattern, f"scope={rule.scope}"]
    if rule.expires_at is not None:
        parts.append(f"expires={_when(rule.expires_at)}")
    if entry.revoked_at is not None:
        parts.append(f"revoked={_when(entry.revoked_at)}")
    parts.append(f"hits={entry.hit_count}")
    if entry.last_hit_at is not None:
        parts.append(f"last_hit={_when(entry.last_hit_at)}")
    if rule.note:
        parts.append(f"note={rule.note}")
    return "  ".join(parts)


def _preview_item(record: dict[str, Any], held: Any = None) -> dict[str, Any]:
    """One previewed request; ``held``: the verdict of another rule in force that keeps it from this rule."""
    response = record.get("user_response") if isinstance(record.get("user_response"), dict) else {}
    data = record.get("data") if isinstance(record.get("data"), dict) else {}
    assert isinstance(response, dict) and isinstance(data, dict)
    return {
        "hitl_id": record["hitl_id"],
        "status": record["status"],
        "decision": response.get("decision"),
        "decided_by": response.get("reviewer"),
        "tool_name": record.get("tool_name"),
        "session_id": record.get("session_id"),
        "arguments": data.get("arguments"),
        "created_at": record.get("created_at"),
        "held_by": None
        if held is None
        else {"rule": held.rule.id, "effect": held.effect, "pattern": held.rule.pattern},
    }


def _export(text: str, file: str, *, force: bool, out: Printer, err: Printer) -> int:
    """Write the policy file (atomically: a reader never sees half of it); refuse to overwrite without --force."""
    if file == "-":
        if sys.stdout.isatty():  # for a person: control characters made visible
            for line in text.splitlines():
                out(line)
        else:  # for a pipe: the exact file
            sys.stdout.write(text)
        return 0
    path = Path(file)
    if path.exists() and not force:
        err(f"error: {path} exists; pass --force to overwrite it")
        return EXIT_USAGE
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        err(f"error: cannot write {path}: {exc}")
        return EXIT_USAGE
    out(f"exported {text.count('[[rules]]')} rule(s) to {path}")
    return 0


def _read_policy(file: str, err: Printer) -> str | None:
    try:
        return sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        err(f"error: cannot read {file}: {exc}")
        return None


async def run_rules(backend: Any, args: argparse.Namespace, *, out: Printer, err: Printer, dump: Dumper) -> int:
    """Run one ``rules`` action on ``backend``; returns the exit code."""
    from reviewer_app.domain.rules import Rule, RuleError
    from reviewer_app.domain.rules_file import rules_from_toml, rules_to_toml

    action = args.rules_action
    try:
        if action == "add":
            rule = Rule.create(
                args.effect, args.pattern, scope=args.scope, expires=args.expires, note=args.note, now=time.time()
            )
            entry = await backend.add_rule(rule)
            settled = await backend.settle_pending_by_rule(rule.id) if args.settle_pending else []
            if args.json:
                dump({**entry.to_dict(), "settled": [record["hitl_id"] for record in settled]})
            else:
                out(f"added {_rule_line(entry)}")
                for record in settled:
                    out(f"settled {record['hitl_id']}: {record['user_response']['decision']} by rule:{rule.id}")
            return 0
        if action == "list":
            entries = await backend.list_rules(include_inactive=args.all)
            if args.json:
                dump([entry.to_dict() for entry in entries])
            elif not entries:
                out("no rules")
            else:
                for entry in entries:
                    out(_rule_line(entry))
            return 0
        if action == "preview":
            if args.limit <= 0:
                err("error: --limit must be a positive number")
                return EXIT_USAGE
            probe = Rule(args.effect, args.pattern, args.scope, None, "", "rule_preview", time.time())
            records = await backend.preview_rule(probe, limit=args.limit)
            held = await backend.prevailing_rules(probe, records)  # judged with every rule in force
            items = [_preview_item(record, held.get(str(record["hitl_id"]))) for record in records]
            if args.json:
                dump(items)
            elif not items:
                out(f"no past or pending request matches {probe.pattern}")
            else:
                for item in items:
                    decided = f"{item['decision']} by {item['decided_by']}" if item["decision"] else "-"
                    line = f"{item['hitl_id']}  {item['status']:<9}  {decided:<30}  {item['tool_name']}"
                    keeper = item["held_by"]
                    if keeper is not None:
                        line += f"  held: {keeper['effect']} rule {keeper['rule']} {keeper['pattern']}"
                    out(f"{line}  {item['arguments']}")
            return 0
        if action == "revoke":
            if await backend.revoke_rule(args.rule_id, revoked_by=backend.reviewer):
                out(f"revoked {args.rule_id}")
                return 0
            err(f"error: no rule in force with id {args.rule_id!r}")
            return EXIT_NOT_FOUND
        if action == "export":
            text = rules_to_toml(entry.rule for entry in await backend.list_rules())
            return _export(text, args.file, force=args.force, out=out, err=err)
        if action == "import":
            source = _read_policy(args.file, err)
            if source is None:
                return EXIT_USAGE
            rules = rules_from_toml(source)
            added = await backend.import_rules(rules)
            skipped = [rule.id for rule, new in zip(rules, added, strict=True) if not new]
            out(
                f"imported {added.count(True)} rule(s)"
                + (f"; already present: {', '.join(skipped)}" if skipped else "")
            )
            return 0
        if action in ("suggest", "lint"):
            from reviewer_app.cli.habits import run_lint, run_suggest

            run = run_suggest if action == "suggest" else run_lint
            return await run(backend, args, out=out, dump=dump)
    except RuleError as exc:
        err(f"error: {exc}")
        return EXIT_USAGE
    err(f"error: unknown rules action {action!r}")
    return EXIT_USAGE
