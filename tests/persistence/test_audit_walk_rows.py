"""The walk's per-row checks, fast forms inline, give exactly the verdict of the exact checks (issue 29, item 7).

``check_rows`` hashes a million rows with orjson's canonical bytes and the key's padded SHA-256 states; a row
whose fast form does not match goes through ``shown_digest_matches`` and ``row_hash_matches``. Every edge the
fast forms could get wrong (unicode, control characters, NULL against empty text, the JSON text ``null``, numbers
orjson cannot write, JSON nested too deep, a lone surrogate, hashes in upper case, unkeyed rows before
``audit_keyed_from``) is checked against the exact checks applied row by row, untouched and tampered, in the middle
of a batch.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.domain.audit import (
    GENESIS_HASH,
    audit_fields,
    audit_row_hash,
    row_hash_matches,
    shown_digest_matches,
)
from reviewer_app.domain.decisions import args_digest, canonical_json
from reviewer_app.domain.limits import decode_stored_json
from reviewer_app.domain.records import NewRequest
from reviewer_app.persistence.audit_seal import AuditSeal
from reviewer_app.persistence.audit_walk import (
    LINK_BROKEN,
    ROW_EDITED,
    SHOWN_CHANGED,
    BatchResult,
    KeyedHash,
    anchor_differs,
    check_rows,
)
from reviewer_app.persistence.store import Store

KEY = bytes(range(32))
KEYED_FROM = 3  # rows 1 and 2 predate keying: plain SHA-256

# (shown arguments, edited arguments, message) of each row the writer hashed; stored as the app stores them.
WRITTEN: list[tuple[Any, Any, str | None]] = [
    ({"command": "ls"}, None, None),
    ({"path": "café/naïve — 日本語 🚀", "b": 1, "a": [1.5, -0.0, 10**18]}, None, "ok"),
    ({"command": "printf 'a\\tb\\n\x01\x1f\x7f\u2028'"}, {"command": "echo \x00 \u2029"}, "tab\there\nline"),
    (None, None, ""),
    ({"z": {"y": {"x": None}}, "emoji": "\U0001f600"}, {"b": 2, "a": 1}, 'reject: "quoted" \\ back'),
    ({"big": 2**70, "float": 1e300}, {"id": -(2**64)}, None),  # integers orjson reads as floats
    ({"n": 0.1, "e": 1e-7}, None, "no"),
    ({"command": "tail"}, None, None),
]


def _row(index: int, prev: str, shown: Any, edited: Any, message: str | None) -> tuple[Any, ...]:
    shown_sha = None if shown is None else hashlib.sha256(canonical_json(shown).encode("utf-8")).hexdigest()
    at_ms = 1_700_000_000_000 + index
    fields = audit_fields(f"h{index}", "edit" if edited else "approve", "dana", at_ms, shown_sha, edited, message)
    row_hash = audit_row_hash(prev, fields, KEY if index >= KEYED_FROM else None)
    shown_text = None if shown is None else json.dumps(shown)
    return (
        index, f"h{index}", fields["decision"], "dana", at_ms, shown_text, shown_sha, json.dumps(edited), message,
        prev, row_hash, None, None, None,
    )  # fmt: skip


def written_rows() -> list[tuple[Any, ...]]:
    rows, prev = [], GENESIS_HASH
    for index, (shown, edited, message) in enumerate(WRITTEN, start=1):
        rows.append(_row(index, prev, shown, edited, message))
        prev = rows[-1][10]
    return rows


def exact_check(rows: Sequence[Sequence[Any]], anchors: dict[int, str]) -> tuple[int, int, str] | None:
    """The checks one row at a time with the exact functions alone (JSON read by the exact decoder): the verdict
    the walk must give."""
    prev_hash = None
    for count, row in enumerate(rows):
        row_id, hitl_id, decision, reviewer, at_ms, shown, shown_sha, edited, message, row_prev, row_hash = row[:11]
        position = count + 1
        if count and row_prev != prev_hash:
            return (count, row_id, LINK_BROKEN)
        if not shown_digest_matches(None if shown is None else decode_stored_json(shown), shown_sha):
            return (count, row_id, SHOWN_CHANGED)
        edited_args = None if edited is None or edited == "null" else decode_stored_json(edited)
        fields = audit_fields(hitl_id, decision, reviewer, at_ms, shown_sha, edited_args, message)
        if not row_hash_matches(row_prev, fields, KEY if position >= KEYED_FROM else None, row_hash):
            return (count, row_id, ROW_EDITED)
        if anchors.get(position, row_hash) != row_hash:
            return (count, row_id, anchor_differs(position))
        prev_hash = row_hash
    return None


def _set(index: int, column: int, value: Any) -> Callable[[list[tuple[Any, ...]]], None]:
    def change(rows: list[tuple[Any, ...]]) -> None:
        row = list(rows[index])
        row[column] = value
        rows[index] = tuple(row)

    return change


def _rewritten(index: int, shown: Any, edited: Any, message: str | None) -> Callable[[list[tuple[Any, ...]]], None]:
    """Row ``index`` written anew (with the key) in place of the original: its successor's link breaks."""

    def change(rows: list[tuple[Any, ...]]) -> None:
        rows[index] = _row(index + 1, rows[index][9], shown, edited, message)

    return change


