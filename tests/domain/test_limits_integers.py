"""Integers are measured in exact decimal digits, without ever turning a huge one into text."""

from __future__ import annotations

import sys

import pytest

from reviewer_app.domain.limits import MAX_INT_DIGITS, RequestRejected, check_json_value


@pytest.mark.parametrize("sign", [1, -1])
def test_exactly_the_limit_passes_and_one_digit_more_is_refused(sign: int) -> None:
    largest = sign * (10**MAX_INT_DIGITS - 1)  # 1,000 nines
    check_json_value({"n": largest}, "data")
    for digits in (MAX_INT_DIGITS + 1, MAX_INT_DIGITS + 2):
        with pytest.raises(RequestRejected) as refused:
            check_json_value({"n": sign * 10 ** (digits - 1)}, "data")
        assert refused.value.limit == "integer size"


def test_a_huge_integer_is_refused_without_being_printed() -> None:
    previous = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)  # the smallest Python allows: printing a 1,000-digit number would raise
    try:
        check_json_value({"n": 10**MAX_INT_DIGITS - 1}, "data")
        with pytest.raises(RequestRejected):
            check_json_value([-(10**50_000)], "data")
    finally:
        sys.set_int_max_str_digits(previous)


@pytest.mark.parametrize(
    "text",
    ["[123456789012345678901234567890]", '{"n": -18446744073709551616}', "9223372036854775808",
     '{"a": [1, {"b": 99999999999999999999999}]}', '["12345678901234567890123", 1]'],
)  # fmt: skip
def test_the_fast_reader_keeps_integers_beyond_64_bits_exact(text: str) -> None:
    """orjson reads an integer beyond 64 bits as a float; the fast reader must give what the exact one gives (the
    audit cross-check compares what was stored with what was shown)."""
    from reviewer_app.domain.limits import decode_stored_json, decode_stored_json_fast

    fast = decode_stored_json_fast(text)
    assert fast == decode_stored_json(text)
    assert repr(fast) == repr(decode_stored_json(text))
