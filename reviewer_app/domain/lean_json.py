"""``json.dumps`` and ``json.loads`` without importing ``json``, while nothing else has: the hook's lean path.

Why: importing ``json`` compiles six regular expressions and loads three modules (about 1.5 ms, a tenth of what a
settled hook call may add to the interpreter's start), yet ``json`` itself does its work in its C accelerator
``_json``. While ``json`` is not loaded, these functions call that accelerator with exactly the arguments ``json``
passes it (``JSONEncoder.iterencode``'s ``c_make_encoder``, ``JSONDecoder``'s ``make_scanner``), so the texts and
values are the same; whatever they cannot do the same way (an error, a BOM, no accelerator) is handed to ``json``
itself, which raises its own error with its own words. Once ``json`` is loaded, it is used. A test holds both
functions to ``json`` over generated values and texts, valid and not.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # no ``typing`` at run time (the hook's lean path imports this module)
if TYPE_CHECKING:
    from typing import Any

try:
    import _json
except ImportError:  # pragma: no cover - an interpreter without the accelerator: json's own code then
    _json = None  # type: ignore[assignment]

_WHITESPACE = " \t\n\r"
"""``json.decoder.WHITESPACE``'s characters."""
_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}
"""``json.decoder._CONSTANTS``: what ``loads`` reads these words as."""


class _ScannerContext:
    """What ``_json.make_scanner`` reads from ``JSONDecoder()`` (its defaults)."""

    __slots__ = ("object_hook", "object_pairs_hook", "parse_constant", "parse_float", "parse_int", "strict")

    def __init__(self) -> None:
        self.strict = True
        self.object_hook = None
        self.object_pairs_hook = None
        self.parse_float = float
        self.parse_int = int
        self.parse_constant = _CONSTANTS.__getitem__


_scanner: Any = None


def loads(text: str | bytes) -> Any:
    """``json.loads(text)`` (bytes go to ``json``, which tells their encoding)."""
    json = sys.modules.get("json")  # loaded: json itself (one look-up, as cheap as a call through here gets)
    if json is not None or _json is None or not isinstance(text, str) or text.startswith("\ufeff"):
        return (json or _json_module()).loads(text)
    global _scanner
    if _scanner is None:
        _scanner = _json.make_scanner(_ScannerContext())  # type: ignore[arg-type]  # the stub's duck type
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scanner(text, start)
    except Exception:  # not JSON (StopIteration included): json's own error and words
        return _json_module().loads(text)
    if text[end:].strip(_WHITESPACE):
        return _json_module().loads(text)  # "Extra data"
    return value


_encoders: dict[tuple[Any, ...], Any] = {}
"""Once ``json`` is loaded: its encoders by the arguments they were made with. ``json.dumps`` makes a new one per
call when any argument is not its default (the audit chain's canonical form), which cost as much as encoding a
call's arguments; an encoder keeps no state between calls."""
_ENCODERS_KEPT = 16


def dumps(
    value: Any,
    *,
    ensure_ascii: bool = True,
    sort_keys: bool = False,
    separators: tuple[str, str] | None = None,
    default: Any = None,
) -> str:
    """``json.dumps(value, …)`` with these arguments (the others at ``json``'s defaults)."""
    json = sys.modules.get("json")
    if json is not None or _json is None:
        key = (ensure_ascii, sort_keys, separators, default)
        encoder = _encoders.get(key)
        if encoder is None:
            encoder = (json or _json_module()).JSONEncoder(
                ensure_ascii=ensure_ascii, sort_keys=sort_keys, separators=separators, default=default
            )
            if len(_encoders) < _ENCODERS_KEPT:
                _encoders[key] = encoder
        return str(encoder.encode(value))  # what json.dumps does, with an encoder made once
    encode_string = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
    if isinstance(value, str):
        return str(encode_string(value))
    item_separator, key_separator = separators if separators is not None else (", ", ": ")
    try:
        encoder = _json.make_encoder(
            {}, _no_default if default is None else default, encode_string, None, key_separator, item_separator,
            sort_keys, False, True,
        )  # fmt: skip
        return "".join(encoder(value, 0))
    except Exception:  # a value json refuses (not serializable, circular): its own error and words
        return str(
            _json_module().dumps(
                value, ensure_ascii=ensure_ascii, sort_keys=sort_keys, separators=separators, default=default
            )
        )


def _no_default(value: Any) -> Any:
    """``JSONEncoder.default``: no other type is serializable (json raises its own error for it)."""
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def decode_error() -> type[ValueError]:
    """``json.JSONDecodeError``, imported when an ``except`` clause asks (only once something failed)."""
    return _json_module().JSONDecodeError  # type: ignore[no-any-return]


def _json_module() -> Any:
    import json

    return json


__all__ = ["decode_error", "dumps", "loads"]
