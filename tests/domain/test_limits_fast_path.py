"""The limits' fast path for small plain values gives exactly the full walk's verdict (and error message)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from reviewer_app.domain.limits import (
    MAX_DEPTH,
    MAX_ID_CHARS,
    MAX_INT_DIGITS,
    RequestRejected,
    check_identifier,
    check_json_value,
    check_request,
    plain_json_size,
    walk_json_value,
)

_TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", "plain", "\ud800", "a\udfffb", "\x00", "ü", "\\ud800", "line\n" * 3]),
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    _TEXT,
    st.integers(min_value=-(10**6), max_value=10**6),
    st.sampled_from([10**MAX_INT_DIGITS - 1, -(10**MAX_INT_DIGITS), 10**MAX_INT_DIGITS, 2**70]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.builds(bytes, st.binary(max_size=3)),
    st.builds(set),
)
_KEYS = st.one_of(_TEXT, st.integers(-3, 3), st.none(), st.booleans(), st.tuples(st.integers(0, 2)))


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(_KEYS, children, max_size=4),
    )


_VALUES = st.recursive(_SCALARS, _containers, max_leaves=30)


def _verdict(check: Any, value: Any, max_depth: int, max_bytes: int) -> tuple[str, str] | None:
    try:
        check(value, "data", max_depth=max_depth, max_bytes=max_bytes)
    except RequestRejected as exc:
        return exc.limit, str(exc)
    return None


@settings(max_examples=1500, deadline=None)
@given(
    value=_VALUES,
    max_depth=st.integers(min_value=0, max_value=6) | st.just(MAX_DEPTH),
    max_bytes=st.integers(min_value=0, max_value=200) | st.just(2000) | st.just(16 * 1024 * 1024),
)
def test_the_checked_verdict_is_the_full_walks(value: Any, max_depth: int, max_bytes: int) -> None:
    assert _verdict(check_json_value, value, max_depth, max_bytes) == _verdict(
        walk_json_value, value, max_depth, max_bytes
    )


@settings(max_examples=500, deadline=None)
@given(value=_VALUES, room=st.integers(min_value=1, max_value=6))
def test_what_the_fast_path_accepts_the_full_walk_accepts(value: Any, room: int) -> None:
    size = plain_json_size(value, room)
    if size >= 0:
        assert _verdict(walk_json_value, value, room, size) is None


def test_a_deep_or_nested_self_reference_falls_back_to_the_full_walk() -> None:
    looped: dict[str, Any] = {}
    looped["again"] = looped
    assert plain_json_size(looped, MAX_DEPTH) == -1
    assert _verdict(check_json_value, looped, MAX_DEPTH, 1 << 24) == _verdict(
        walk_json_value, looped, MAX_DEPTH, 1 << 24
    )
    deep: Any = "leaf"
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]
    assert _verdict(check_json_value, deep, MAX_DEPTH, 1 << 24) is not None


def test_a_typical_tool_call_takes_the_fast_path() -> None:
    data = {
        "arguments": {"path": "notes/file_1.txt", "content": "line 1\n" * 20, "flags": [1, True, None]},
        "schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
    assert plain_json_size(data, MAX_DEPTH) >= 0
    assert plain_json_size({"message": None, "edited_args": None, "extra": {}}, MAX_DEPTH) >= 0


_REQUIRED = ("hitl_id", "hitl_type", "session_id", "invocation_id")
_OPTIONAL = ("tool_name", "block_id", "checkpoint_id", "tool_call_id", "node_id", "resume_mode")
_IDENTIFIER_VALUES = st.one_of(
    st.none(),
    st.text(max_size=6),
    st.sampled_from(["", "x" * MAX_ID_CHARS, "x" * (MAX_ID_CHARS + 1), "a\x00b", "\udc80", "é", "plain-id"]),
    st.integers(-1, 1),
    st.builds(bytes, st.binary(max_size=2)),
)


def _each_field_checked(fields: dict[str, Any]) -> None:
    """check_request as the separate checks it stands for, in its order."""
    for name in _REQUIRED:
        check_identifier(fields.get(name), name)
    for name in _OPTIONAL:
        check_identifier(fields.get(name), name, required=False)
    for name in ("data", "metadata", "tool_state"):
        if fields.get(name) is not None:
            check_json_value(fields[name], name)


@settings(max_examples=1500, deadline=None)
@given(
    fields=st.fixed_dictionaries(
        {name: _IDENTIFIER_VALUES for name in _REQUIRED + _OPTIONAL},
        optional={"data": _VALUES, "metadata": _VALUES},
    )
)
def test_a_request_is_checked_as_each_of_its_fields_is(fields: dict[str, Any]) -> None:
    def verdict(check: Any) -> tuple[str, str] | None:
        try:
            check(fields)
        except RequestRejected as exc:
            return exc.limit, str(exc)
        return None

    assert verdict(check_request) == verdict(_each_field_checked)
