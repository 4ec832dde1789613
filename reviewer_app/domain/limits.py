"""Limits at the door: what a request may carry so that it can be stored, listed, shown, hashed and decided.

Every writer checks here before it stores (``SQLHITLBackend.create``, the runtime's tool calls), and every
reader decodes stored JSON through :func:`decode_stored_json`, so one row written by an older version or by
another process with plain ``sqlite3`` shows up as a placeholder instead of breaking a listing or a loop.

Limits (documented in docs/agents.md):

- no lone UTF-16 surrogates (``"\\ud800"``) in any key or string: they cannot be encoded as UTF-8, so
  they could be neither printed nor hashed;
- JSON nesting at most :data:`MAX_DEPTH` levels (a value nested ~1,000 deep exhausts Python's recursion
  limit in every reader);
- at most :data:`MAX_JSON_BYTES` of canonical JSON (UTF-8) per value;
- finite numbers only (``NaN``/``Infinity`` are not JSON), integers of at most :data:`MAX_INT_DIGITS`
  digits (Python refuses to print longer ones), string keys only, JSON types only;
- identifiers and names: non-empty text of at most :data:`MAX_ID_CHARS` characters, no NUL.
"""

from __future__ import annotations

from collections.abc import Mapping

from reviewer_app.domain.lean_json import dumps

TYPE_CHECKING = False  # no ``typing`` at run time: the hook's lean path checks its requests here
if TYPE_CHECKING:
    import re
    from typing import Any

MAX_DEPTH = 64
"""Deepest nesting of objects and arrays a request's data may have."""

MAX_JSON_BYTES = 16 * 1024 * 1024
"""Largest canonical JSON (UTF-8 bytes) of one value: data, metadata or tool state."""

MAX_INT_DIGITS = 1000
"""Longest integer (decimal digits) a value may hold."""

_INT_BOUND = 10**MAX_INT_DIGITS
"""The smallest magnitude with one digit too many: compared, never printed (``sys.set_int_max_str_digits``)."""

MAX_ID_CHARS = 1024
"""Longest identifier or name (hitl_id, session_id, tool_name, ...)."""

READ_MAX_DEPTH = 200
"""Stored JSON nested deeper than this (only older versions or other programs write it) reads as a placeholder."""

UNDECODABLE_KEY = "$undecodable"
"""The one key of the placeholder that stands for a stored value that cannot be used."""

_SURROGATE = "[\ud800-\udfff]"
_SURROGATE_ESCAPE = r"\\u[dD][89abcdefABCDEF]"
_COMPILED: dict[str, re.Pattern[str]] = {}


def _pattern(source: str) -> re.Pattern[str]:
    """A regular expression compiled on first use: a hook call checks ASCII text without ``re`` (its import and
    compiles cost the lean path about as much as its whole check)."""
    compiled = _COMPILED.get(source)
    if compiled is None:
        import re

        compiled = _COMPILED[source] = re.compile(source)
    return compiled


class RequestRejected(ValueError):
    """A request (or a tool call) carries something that cannot be stored and shown; ``limit`` names the rule."""

    def __init__(self, limit: str, message: str) -> None:
        super().__init__(message)
        self.limit = limit


JsonPath = tuple["JsonPath", str | int] | None
"""Where a value sits, as a linked list from the leaf up (cheap to extend while walking)."""


def _where(path: JsonPath) -> str:
    parts: list[str | int] = []
    while path is not None:
        path, step = path
        parts.append(step)
    parts.reverse()
    text = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts[:8])
    return (text + ("…" if len(parts) > 8 else "")) or "(top level)"


def _safe(text: str) -> str:
    """A key for an error message: surrogates replaced, short."""
    cleaned = _pattern(_SURROGATE).sub("\ufffd", text)
    return cleaned if len(cleaned) <= 40 else cleaned[:39] + "…"


PLAIN_MAX_DEPTH = 16
"""Deepest nesting the fast path (:func:`plain_json_size`) looks into; deeper values take the full walk."""