SHOWN, SHOWN_SHA, EDITED, MESSAGE, PREV, ROW_HASH, AT_MS = 5, 6, 7, 8, 9, 10, 4
CHANGES: dict[str, Callable[[list[tuple[Any, ...]]], None]] = {
    "untouched": lambda rows: None,
    "unicode message changed in the middle": _set(2, MESSAGE, "tab\there\nlinE"),
    "message NULL instead of empty": _set(3, MESSAGE, None),
    "message empty instead of NULL": _set(0, MESSAGE, ""),
    "shown arguments reordered and respaced (same value)": _set(
        1, SHOWN, '{"b":1,"a":[1.5,-0.0,1000000000000000000],"path":"caf\\u00e9/na\\u00efve \\u2014 日本語 🚀"}'
    ),
    "shown arguments changed by one character": _set(1, SHOWN, json.dumps({"path": "cafe", "b": 1, "a": [1.5]})),
    "shown arguments NULL": _set(0, SHOWN, None),
    "shown digest NULL": _set(0, SHOWN_SHA, None),
    "shown text 'null' with the digest of null": lambda rows: (
        _set(0, SHOWN, "null")(rows),
        _set(0, SHOWN_SHA, hashlib.sha256(b"null").hexdigest())(rows),
    )[0],
    "shown text that is not JSON": _set(7, SHOWN, '{"command": "tail"'),
    "shown text with a lone surrogate": _set(7, SHOWN, '{"command": "\\ud800"}'),
    "shown text nested too deep": _set(7, SHOWN, "[" * 250 + "]" * 250),
    "edited NULL instead of the text 'null' (same value)": _set(0, EDITED, None),
    "edited arguments changed": _set(4, EDITED, '{"a": 1, "b": 3}'),
    "edited arguments respaced (same value)": _set(4, EDITED, '{ "b" : 2 , "a" : 1 }'),
    "row hash in upper case": lambda rows: _set(5, ROW_HASH, rows[5][ROW_HASH].upper())(rows),
    "predecessor in upper case": lambda rows: _set(6, PREV, rows[6][PREV].upper())(rows),
    "at_ms as text": _set(3, AT_MS, "1700000000004"),
    "an unkeyed row rewritten (before keying)": _rewritten(1, {"command": "rm -rf /"}, None, "ok"),
    "a keyed row rewritten without the key": lambda rows: _set(
        4,
        ROW_HASH,
        audit_row_hash(
            rows[4][PREV],
            audit_fields("h5", "edit", "dana", rows[4][AT_MS], rows[4][SHOWN_SHA], {"a": 9}, rows[4][MESSAGE]),
        ),
    )(rows),
    "a row rewritten with the key, its successor then breaks": _rewritten(3, {"x": "y"}, None, "forged"),
    "big integers orjson reads as floats, changed": _set(5, SHOWN, json.dumps({"big": 2**70 + 1, "float": 1e300})),
    "big integers orjson reads as floats, edit changed": _set(5, EDITED, json.dumps({"id": -(2**64) - 1})),
}


def _case_rows(case: str) -> list[tuple[Any, ...]]:
    rows = written_rows()
    CHANGES[case](rows)
    return rows


@pytest.mark.parametrize("case", sorted(CHANGES))
def test_the_walk_gives_the_exact_checks_verdict(case: str) -> None:
    rows = _case_rows(case)
    expected = exact_check(rows, {})
    assert (case == "untouched" or case.endswith("(same value)")) == (expected is None), expected
    result = check_rows(rows, 0, KEY, KEYED_FROM, {})
    assert result.problem == expected
    if expected is None:
        assert (result.count, result.last_hash) == (len(rows), rows[-1][ROW_HASH])


def test_an_anchor_that_differs_in_the_middle_of_a_batch() -> None:
    rows = written_rows()
    anchors = {2: rows[1][ROW_HASH], 5: "0" * 64}
    expected = exact_check(rows, anchors)
    assert expected == (4, 5, anchor_differs(5))
    assert check_rows(rows, 0, KEY, KEYED_FROM, anchors).problem == expected


def test_a_batch_in_the_middle_of_the_chain_reports_its_own_positions() -> None:
    rows = written_rows()
    _set(2, MESSAGE, "changed")(rows)
    result = check_rows(rows[1:], 1, KEY, KEYED_FROM, {})
    assert result == BatchResult(2, 2, rows[0][ROW_HASH], rows[1][ROW_HASH], (1, 3, ROW_EDITED), rows[2][AT_MS])


@pytest.mark.parametrize("length", [16, 32, 63, 64, 65, 200])
def test_the_keyed_hash_is_hmac_sha256(length: int) -> None:
    key = os.urandom(length)
    for payload in (b"", b"x", os.urandom(55), os.urandom(64), os.urandom(1000)):
        assert KeyedHash(key).hexdigest(payload) == hmac.new(key, payload, hashlib.sha256).hexdigest()


def test_arguments_with_big_integers_and_unicode_verify_on_both_databases(any_db: str, tmp_path: Path) -> None:
    """An untouched decision whose arguments hold an integer beyond 64 bits read as tampered (orjson reads it as a
    float); unicode and an empty message went the fast way already."""
    seal = AuditSeal(tmp_path / "audit.key", tmp_path / "anchors")
    store = Store.open(any_db, seal=seal)
    try:
        login = store.database_login() or "postgres"
        for index, shown in enumerate([{"id": 2**70, "path": "naïve/日本語 🚀"}, {"n": -(2**64) - 1}, {"c": "ls"}]):
            with store.transaction() as tx:
                tx.requests.create(NewRequest(f"h{index}", "tool_approval", "s", "i", data={"arguments": shown}))
                decision = {"decision": "reject", "message": ""} if index == 2 else {"decision": "approve"}
                tx.requests.decide(f"h{index}", {**decision, "args_sha256": args_digest(shown)}, reviewer=login)
        report = store.audit.verify()
        assert report.ok, report.problem
        assert report.rows_checked == 3
    finally:
        store.close()
