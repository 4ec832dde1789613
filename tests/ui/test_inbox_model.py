"""The inbox model: grouping, ordering, filters and live increments, checked by QAbstractItemModelTester."""

from __future__ import annotations

import dataclasses
from typing import Any

from PySide6.QtCore import QModelIndex, Qt

from reviewer_app.ui.inbox.cells import COL_AGE, COL_DECIDED, COL_REQUEST, COL_SUMMARY, HITL_ID_ROLE
from reviewer_app.ui.inbox.filters import InboxFilter, Scope
from reviewer_app.ui.inbox.model import InboxModel
from tests.ui.conftest import make_summary


def tree(model: InboxModel) -> list[tuple[str, list[tuple[str, list[str]]]]]:
    """The visible tree as plain ids (session -> invocation -> requests)."""
    out = []
    for srow in range(model.rowCount()):
        sidx = model.index(srow, 0)
        invs = []
        for irow in range(model.rowCount(sidx)):
            iidx = model.index(irow, 0, sidx)
            reqs = [model.index(r, 0, iidx).data(HITL_ID_ROLE) for r in range(model.rowCount(iidx))]
            invs.append((model.data(iidx, Qt.ItemDataRole.UserRole + 4), reqs))
        out.append((model.data(sidx, Qt.ItemDataRole.UserRole + 4), invs))
    return out


def test_groups_by_session_and_invocation_in_arrival_order(qtmodeltester: Any) -> None:
    model = InboxModel()
    qtmodeltester.check(model)
    summaries = [make_summary(n) for n in range(120)]
    model.set_requests(list(reversed(summaries)))
    assert model.visible_count == 120
    shape = tree(model)
    assert [s for s, _ in shape] == ["s0000", "s0001", "s0002"]
    assert [i for i, _ in shape[0][1]] == [f"i{n:05d}" for n in range(5)]
    assert shape[0][1][0][1] == [f"h{n:06d}" for n in range(10)]
    assert model.first_request() == "h000000"
    session = model.index(0, 0)
    assert model.index(0, COL_REQUEST, session).data() == "10 pending"  # the Summary column has the title
    assert model.index(0, COL_REQUEST).data() == "50 pending"


def test_incremental_insert_update_remove_keep_the_tree_consistent(qtmodeltester: Any) -> None:
    model = InboxModel()
    model.set_requests([make_summary(n) for n in range(30)])
    qtmodeltester.check(model)
    inserted: list[tuple[int, int]] = []
    removed: list[tuple[int, int]] = []
    resets: list[bool] = []
    model.rowsInserted.connect(lambda parent, first, last: inserted.append((first, last)))
    model.rowsRemoved.connect(lambda parent, first, last: removed.append((first, last)))
    model.modelReset.connect(lambda: resets.append(True))

    # New request in an existing invocation, a new invocation in an existing session, a new session.
    model.apply_changes([make_summary(30, invocation="i00001"), make_summary(31, invocation="i09999")])
    model.apply_changes([make_summary(5000)])
    assert model.index_for("h000030").parent().data(Qt.ItemDataRole.UserRole + 4) == "i00001"
    assert model.index_for("h000031").parent().data(Qt.ItemDataRole.UserRole + 4) == "i09999"
    assert model.index_for("h005000").parent().parent().data(Qt.ItemDataRole.UserRole + 4) == "s0100"
    assert model.visible_count == 33

    # Changing a summary in place emits dataChanged, not a reset.
    changed: list[Any] = []
    model.dataChanged.connect(lambda a, b, roles: changed.append((a.row(), b.column())))
    model.apply_changes([dataclasses.replace(make_summary(3), summary="rm -rf build")])
    assert model.index_for("h000003", COL_SUMMARY).data() == "rm -rf build"
    assert changed

    # Decided elsewhere: rows go, then empty invocations and sessions go with them.
    decided = [dataclasses.replace(make_summary(n), status="completed", decision="approve") for n in range(10)]
    model.apply_changes(decided)
    assert model.index_for("h000000") == QModelIndex()
    assert "i00000" not in [i for _, invs in tree(model) for i, _ in invs]
    model.apply_changes([dataclasses.replace(make_summary(5000), status="cancelled")])
    assert "s0100" not in [s for s, _ in tree(model)]
    assert model.visible_count == 22
    assert inserted and removed and not resets


