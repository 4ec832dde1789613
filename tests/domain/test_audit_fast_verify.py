"""The fast checks ``audit verify`` runs a million times agree with the exact chain functions, value for value."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reviewer_app.domain.audit import audit_fields, audit_row_hash, row_hash_matches, shown_digest_matches
from reviewer_app.domain.decisions import args_digest
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
