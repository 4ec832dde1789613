"""The window's item models on their own, over rows held in memory (no window, no database), each checked by
QAbstractItemModelTester while it changes: the tree base, History, Rules, Audit and the request list."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest
from PySide6.QtCore import QModelIndex, Qt

from reviewer_app.domain.history import HistoryCursor, HistoryEntry, HistoryPage, HistoryQuery
from reviewer_app.domain.records import AuditEntry
from reviewer_app.domain.risk import Risk
from reviewer_app.domain.rules import Rule
from reviewer_app.ui.audit.model import ID_ROLE, AuditModel
from reviewer_app.ui.history.model import AUDIT_ID_ROLE, COL_BY, COL_DECISION, COL_SUMMARY, HistoryModel
from reviewer_app.ui.models.request_list import COL_RISK, COL_STATUS, COL_WHAT, HITL_ID_ROLE, RequestListModel
from reviewer_app.ui.models.tree_model import ROOT_KEY, TreeItemModel
from reviewer_app.ui.rules.model import COL_EFFECT, COL_FINDINGS, COL_HITS, COL_PATTERN, RULE_ID_ROLE, RulesModel

A_YEAR_AGO_MS = 1_700_000_000_000  # ages in days: a cell's text does not change while the tester reads it twice


# -- the tree base ---------------------------------------------------------------------------------------------
class Outline(TreeItemModel):
    """Headings (keys 1, 2, …) with items under them: the smallest tree the base supports."""

    headers = ("Title", "Size")

    def __init__(self) -> None:
        super().__init__()
        self.headings: list[tuple[str, list[str]]] = []

    def child_total(self, key: int) -> int:
        return len(self.headings) if key == ROOT_KEY else len(self.headings[key - 1][1])

    def child_key(self, parent_key: int, row: int) -> int | None:
        return row + 1 if parent_key == ROOT_KEY and 0 <= row < len(self.headings) else None

    def place_of(self, key: int) -> tuple[int, int] | None:
        return (key - 1, ROOT_KEY)

    def data(self, index: Any, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or role != Qt.ItemDataRole.DisplayRole:
            return None
        if index.internalId() == ROOT_KEY:
            title, items = self.headings[index.row()]
            return title if index.column() == 0 else str(len(items))
        item = self.headings[index.internalId() - 1][1][index.row()]
        return item if index.column() == 0 else str(len(item))

    def add_heading(self, title: str) -> None:
        row = len(self.headings)
        self.beginInsertRows(QModelIndex(), row, row)
        self.headings.append((title, []))
        self.endInsertRows()

    def add_item(self, heading: int, item: str) -> None:
        items = self.headings[heading][1]
        self.beginInsertRows(self.index(heading, 0), len(items), len(items))
        items.append(item)
        self.endInsertRows()


def test_the_tree_base_answers_index_and_parent_for_every_level(qtmodeltester: Any) -> None:
    model = Outline()
    qtmodeltester.check(model)
    model.add_heading("fruit")
    model.add_heading("tools")
    model.add_item(0, "apple")
    model.add_item(0, "pear")
    model.add_item(1, "saw")
    apple = model.index(0, 0, model.index(0, 0))
    assert apple.data() == "apple" and model.parent(apple) == model.index(0, 0)
    assert model.parent(model.index(1, 1)) == QModelIndex()  # a heading's parent is the root
    assert model.index(2, 0, model.index(0, 0)) == QModelIndex()  # no third fruit
    assert model.index(0, 0, apple) == QModelIndex() and not model.hasChildren(apple)  # items are leaves
    assert model.index(0, 2) == QModelIndex()  # no third column
    assert model.headerData(1, Qt.Orientation.Horizontal) == "Size"
    assert model.parent() is None  # without an argument: the QObject parent
    assert [model.rowCount(model.index(row, 0)) for row in range(2)] == [2, 1]


# -- History ---------------------------------------------------------------------------------------------------
def entry(n: int, decision: str = "approve", reason: str | None = None) -> HistoryEntry:
    return HistoryEntry(
        audit_id=n,
        decided_at_ms=A_YEAR_AGO_MS - n * 1000,
        hitl_id=f"h{n}",
        decision=decision,
        reviewer="alice",
        reason=reason,
        edited=False,
        tool_name="Bash",
        summary=f"echo {n}\nsecond line",
        agent="claude-code",
    )


class MemoryHistory:
    """The backend's ``history_page`` over a list, newest first, with the same keyset cursor."""

    def __init__(self, entries: list[HistoryEntry]) -> None:
        self.entries = entries
        self.reads: list[HistoryCursor | None] = []

    async def page(self, query: HistoryQuery, after: HistoryCursor | None, limit: int) -> HistoryPage:
        self.reads.append(after)
        rows = [e for e in self.entries if not query.decisions or e.decision in query.decisions]
        if after is not None:
            rows = [e for e in rows if (e.decided_at_ms, e.audit_id) < (after.decided_at_ms, after.audit_id)]
        chunk = rows[:limit]
        return HistoryPage(chunk, chunk[-1].cursor if len(rows) > limit else None)


