"""What the commands print: lines for people (secrets redacted, control characters made visible) and JSON."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from typing import Any

from reviewer_app.domain.sanitize import json_terminal_safe, redact_secrets, terminal_safe

Printer = Callable[[str], None]
Dumper = Callable[[Any], None]


def err(message: str) -> None:
    """A line for the person at the terminal: secrets redacted, control characters made visible."""
    print(terminal_safe(redact_secrets(message), keep_newlines=True), file=sys.stderr, flush=True)


def out(line: str) -> None:
    print(terminal_safe(line), flush=False)


def dump(value: Any) -> None:
    print(json_terminal_safe(json.dumps(value, indent=2, ensure_ascii=False, default=str)))


def print_listing(as_json: bool, data: list[Any], lines: Iterable[str], empty: str) -> int:
    """A listing as JSON, or one line per item (``empty`` when there is none); ``lines`` is consumed lazily."""
    if as_json:
        dump(data)
    elif not data:
        out(empty)
    else:
        for line in lines:
            out(line)
    return 0
