"""Large stored values (a 1 MB write's arguments) decode fast and to exactly what ``json.loads`` and the checks give.

The detail pane reads the selected request while the window repaints; ``json.loads`` and the scans of the raw text
held the GIL ~6 ms for 1 MB. Whatever way a value is decoded, the result is the same value, or the same placeholder.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from reviewer_app.domain.limits import READ_MAX_DEPTH, decode_stored_json, is_undecodable

PAD = "a line an agent wants to write into a file\n" * 3_000  # ~130 KB: a value this size takes the fast way


def stored(value_text: str) -> str:
    """A large stored value with ``value_text`` (raw JSON) beside a long string."""
    return '{"content": ' + json.dumps(PAD) + ', "value": ' + value_text + "}"


def nested(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


@pytest.mark.parametrize(
    ("value_text", "expected"),
    [
        ('{"path": "src/a.py", "n": 3, "f": 0.5, "ok": true, "none": null, "list": [1, "x"]}', None),
        ('"😀 \\u00e9 \\ud83d\\ude00 \\n \\u0000"', None),
        ('{"a": 1, "b": 2, "a": 3}', None),  # the last duplicate wins, in the first one's place
        (str(2**64 + 1), 2**64 + 1),  # orjson reads integers beyond 64 bits as floats: the exact way
        (str(-(2**63) - 1), -(2**63) - 1),
        (str(2**64 - 1), 2**64 - 1),
        ("1e19", 1e19),
        ("123456789012345678901234567890.5", 123456789012345678901234567890.5),
        ("-0.0", -0.0),
        (nested(READ_MAX_DEPTH - 5), None),
    ],
)
def test_a_large_value_decodes_to_what_json_loads_gives(value_text: str, expected: Any) -> None:
    text = stored(value_text)
    decoded = decode_stored_json(text)
    assert decoded == json.loads(text)
    assert list(decoded) == ["content", "value"] and decoded["content"] == PAD
    if expected is not None:
        assert decoded["value"] == expected and type(decoded["value"]) is type(expected)
        assert math.copysign(1, decoded["value"]) == math.copysign(1, expected)


def test_nan_and_infinity_decode_as_json_loads_reads_them() -> None:
    decoded = decode_stored_json(stored("[NaN, Infinity, -Infinity, 1e400]"))
    assert math.isnan(decoded["value"][0]) and decoded["value"][1:] == [math.inf, -math.inf, math.inf]


@pytest.mark.parametrize(
    "value_text",
    [
        nested(READ_MAX_DEPTH + 5),  # deeper than a reader may go
        nested(2_000),  # deeper than Python's recursion limit and orjson's
        '{"key": "\\ud800 a lone surrogate"}',
        '{"\\udfff": "a lone surrogate in a key"}',
        "[" + ", ".join(["0"] * 20_000) + ", " + nested(READ_MAX_DEPTH + 5) + "]",  # deep after many values
        "[1, 2,]",
    ],
)
def test_a_large_unusable_value_is_the_placeholder(value_text: str) -> None:
    assert is_undecodable(decode_stored_json(stored(value_text)))


def test_bytes_decode_as_text_does() -> None:
    text = stored('{"path": "é"}')
    assert decode_stored_json(text.encode()) == decode_stored_json(text) == json.loads(text)