def test_history_model_pages_and_filters_in_memory(qtbot: Any, qloop: Any, qtmodeltester: Any) -> None:
    source = MemoryHistory([entry(n, "reject" if n % 3 == 0 else "approve", reason="no") for n in range(1, 151)])
    model = HistoryModel(source.page, asyncio.ensure_future)
    qtmodeltester.check(model)
    with qtbot.waitSignal(model.queryApplied) as applied:
        model.set_query(HistoryQuery())
    assert applied.args == [100] and model.has_more and model.loaded_once
    first = model.index(0, 0)
    assert first.data(AUDIT_ID_ROLE) == 1
    assert model.index(0, COL_SUMMARY).data() == "echo 1 second line"  # one line in the list
    assert model.index(0, COL_BY).data() == model.entry(0).decided_by_words  # type: ignore[union-attr]
    assert model.index(2, COL_DECISION).data() == model.entry(2).decision_words  # type: ignore[union-attr]
    assert model.canFetchMore()
    with qtbot.waitSignal(model.pageAppended) as appended:
        model.fetchMore()
    assert appended.args == [50] and model.rowCount() == 150 and not model.has_more
    assert source.reads == [None, entry(100).cursor]
    with qtbot.waitSignal(model.queryApplied) as applied:
        model.set_query(HistoryQuery(decisions=("reject",)))
    assert applied.args == [50] and {e.decision for e in model.entries} == {"reject"}
    assert model.row_of(3) == 0 and model.row_of(1) == -1


def test_history_model_says_when_a_page_cannot_be_read(qtbot: Any, qloop: Any, qtmodeltester: Any) -> None:
    async def broken(query: HistoryQuery, after: HistoryCursor | None, limit: int) -> HistoryPage:
        raise OSError("disk I/O error")

    model = HistoryModel(broken, asyncio.ensure_future)
    qtmodeltester.check(model)
    with qtbot.waitSignal(model.failed) as failed:
        model.set_query(HistoryQuery())
    assert failed.args == ["Could not read the history: disk I/O error"]
    assert model.rowCount() == 0 and not model.loading


# -- Rules -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StoredRuleRow:
    rule: Rule
    created_by: str | None = "alice"
    revoked_at: float | None = None
    hit_count: int = 0
    last_hit_at: float | None = None


def test_rules_model_rows_states_and_findings(qtmodeltester: Any) -> None:
    model = RulesModel()
    model.now = lambda: 2_000_000_000.0
    qtmodeltester.check(model)
    allow = Rule("allow", "Bash(git status)", id="r1", created_at=1_900_000_000)
    deny = Rule("deny", "Bash(rm:*)", id="r2")
    model.set_rules([StoredRuleRow(allow, hit_count=3, last_hit_at=1_999_999_940.0), StoredRuleRow(deny)])
    assert [model.index(row, COL_PATTERN).data() for row in range(2)] == ["Bash(git status)", "Bash(rm:*)"]
    assert model.index(0, COL_HITS).data() == "3" and model.index(0, 0).data(RULE_ID_ROLE) == "r1"
    # Same rules, new counts: cells change, rows stay (no reset while the operator reads the table).
    model.set_rules([StoredRuleRow(allow, hit_count=4), StoredRuleRow(deny, revoked_at=1_999_999_000.0)])
    assert model.index(0, COL_HITS).data() == "4"
    assert model.index(1, COL_EFFECT).data() == "deny (revoked)"
    model.findings = lambda rule_id: ["never matches"] if rule_id == "r2" else []
    model.findings_changed()
    assert model.index(1, COL_FINDINGS).data() == "never matches"
    assert model.index(0, COL_FINDINGS).data(Qt.ItemDataRole.ToolTipRole) == "No findings"
    model.set_rules([StoredRuleRow(deny)])
    assert model.rowCount() == 1 and model.row_of("r2") == 0 and model.row_of("r1") == -1