def test_filters_search_and_history_scope(qtmodeltester: Any) -> None:
    model = InboxModel()
    qtmodeltester.check(model)
    summaries = [make_summary(n) for n in range(40)]
    summaries.append(make_summary(40, session="s9999", tool="write_file", summary="path: notes.txt", agent="writer"))
    summaries.append(make_summary(41, session="s9999", tool=None, hitl_type="ask_user", summary="question: which db?"))
    model.set_requests(summaries)
    model.set_filter(InboxFilter(text="notes"))
    assert [r.hitl_id for r in model.iter_requests()] == ["h000040"]
    model.set_filter(InboxFilter(text="ECHO 1"))  # case-insensitive, every term must match
    assert {r.hitl_id for r in model.iter_requests()} == {f"h{n:06d}" for n in range(40) if "1" in str(n)}
    model.set_filter(InboxFilter(hitl_type="ask_user"))
    assert [r.hitl_id for r in model.iter_requests()] == ["h000041"]
    model.set_filter(InboxFilter(agent="writer"))
    assert [r.hitl_id for r in model.iter_requests()] == ["h000040"]
    model.set_filter(InboxFilter(text="s0000"))  # session id
    assert model.visible_count == 40
    model.set_filter(InboxFilter())
    assert model.visible_count == 42
    assert model.tools == {"run_shell", "write_file"}

    # Live rows that do not match the search are kept aside and appear when the search is cleared.
    model.set_filter(InboxFilter(text="notes"))
    model.apply_changes([make_summary(42, summary="echo later")])
    assert model.visible_count == 1
    model.set_filter(InboxFilter())
    assert model.index_for("h000042").isValid()

    # History shows who decided and how.
    history = [
        dataclasses.replace(
            make_summary(n, expires_at=1_700_000_000 + 600), status="completed", decision="approve", decided_by="alice"
        )
        for n in range(3)
    ]
    model.now = lambda: 1_700_000_000 + 125.0
    model.set_requests(history, scope=Scope.HISTORY)
    assert model.index_for("h000001", COL_DECIDED).data() == "approve by alice"
    assert model.index_for("h000001", COL_AGE).data() == "2m"  # decided: its age, never the countdown
    model.apply_changes([make_summary(99)])  # pending rows stay out of the history scope
    assert not model.index_for("h000099").isValid()


def test_neighbours_for_keyboard_moves_and_next_after_a_decision() -> None:
    model = InboxModel()
    model.set_requests([make_summary(n) for n in range(60)])
    assert model.neighbour("h000000") == "h000001"
    assert model.neighbour("h000009") == "h000010"  # across invocations
    assert model.neighbour("h000049") == "h000050"  # across sessions
    assert model.neighbour("h000050", -1) == "h000049"
    assert model.neighbour("h000000", -1) is None
    assert model.next_after_removal("h000059") == "h000058"
    assert model.next_after_removal("h000010") == "h000011"


def test_ages_and_expiry_countdown() -> None:
    model = InboxModel()
    model.now = lambda: 1_700_000_000 + 125.0
    model.set_requests([make_summary(0, expires_at=1_700_000_000 + 200), make_summary(1)])
    # The Waiting column: how long a request has waited, or, when it expires, how long it has left.
    assert model.index_for("h000001", COL_AGE).data() == "2m"
    assert model.index_for("h000000", COL_AGE).data() == "in 1:15"
    assert "asked 2m ago · expires in 1:15" in model.index_for("h000000", COL_AGE).data(Qt.ItemDataRole.ToolTipRole)
    # 1:15 left is calm, as in the detail header (issue 25: the column was red at 1:41, the header not)
    assert model.index_for("h000000", COL_AGE).data(Qt.ItemDataRole.ForegroundRole) is None
    model.now = lambda: 1_700_000_000 + 195.0
    assert model.index_for("h000000", COL_AGE).data(Qt.ItemDataRole.ForegroundRole) is not None  # 5 s: red
    assert model.index_for("h000001", COL_AGE).data() == "3m"
    model.now = lambda: 1_700_000_000 + 300.0
    assert model.index_for("h000000", COL_AGE).data() == "expired"


def test_bulk_changes_reset_instead_of_row_signals(qtmodeltester: Any) -> None:
    model = InboxModel()
    model.set_requests([])
    qtmodeltester.check(model)
    resets: list[bool] = []
    model.modelReset.connect(lambda: resets.append(True))
    model.apply_changes([make_summary(n) for n in range(3_000)])
    assert resets and model.visible_count == 3_000
    assert model.first_request() == "h000000"


def test_all_scope_keeps_a_decided_request_and_moves_it_to_its_new_place(qtmodeltester: Any) -> None:
    model = InboxModel()
    model.set_requests([make_summary(n) for n in range(5)], scope=Scope.ALL)
    qtmodeltester.check(model)
    decided = dataclasses.replace(make_summary(3), status="completed", decision="reject", decided_by="bob")
    model.apply_changes([decided])
    assert model.visible_count == 5
    assert model.index_for("h000003", COL_DECIDED).data() == "reject by bob"
    # Decided rows sort by their creation second only, so it now comes first within that second.
    assert next(r.hitl_id for r in model.iter_requests()) == "h000003"
    assert model.neighbour("h000003") == "h000000"


