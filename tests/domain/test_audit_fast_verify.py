"""The fast checks ``audit verify`` runs a million times agree with the exact chain functions, value for value."""

from __future__ import annotations

import enum
import json
import math
from typing import Any

import pytest

from reviewer_app.domain.audit import (
    audit_fields,
    audit_row_hash,
    canonical_json_bytes,
    row_hash_matches,
    shown_digest_matches,
)
from reviewer_app.domain.decisions import args_digest, canonical_json
from reviewer_app.domain.limits import decode_stored_json, decode_stored_json_fast, is_undecodable

KEY = b"k" * 32
VALUES: list[Any] = [
    {"command": "ls"},
    {"b": 1, "a": [1, 2.5, None, True], "z": {"y": "ü", "x": "\u2028 line sep"}},
    {"big": 2**70, "neg": -(2**64)},  # beyond orjson's 64-bit integers: the exact path
    {"floats": [1e16, 1e-7, 0.1, 123456789.125, -0.0]},  # exponent forms differ between encoders
    {"control": "\x00\x1f\x7f", "emoji": "😀", "quote": '"\\'},
    ["top", "level", "list"],
    "just a string",
    12,
    {"deep": [[[[["x"]]]]]},
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_shown_digest_agrees_with_the_exact_digest(value: Any) -> None:
    digest = args_digest(value)
    assert shown_digest_matches(value, digest)
    assert not shown_digest_matches(value, "0" * 64)
    assert not shown_digest_matches({"changed": value}, digest)


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
@pytest.mark.parametrize("key", [KEY, None], ids=["keyed", "plain"])
def test_row_hash_agrees_with_the_exact_hash(value: Any, key: bytes | None) -> None:
    fields = audit_fields("h1", "edit", "dana", 1_700_000_000_123, args_digest(value), value, "msg ü")
    row_hash = audit_row_hash("p" * 64, fields, key)
    assert row_hash_matches("p" * 64, fields, key, row_hash)
    assert not row_hash_matches("q" * 64, fields, key, row_hash)  # another predecessor
    assert not row_hash_matches("p" * 64, {**fields, "reviewer": "mallory"}, key, row_hash)
    assert not row_hash_matches("p" * 64, fields, None if key else KEY, row_hash)  # keyed vs plain


@pytest.mark.parametrize(
    "text",
    [
        json.dumps({"a": "b"}),
        '{"a": "\\ud800"}',  # a lone surrogate: the placeholder, as the exact decoder gives
        "not json",
        "[" * 300 + "]" * 300,  # deeper than the read limit
        '{"decision": "approve", "decision": "reject"}',  # duplicate keys: the last wins, as json.loads
        '{"\\u0064ecision": "reject"}',
        json.dumps({"n": 2**70, "f": 1e16}),
    ],
)
def test_fast_decoding_gives_what_the_exact_decoding_gives(text: str) -> None:
    fast, exact = decode_stored_json_fast(text), decode_stored_json(text)
    assert fast == exact
    assert is_undecodable(fast) == is_undecodable(exact)


class Level(enum.IntEnum):
    LOW = 1


class Opaque:
    def __str__(self) -> str:
        return "opaque"


HASHED: list[Any] = [
    *VALUES,
    {"content": 'line\n"quoted" é\t\x00\x1b\x7f\u2028😀' * 20_000, "path": "big.txt"},  # a big write
    {"z": 1, "é": 2, "😀": 3, "\uffff": 4, "": 5, "A": 6, "a": {"b": [1e-05, 1e16, 0.5]}},  # key order, floats
    {"nan": math.nan, "inf": math.inf, "-inf": -math.inf},  # json.dumps prints NaN and Infinity, orjson null
    {1: "integer keys", 3: "print as strings"},
    {"tuple": (1, 2), "enum": Level.LOW, "object": Opaque(), "flag": True, "none": None},
    {"small floats": [1e-05] * 20_000},  # more values than are checked one by one: the exact path
    [2**63 - 1, -(2**63), 2**64 - 1, 2**64, -(2**63) - 1],
]


@pytest.mark.parametrize("value", HASHED, ids=range(len(HASHED)))
def test_canonical_bytes_are_the_exact_canonical_text(value: Any) -> None:
    """The detail pane hashes a selected request's arguments this way: an approval names exactly these bytes."""
    assert canonical_json_bytes(value) == canonical_json(value).encode("utf-8")