def check_json_value(value: Any, what: str, *, max_depth: int = MAX_DEPTH, max_bytes: int = MAX_JSON_BYTES) -> None:
    """Raise :class:`RequestRejected` unless ``value`` is JSON data within the limits.

    A small plain value (every request's data and metadata, every decision) is accepted by
    :func:`plain_json_size`; anything else, and everything refused, takes :func:`walk_json_value`, so the
    verdict and the error message are always the full walk's.
    """
    kind = type(value)
    if (kind is dict or kind is list) and max_depth >= 1:
        size = plain_json_size(value, min(max_depth, PLAIN_MAX_DEPTH))
        if 0 <= size <= max_bytes:
            return
    walk_json_value(value, what, max_depth=max_depth, max_bytes=max_bytes)


def plain_json_size(value: Any, room: int) -> int:
    """An upper bound of ``value``'s canonical JSON size in bytes (the full walk's ``size_high``), or -1 when it is
    not plain: exact ``dict``/``list`` containers at most ``room`` levels deep (``room`` >= 1: this one counts),
    string keys and strings of ASCII, ``None``, booleans and integers within the digit limit only.

    Whatever it sizes passes every check of :func:`walk_json_value` whose ``max_depth`` is at least ``room``
    and whose ``max_bytes`` is at least the size (ASCII holds no surrogate; sizes are bounded the same way), so
    a caller may accept it without the walk. Recursion is bounded by ``room``.
    """
    kind = type(value)
    if kind is dict:
        size = 2
        for key in value:
            if type(key) is not str or not key.isascii():
                return -1
            size += 6 * len(key) + 4
        children = value.values()
    elif kind is list:
        size = 2 + len(value)
        children = value
    else:
        return -1
    for child in children:
        child_kind = type(child)
        if child_kind is str:
            if not child.isascii():
                return -1
            size += 6 * len(child) + 2
        elif child_kind is dict or child_kind is list:
            inner = plain_json_size(child, room - 1) if room > 1 else -1
            if inner < 0:
                return -1
            size += inner
        elif child is None or child_kind is bool:
            size += 5
        elif child_kind is int and -_INT_BOUND < child < _INT_BOUND:
            size += MAX_INT_DIGITS + 1
        else:
            return -1
    return size