def test_pages_merge_like_one_load_under_a_search_with_expanded_rows(qtmodeltester: Any) -> None:
    """A progressive load (first page, then pages) ends with the tree a single load gives."""
    everything = [make_summary(n, summary=f"echo {'match' if n % 3 else 'other'} {n}") for n in range(400)]
    reference = InboxModel()
    reference.set_requests(everything)
    reference.set_filter(InboxFilter(text="match"))

    model = InboxModel()
    model.set_requests(everything[:30])
    model.set_filter(InboxFilter(text="match"))
    qtmodeltester.check(model)
    # The view would have asked for these rows (expanded, painted): they get row signals from now on.
    first_session = model.index(0, 0)
    assert model.rowCount(first_session) > 0 and model.rowCount(model.index(0, 0, first_session)) > 0
    inserted: list[int] = []
    model.rowsInserted.connect(lambda parent, first, last: inserted.append(last - first + 1))
    for start in range(30, 400, 70):
        model.append_page(everything[start : start + 70])
        model.append_page(everything[start : start + 5])  # repeated rows are ignored
    assert model.visible_count == reference.visible_count == sum(1 for n in range(400) if n % 3)
    assert tree(model) == tree(reference)
    assert [r.hitl_id for r in model.iter_requests()] == [r.hitl_id for r in reference.iter_requests()]
    assert inserted  # rows under the known groups and new sessions were announced, not reset
    model.set_filter(InboxFilter())
    reference.set_filter(InboxFilter())
    assert tree(model) == tree(reference) and model.visible_count == 400


def test_a_live_request_between_pages_and_older_pages_after_it(qtmodeltester: Any) -> None:
    model = InboxModel()
    model.set_requests([make_summary(n) for n in range(20)])
    qtmodeltester.check(model)
    live = make_summary(10_000, invocation="i00001", session="s0000")  # newer than every page
    model.apply_changes([live])
    model.append_page([make_summary(n, invocation="i00001", session="s0000") for n in range(20, 25)])
    inv = model.index_for("h010000").parent()
    ids = [model.index(row, 0, inv).data(HITL_ID_ROLE) for row in range(model.rowCount(inv))]
    assert ids == [f"h{n:06d}" for n in range(10, 20)] + [f"h{n:06d}" for n in range(20, 25)] + ["h010000"]
    assert model.visible_count == 26


def test_cached_search_masks_never_outlive_a_change(qtmodeltester: Any) -> None:
    model = InboxModel()
    model.set_requests([make_summary(n) for n in range(100)])
    qtmodeltester.check(model)
    model.set_filter(InboxFilter(text="echo 1"))
    before = {r.hitl_id for r in model.iter_requests()}
    model.set_filter(InboxFilter())
    model.apply_changes(
        [
            make_summary(500, summary="echo 1 later"),
            dataclasses.replace(make_summary(1), status="completed", decision="approve"),
            dataclasses.replace(make_summary(2), summary="echo 12 now"),
        ]
    )
    model.set_filter(InboxFilter(text="echo 1"))  # a mask for this search was cached before the changes
    assert {r.hitl_id for r in model.iter_requests()} == (before - {"h000001"}) | {"h000500", "h000002"}
    fresh = InboxModel()
    fresh.set_requests(list(model._g.source.values()))
    fresh.set_filter(InboxFilter(text="echo 1"))
    assert tree(model) == tree(fresh)


def test_removed_requests_leave_no_trace_in_searches_after_compaction(qtmodeltester: Any, monkeypatch: Any) -> None:
    from reviewer_app.ui.inbox import grouping

    monkeypatch.setattr(grouping, "COMPACT_ABOVE", 10)
    model = InboxModel()
    model.set_requests([make_summary(n, tool="write_file" if n % 2 else "run_shell") for n in range(40)])
    qtmodeltester.check(model)
    model.apply_changes([dataclasses.replace(make_summary(n), status="cancelled") for n in range(0, 40, 2)])
    assert model.visible_count == 20
    model.set_filter(InboxFilter(tool="run_shell"))  # the tombstones are compacted away here
    assert model.visible_count == 0 and model.rowCount() == 0
    model.set_filter(InboxFilter(text="write"))
    assert model.visible_count == 20
    assert len(model._g.f_text) == 20


