"""The policy file teams share: rules as TOML (``[[rules]]`` tables), read all or nothing.

Public API: ``rules_to_toml(rules) -> str``, ``rules_from_toml(text) -> list[Rule]`` (``RuleError`` naming the
first bad rule).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable

from reviewer_app.domain.rules import Rule, RuleError

__all__ = ["rules_from_toml", "rules_to_toml"]


def _toml_string(value: str) -> str:
    # JSON string escapes (\" \\ \n \t \uXXXX) are valid TOML basic-string escapes; DEL must be escaped too.
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def rules_to_toml(rules: Iterable[Rule]) -> str:
    """A policy file teams can share: one ``[[rules]]`` table per rule."""
    lines = ["# Reviewer policy: effect = allow | ask | deny; precedence deny > ask > allow.", ""]
    for rule in rules:
        lines.append("[[rules]]")
        for key, value in rule.to_dict().items():
            rendered = _toml_string(value) if isinstance(value, str) else repr(value)
            lines.append(f"{key} = {rendered}")
        lines.append("")
    return "\n".join(lines)


def rules_from_toml(text: str) -> list[Rule]:
    """Read a policy file; RuleError naming the first bad rule (nothing is returned unless all are valid)."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RuleError(f"not a valid TOML policy file: {exc}") from None
    unknown = set(document) - {"rules"}
    if unknown:
        raise RuleError(f"unknown top-level key(s) {sorted(unknown)}; expected [[rules]] tables")
    raw_rules = document.get("rules", [])
    if not isinstance(raw_rules, list):
        raise RuleError("'rules' must be an array of tables ([[rules]])")
    rules: list[Rule] = []
    for index, raw in enumerate(raw_rules, start=1):
        try:
            rules.append(Rule.from_dict(raw))
        except RuleError as exc:
            raise RuleError(f"rule {index}: {exc}") from None
    ids = [rule.id for rule in rules]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise RuleError(f"duplicate rule id(s) {duplicates}")
    return rules