def walk_json_value(value: Any, what: str, *, max_depth: int = MAX_DEPTH, max_bytes: int = MAX_JSON_BYTES) -> None:
    """:func:`check_json_value`'s full check of any value, refusals worded.

    Walks the value without recursion (a hostile value may be nested far deeper than the stack).
    """
    # Lower bound of the canonical size while walking: refuse early; compute the exact size only when needed.
    size_low = 0
    size_high = 0
    stack: list[tuple[Any, int, JsonPath]] = [(value, 1, None)]
    while stack:
        item, depth, path = stack.pop()
        kind = type(item)
        if kind is str or isinstance(item, str):
            if not item.isascii():
                _check_text(item, what, path)
            size_low += len(item) + 2
            size_high += 6 * len(item) + 2
        elif kind is dict or isinstance(item, Mapping):
            if depth > max_depth:
                raise RequestRejected(
                    "nesting depth", f"{what}: nested deeper than the limit of {max_depth} levels at {_where(path)}"
                )
            size_low += 2
            size_high += 2
            for key, child in item.items():
                if type(key) is not str:
                    raise RequestRejected(
                        "string keys", f"{what}: key {key!r} at {_where(path)} is not a string (JSON keys are)"
                    )
                if not key.isascii():
                    _check_text(key, what, path, key=True)
                size_low += len(key) + 4
                size_high += 6 * len(key) + 4
                stack.append((child, depth + 1, (path, key)))
        elif kind is list or kind is tuple or isinstance(item, list | tuple):
            if depth > max_depth:
                raise RequestRejected(
                    "nesting depth", f"{what}: nested deeper than the limit of {max_depth} levels at {_where(path)}"
                )
            size_low += 2 + len(item)
            size_high += 2 + len(item)
            stack.extend((child, depth + 1, (path, index)) for index, child in enumerate(item))
        elif item is None or kind is bool:
            size_low += 4
            size_high += 5
        elif kind is int or isinstance(item, int):
            if not -_INT_BOUND < item < _INT_BOUND:  # exact digits, negatives too, without str() or abs()
                raise RequestRejected(
                    "integer size", f"{what}: integer at {_where(path)} has more than {MAX_INT_DIGITS} digits"
                )
            size_low += 1
            size_high += MAX_INT_DIGITS + 1
        elif kind is float or isinstance(item, float):
            from math import isfinite  # floats are rare in calls: the hook's lean path imports no math for them

            if not isfinite(item):
                raise RequestRejected(
                    "finite numbers", f"{what}: {item!r} at {_where(path)} is not a JSON number (NaN/Infinity)"
                )
            size_low += 1
            size_high += 25
        else:
            raise RequestRejected("JSON types", f"{what}: {type(item).__name__} at {_where(path)} is not JSON data")
        if size_low > max_bytes:
            raise RequestRejected("size", f"{what}: more than the limit of {_mib(max_bytes)} of JSON")
    if size_high > max_bytes:
        size = len(dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
        if size > max_bytes:
            raise RequestRejected("size", f"{what}: {_mib(size)} of JSON is more than the limit of {_mib(max_bytes)}")


def _mib(size: int) -> str:
    return f"{size / 1024 / 1024:.1f} MiB"


def _check_text(text: str, what: str, path: JsonPath, *, key: bool = False) -> None:
    if not text.isascii() and _pattern(_SURROGATE).search(text) is not None:
        where = f"key {_safe(text)!r} at {_where(path)}" if key else f"string at {_where(path)}"
        raise RequestRejected(
            "no lone surrogates", f"{what}: {where} holds a lone UTF-16 surrogate (not encodable as UTF-8)"
        )


def check_identifier(value: Any, name: str, *, required: bool = True) -> None:
    """Identifiers and names: text without NUL or surrogates, at most :data:`MAX_ID_CHARS` characters."""
    if type(value) is str and value and value.isascii() and len(value) <= MAX_ID_CHARS and "\x00" not in value:
        return  # the common case, in one test: ASCII holds no surrogate
    if value is None and not required:
        return
    if not isinstance(value, str) or (required and not value):
        raise RequestRejected("identifiers", f"{name} must be a non-empty string")
    if len(value) > MAX_ID_CHARS:
        raise RequestRejected("identifier length", f"{name} is longer than the limit of {MAX_ID_CHARS} characters")
    if "\x00" in value:
        raise RequestRejected("identifiers", f"{name} contains a NUL character")
    _check_text(value, name, None)


_REQUIRED_IDS = ("hitl_id", "hitl_type", "session_id", "invocation_id")
_OPTIONAL_NAMES = ("tool_name", "block_id", "checkpoint_id", "tool_call_id", "node_id", "resume_mode")
_JSON_FIELDS = ("data", "metadata", "tool_state")
_IDENTIFIERS = tuple((name, True) for name in _REQUIRED_IDS) + tuple((name, False) for name in _OPTIONAL_NAMES)


def check_request(fields: Mapping[str, Any]) -> None:
    """Everything a new request carries (the arguments of ``create``), checked before anything is written."""
    get = fields.get
    for name, required in _IDENTIFIERS:
        value = get(name)
        if type(value) is str and value and value.isascii() and len(value) <= MAX_ID_CHARS and "\x00" not in value:
            continue  # check_identifier's common case, inline: ten calls less a request
        check_identifier(value, name, required=required)
    for name in _JSON_FIELDS:
        value = fields.get(name)
        if value is not None:
            check_json_value(value, name)


def scrub_text(text: str) -> str:
    """Text for display (model output): lone surrogates replaced by U+FFFD, so it can be stored and printed."""
    return text if text.isascii() else _pattern(_SURROGATE).sub("\ufffd", text)


def placeholder(reason: str) -> dict[str, str]:
    """What a stored value that cannot be used reads as."""
    return {UNDECODABLE_KEY: reason}


def is_undecodable(value: Any) -> bool:
    """Whether ``value`` is (or wraps, as a request's arguments) the placeholder of an unusable stored value."""
    if not isinstance(value, dict):
        return False
    if UNDECODABLE_KEY in value and len(value) == 1:
        return True
    arguments = value.get("arguments")
    return isinstance(arguments, dict) and UNDECODABLE_KEY in arguments and len(arguments) == 1


FAST_DECODE_FROM = 65_536
"""Stored text at least this long (a large write's arguments) is decoded by orjson when it can be (see below)."""

FAST_DECODE_CHECKED = 10_000
"""Values an orjson decoding looks at, at most, before it is trusted (beyond: the exact way)."""

_UNSURE = object()


def decode_stored_json(text: str | bytes) -> Any:
    """``json.loads`` for values read from the database that never raises: unusable ones become a placeholder.

    Unusable: not JSON, nested deeper than :data:`READ_MAX_DEPTH`, or holding a lone surrogate. The checks
    beyond parsing run only when the text could hold such a value (cheap scans of the raw text). A large text
    is decoded by orjson when that gives the same value (:func:`_decoded_by_orjson`): ``json.loads`` and the
    scans held the GIL ~6 ms a MB on the database thread while the window painted the selected request.
    """
    if len(text) >= FAST_DECODE_FROM:
        value = _decoded_by_orjson(text)
        if value is not _UNSURE:
            return value
    import json  # loaded by every reader of the database already (not the hook's lean path, which never reads here)

    try:
        value = json.loads(text)
    except RecursionError:
        return placeholder(f"stored JSON is nested too deep to read (more than {READ_MAX_DEPTH} levels)")
    except ValueError as exc:
        return placeholder(f"stored value is not valid JSON ({str(exc)[:120]})")
    raw = text if isinstance(text, str) else text.decode("utf-8", "replace")
    maybe_surrogate = "\\u" in raw and _pattern(_SURROGATE_ESCAPE).search(raw) is not None
    maybe_deep = len(raw) > READ_MAX_DEPTH and raw.count("[") + raw.count("{") > READ_MAX_DEPTH
    if maybe_surrogate or maybe_deep:
        problem = _read_problem(value, check_depth=maybe_deep, check_text=maybe_surrogate)
        if problem is not None:
            return placeholder(problem)
    return value


def _decoded_by_orjson(text: str | bytes) -> Any:
    """orjson's value for ``text`` when it is surely :func:`decode_stored_json`'s, else ``_UNSURE``.

    orjson refuses what the exact way must judge (lone surrogates, NaN and Infinity, nesting past 1,024) and reads
    integers beyond 64 bits as floats: an integral float that large is unsure. Nesting deeper than
    :data:`READ_MAX_DEPTH` is found by walking the containers, at most :data:`FAST_DECODE_CHECKED` values.
    """
    try:
        import orjson

        value = orjson.loads(text)
    except Exception:  # ImportError, or orjson refused the text
        return _UNSURE
    stack: list[tuple[Any, int]] = [(value, 1)]
    for _ in range(FAST_DECODE_CHECKED):
        if not stack:
            return value
        item, depth = stack.pop()
        kind = type(item)
        if kind is dict or kind is list:
            if depth > READ_MAX_DEPTH:
                return _UNSURE
            stack.extend((child, depth + 1) for child in (item.values() if kind is dict else item))
        elif kind is float and item.is_integer() and abs(item) >= 2**63:
            return _UNSURE
    return value if not stack else _UNSURE


def _read_problem(value: Any, *, check_depth: bool, check_text: bool) -> str | None:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if check_text and _pattern(_SURROGATE).search(item) is not None:
                return "stored value holds a lone UTF-16 surrogate (cannot be shown or hashed)"
        elif isinstance(item, dict):
            if check_depth and depth > READ_MAX_DEPTH:
                return f"stored JSON is nested deeper than {READ_MAX_DEPTH} levels"
            for key, child in item.items():
                if check_text and _pattern(_SURROGATE).search(key) is not None:
                    return "stored value holds a lone UTF-16 surrogate (cannot be shown or hashed)"
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            if check_depth and depth > READ_MAX_DEPTH:
                return f"stored JSON is nested deeper than {READ_MAX_DEPTH} levels"
            stack.extend((child, depth + 1) for child in item)
    return None


_LONG_DIGITS = r"[0-9]{19}"


def decode_stored_json_fast(text: str) -> Any:
    """:func:`decode_stored_json` with orjson's parser for the common case (audit verification reads millions).

    Text that could be nested too deep goes the exact way; anything orjson refuses (a lone surrogate, bad
    JSON) too, so the result is always what :func:`decode_stored_json` gives.
    """
    if len(text) > READ_MAX_DEPTH and text.count("[") + text.count("{") > READ_MAX_DEPTH:
        return decode_stored_json(text)
    if _pattern(_LONG_DIGITS).search(text):  # orjson reads an integer beyond 64 bits as a float: not the exact one
        return decode_stored_json(text)
    try:
        import orjson

        return orjson.loads(text)
    except Exception:  # ImportError, or orjson refused the text: the exact path decides
        return decode_stored_json(text)
