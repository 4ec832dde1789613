"""Audit exports leave Reviewer as files people open in spreadsheets: formulas inert, credentials redacted."""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path

import pytest

from reviewer_app.domain.audit_export import COLUMNS, csv_cell, format_entries
from reviewer_app.domain.records import AuditEntry
from reviewer_app.domain.sanitize import REDACTED, redact_data


def entry(message: str | None, edited: object = None) -> AuditEntry:
    return AuditEntry(1, "h1", "reject", "alice", 1_700_000_000_000, {"a": 1}, "abc", edited, message, "p", "r")


@pytest.mark.parametrize("text", ["=1+1", "+1", "-2", "@A1", "\tx", "\rx"])
def test_formula_starts_are_escaped(text: str) -> None:
    assert csv_cell(text) == "'" + text


@pytest.mark.parametrize("value", ["plain", "a=b", "", None, 5, "1-2"])
def test_other_cells_are_kept(value: object) -> None:
    assert csv_cell(value) == ("" if value is None else str(value))


def test_redact_data_keeps_structure() -> None:
    data = {"password": "hunter22", "nested": [{"token": "abcd1234"}, "Bearer abcdefghijklmnop"], "n": 3, "ok": "x"}
    assert redact_data(data) == {
        "password": REDACTED,
        "nested": [{"token": REDACTED}, f"Bearer {REDACTED}"],
        "n": 3,
        "ok": "x",
    }


def test_rows_in_both_formats() -> None:
    rows = [entry('=HYPERLINK("http://x")', {"api_key": "secret-value", "cmd": "-rf"}), entry(None)]
    jsonl = [json.loads(line) for line in format_entries(rows, "jsonl").splitlines()]
    assert list(jsonl[0]) == list(COLUMNS) and jsonl[0]["edited_args"]["api_key"] == REDACTED
    parsed = list(csv.reader(format_entries(rows, "csv").splitlines()))
    assert parsed[0][COLUMNS.index("message")] == '\'=HYPERLINK("http://x")'
    assert json.loads(parsed[0][COLUMNS.index("edited_args")]) == {"api_key": REDACTED, "cmd": "-rf"}
    assert parsed[1][COLUMNS.index("message")] == "" and parsed[1][COLUMNS.index("edited_args")] == ""
    with pytest.raises(ValueError, match="unknown export format"):
        format_entries(rows, "xlsx")


def test_cli_export_uses_the_same_rules(tmp_path: Path) -> None:
    from reviewer_app.cli import main
    from reviewer_app.hitl import SQLHITLBackend

    db = tmp_path / "r.db"

    async def seed() -> None:
        async with SQLHITLBackend(db, reviewer="alice") as backend:
            await backend.create(
                hitl_id="h1",
                hitl_type="tool_approval",
                session_id="s",
                invocation_id="i",
                data={"arguments": {}},
                tool_name="t",
            )
            await backend.respond("h1", {"decision": "reject", "message": "=cmd token=abcdefgh12"})

    asyncio.run(seed())
    out = tmp_path / "a.csv"
    assert main(["audit", "export", "--format", "csv", "-o", str(out), "--db", str(db)]) == 0
    with out.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows[0]["message"] == f"'=cmd token={REDACTED}"
