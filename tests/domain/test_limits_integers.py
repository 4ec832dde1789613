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
