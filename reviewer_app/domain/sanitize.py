"""Text that leaves Reviewer for a person or a log: secrets redacted, terminal controls made visible.

Model servers echo request headers in error bodies, ``base_url`` values carry ``user:password@``, and agents'
arguments may hold escape sequences that would hide part of a command from the person reading a terminal
(``\\x1b[8m`` conceals text, ``\\r`` overwrites a line, bidi overrides reorder it). Everything Reviewer prints,
stores as an error or shows as a run's failure goes through these two functions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

REDACTED = "[redacted]"

_URL_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/\s@:]+(?::[^/\s@]*)?)@")
_AUTH_HEADER = re.compile(
    r"(?P<name>\b(?:authorization|proxy-authorization|x-api-key|api-key|x-goog-api-key)\b[\"']?\s*[:=]\s*[\"']?)"
    r"(?P<scheme>(?:bearer|basic|token)\s+)?(?P<value>[^\s\"',;}]+)",
    re.IGNORECASE,
)
_BEARER = re.compile(r"(?P<scheme>\bbearer\s+)(?P<value>[A-Za-z0-9._~+/=-]{8,})", re.IGNORECASE)
_KEY_PARAM = re.compile(
    r"(?P<name>\b(?:api[_-]?key|access[_-]?token|secret|password|passwd|token)\b[\"']?\s*[:=]\s*[\"']?)"
    r"(?P<value>[^\s\"'&,;}]{4,})",
    re.IGNORECASE,
)
# Well-known key shapes (OpenAI/Anthropic sk-…, GitHub ghp_/gho_/…, Slack xox…, AWS access key ids, Google AIza…).
_KEY_SHAPES = re.compile(
    r"\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35})\b"
)


def redact_secrets(text: str, known: Iterable[str | None] = ()) -> str:
    """``text`` with credentials replaced by ``[redacted]``: the ``known`` secret values wherever they appear,
    URL user-info, Authorization-style headers, ``api_key=``-style parameters and well-known key shapes."""
    for secret in sorted({s for s in known if s and len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)
    text = _AUTH_HEADER.sub(lambda m: f"{m['name']}{m['scheme'] or ''}{REDACTED}", text)
    text = _BEARER.sub(lambda m: f"{m['scheme']}{REDACTED}", text)
    text = _KEY_PARAM.sub(lambda m: f"{m['name']}{REDACTED}", text)
    return _KEY_SHAPES.sub(REDACTED, text)


def redact_url(url: str) -> str:
    """A URL safe to print or store: its user-info (``user:password@``) replaced."""
    return _URL_USERINFO.sub(lambda m: f"{m['scheme']}{REDACTED}@", url)


# C0 controls but tab, DEL, C1 controls, and the bidirectional overrides/isolates of "Trojan Source".
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


# What json.dumps leaves raw inside strings; its own layout (newlines, indent) stays.
_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def terminal_safe(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control character shown as an escape (``\\x1b``), so nothing in it can move the
    cursor, hide, recolour or reorder what a terminal shows. ``keep_newlines`` keeps real line breaks."""
    if keep_newlines:
        return "\n".join(_UNSAFE.sub(_escape, line) for line in text.split("\n"))
    return _UNSAFE.sub(_escape, text)


def json_terminal_safe(text: str) -> str:
    """JSON text for a terminal: the controls ``json.dumps(ensure_ascii=False)`` leaves raw (DEL, C1, bidi
    overrides; it escapes C0 itself) become ``\\uXXXX`` escapes, which decode back to the same data."""
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


# Keys whose value is a credential whatever it looks like (the names _AUTH_HEADER and _KEY_PARAM match in text).
_SECRET_KEY = re.compile(
    r"^(?:authorization|proxy-authorization|x-api-key|api[_-]?key|x-goog-api-key|access[_-]?token|secret|password"
    r"|passwd|token)$",
    re.IGNORECASE,
)


def redact_data(value: object) -> object:
    """Parsed JSON with credentials redacted: every string through :func:`redact_secrets`, and the whole value
    of a key named like a credential (``{"api_key": "…"}``). Redacting the JSON text instead could cut an escape
    sequence in half; this keeps the structure valid."""
    if isinstance(value, str):
        return redact_secrets(value)
    if isinstance(value, list):
        return [redact_data(item) for item in value]
    if isinstance(value, dict):
        return {
            key: REDACTED if isinstance(key, str) and _SECRET_KEY.match(key) and item else redact_data(item)
            for key, item in value.items()
        }
    return value