# -- Audit -----------------------------------------------------------------------------------------------------
def audit_row(n: int) -> AuditEntry:
    return AuditEntry(
        id=n,
        hitl_id=f"h{n}",
        decision="approve",
        reviewer="alice",
        at_ms=A_YEAR_AGO_MS + n,
        shown_args={"command": "ls"},
        shown_args_sha256=None,
        edited_args=None,
        message="token=ghp_abcdefghijklmnopqrstuvwxyz0123456789 here" if n == 2 else None,
        prev_hash="0" * 64,
        row_hash=f"{n:064x}",
    )


def test_audit_model_pages_marks_and_resets(qtmodeltester: Any) -> None:
    asked: list[int] = []
    model = AuditModel(asked.append, page_size=3)
    qtmodeltester.check(model)  # the tester itself may ask for the next page (fetchMore)

    def next_page(page: list[AuditEntry]) -> None:
        if not model.loading:
            model.fetchMore()
        assert model.loading and not model.canFetchMore()  # one page in flight at a time
        assert asked[-1] == model.last_id
        model.append_page(model.last_id, page)

    next_page([audit_row(1), audit_row(2), audit_row(3)])
    assert model.rowCount() == 3 and not model.exhausted
    assert model.index(1, 0).data(ID_ROLE) == 2
    assert "ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in model.index(1, 5).data()  # redacted
    model.append_page(99, [audit_row(100)])  # a stale page (asked before a reset): dropped
    assert model.rowCount() == 3
    next_page([audit_row(4)])  # short page: the end of the log
    assert model.rowCount() == 4 and model.exhausted and not model.canFetchMore()
    assert set(asked) == {0, 3}
    model.mark_broken(2)
    assert model.index(1, 0).data(Qt.ItemDataRole.BackgroundRole) is not None
    assert model.index(0, 0).data(Qt.ItemDataRole.BackgroundRole) is None
    model.reset()
    assert model.rowCount() == 0 and model.broken_id is None and not model.exhausted
    assert model.canFetchMore() or asked[-1] == 0  # reading again from the start (maybe asked by the tester)


# -- the request list (rule and bulk previews) -----------------------------------------------------------------
def record(n: int, command: str, status: str = "pending", decision: str | None = None) -> dict[str, Any]:
    return {
        "hitl_id": f"h{n}",
        "hitl_type": "tool_approval",
        "session_id": "s1",
        "tool_name": "Bash",
        "status": status,
        "data": {"arguments": {"command": command}},
        "user_response": {"decision": decision} if decision else None,
        "created_at": 1_700_000_000,
    }


@pytest.mark.parametrize("risky", [False, True])
def test_request_list_model_shows_what_a_click_decides(qtmodeltester: Any, risky: bool) -> None:
    model = RequestListModel()
    qtmodeltester.check(model)
    risks = {"h2": Risk("high", ("deletes files",))} if risky else {}
    model.set_records([record(1, "ls -la"), record(2, "rm -rf build\nrm -rf dist", "completed", "reject")], risks)
    assert model.hitl_ids() == ["h1", "h2"] and model.index(1, 0).data(HITL_ID_ROLE) == "h2"
    assert model.index(0, COL_WHAT).data() == "ls -la"
    assert model.index(1, COL_WHAT).data() == "rm -rf build ⏎ rm -rf dist"
    assert model.index(1, COL_STATUS).data() == "completed: reject"
    assert model.index(1, COL_RISK).data() == ("high" if risky else "")
    tooltip = model.index(1, COL_WHAT).data(Qt.ItemDataRole.ToolTipRole)
    assert tooltip.startswith("request h2 · session s1") and ("deletes files" in tooltip) is risky
    model.set_records([])
    assert model.rowCount() == 0 and model.index(0, 0) == QModelIndex()


def test_a_request_lists_status_says_an_expiry_once() -> None:
    """'expired: expire' said the same thing twice; a decision that differs from the status is still named."""
    from reviewer_app.ui.models.request_list import status_text

    assert status_text({"status": "expired", "user_response": {"decision": "expire"}}) == "expired"
    assert status_text({"status": "expired", "user_response": {"decision": "reject"}}) == "expired: reject"
    assert status_text({"status": "completed", "user_response": {"decision": "approve"}}) == "completed: approve"
    assert status_text({"status": "pending", "user_response": None}) == "pending"