def test_ages_ask_for_a_repaint_only_when_their_text_changes() -> None:
    model = InboxModel()
    clock = [1_700_000_000 + 125.0]
    model.now = lambda: clock[0]
    model.set_requests([make_summary(0)])  # created at 1_700_000_000: two minutes old
    assert model.index_for("h000000", COL_AGE).data() == "2m"
    assert not model.ages_due()
    clock[0] += 30  # 2m 35s: still "2m"
    assert not model.ages_due()
    clock[0] += 30  # 3m 05s: the text changed
    assert model.ages_due() and not model.ages_due()  # once, until the next paint asks again
    assert model.index_for("h000000", COL_AGE).data() == "3m"


def test_a_reused_role_span_never_carries_one_cell_into_the_next() -> None:
    """The delegate reuses its role-data span from cell to cell, as QStyledItemDelegate does."""
    from PySide6.QtCore import QModelRoleData

    model = InboxModel()
    model.set_requests([make_summary(n) for n in range(3)])
    session = model.index(0, 0)
    invocation = model.index(0, 0, session)
    request_name = model.index(0, 0, invocation)
    request_summary = model.index(0, COL_SUMMARY, invocation)
    roles = (
        Qt.ItemDataRole.FontRole,
        Qt.ItemDataRole.TextAlignmentRole,
        Qt.ItemDataRole.ForegroundRole,
        Qt.ItemDataRole.CheckStateRole,
        Qt.ItemDataRole.DecorationRole,
        Qt.ItemDataRole.DisplayRole,
        Qt.ItemDataRole.BackgroundRole,
    )
    span = [QModelRoleData(int(role)) for role in roles]
    model.multiData(session, span)  # a bold group row first
    model.multiData(request_name, span)
    assert span[4].data() is not None  # the request's own icon
    assert span[0].data() == model.index(0, 0, invocation).data(Qt.ItemDataRole.FontRole)
    model.multiData(request_summary, span)
    assert span[5].data() == request_summary.data()
    assert span[4].data() is None  # no icon carried over from the name cell
    assert span[0].data() == request_summary.data(Qt.ItemDataRole.FontRole)
    assert span[2].data() == request_summary.data(Qt.ItemDataRole.ForegroundRole)


def test_typing_on_narrows_the_last_search_to_the_same_rows_as_a_fresh_one(qtmodeltester: Any) -> None:
    """Typing on ("wr" after "w", a second word) searches only what the last search let through: the rows
    shown are the ones a fresh search finds, with field filters, live changes and erasing in between."""
    tools = ("write_file", "run_shell", "read_file", None)
    rows = [
        make_summary(
            n,
            tool=tools[n % 4],
            hitl_type="ask_user" if n % 4 == 3 else "tool_approval",
            agent=("writer", "coder", "ops")[n % 3],
            summary=f"{('write', 'wrap', 'rm -rf', 'echo')[n % 4]} item {n}",
        )
        for n in range(300)
    ]
    model = InboxModel()
    model.set_requests(rows)
    qtmodeltester.check(model)

    def same_as_fresh(f: InboxFilter) -> None:
        model.set_filter(f)
        fresh = InboxModel()
        fresh.set_requests(list(model._g.source.values()))
        fresh.set_filter(f)
        assert tree(model) == tree(fresh), f
        assert model.visible_count == fresh.visible_count

    for text in ("w", "wr", "wri", "write", "write i", "write item 1", "write item 12", "write item 1", "wr", "w"):
        same_as_fresh(InboxFilter(text=text))
    same_as_fresh(InboxFilter(text="write"))
    same_as_fresh(InboxFilter(text="ite"))  # inside the last search's word, not containing it: searched afresh
    same_as_fresh(InboxFilter(text="item 12"))
    same_as_fresh(InboxFilter(text="item 1"))  # erasing: more rows than the last search
    same_as_fresh(InboxFilter(text="w", agent="coder"))
    same_as_fresh(InboxFilter(text="wr", agent="coder"))  # the same field filter: narrowed
    same_as_fresh(InboxFilter(text="wra", agent="ops"))  # another field filter: searched afresh
    model.apply_changes([make_summary(900, tool="write_file", agent="ops", summary="wrap it")])
    model.apply_changes([dataclasses.replace(rows[2], status="completed", decision="approve")])
    same_as_fresh(InboxFilter(text="wrap", agent="ops"))  # narrowed from a mask kept up to date by the changes
    same_as_fresh(InboxFilter(text="wrap it", agent="ops"))
    same_as_fresh(InboxFilter(text="item wrap"))  # words in another order
    same_as_fresh(InboxFilter(text="em wra"))  # each word inside one of the last search's words
    model.set_requests(rows[:150])  # a reload renumbers the slots: nothing known may be narrowed
    same_as_fresh(InboxFilter(text="wrap item"))
    same_as_fresh(InboxFilter(text="wrap item 1"))
