"""Timeline and runs models under QAbstractItemModelTester, the strip, the JSON view and the diff."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QModelIndex, QObject, Qt

from reviewer_app.domain.decisions import args_digest
from reviewer_app.domain.records import RunRecord
from reviewer_app.domain.runs import RunState
from reviewer_app.domain.timeline import BlockEvent, BlockKind, BlockOp
from reviewer_app.ui.detail.json_view import JsonPanel, JsonView, fold_ranges, format_json
from reviewer_app.ui.detail.prepared import prepare_request, write_file_diff
from reviewer_app.ui.detail.strip import TimelineStrip, spans_for
from reviewer_app.ui.detail.timeline import (
    DURATION_ROLE,
    IS_DETAIL_ROLE,
    KIND_ROLE,
    STATUS_ROLE,
    TimelineModel,
    TimelineView,
)
from reviewer_app.ui.inbox.model import InboxModel
from reviewer_app.ui.runs.model import GROUP_ORDER, GROUP_TITLES, RUN_ID_ROLE, RunsModel


def event(seq: int, block_id: str, kind: BlockKind, op: BlockOp, data: dict[str, Any], ts: int, parent=None):
    return BlockEvent(
        block_id=block_id,
        kind=kind,
        op=op,
        data=data,
        session_id="s1",
        invocation_id="i1",
        ts_ms=ts,
        parent_id=parent,
        seq=seq,
    )


def run_events() -> list[BlockEvent]:
    t = 1_700_000_000_000
    return [
        event(1, "think", BlockKind.THINKING, BlockOp.APPLY, {"text": "Let me"}, t),
        event(2, "think", BlockKind.THINKING, BlockOp.DELTA, {"text": " think."}, t + 10),
        event(3, "text", BlockKind.TEXT, BlockOp.APPLY, {"text": "Writing the file."}, t + 20),
        event(
            4,
            "tool",
            BlockKind.TOOL_USE,
            BlockOp.APPLY,
            {"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}, "status": "pending"},
            t + 30,
        ),
        event(5, "hitl", BlockKind.HITL, BlockOp.APPLY, {"hitl_id": "h1", "status": "pending"}, t + 30, "tool"),
    ]


def test_timeline_model_folds_then_grows_live(qtmodeltester: Any, qtbot: Any) -> None:
    model = TimelineModel()
    qtmodeltester.check(model)
    view = TimelineView()
    qtbot.addWidget(view)
    view.setModel(model)
    view.resize(500, 400)
    view.show()
    model.set_events("i1", run_events()[:3])
    assert model.rowCount() == 2
    thinking = model.index(0, 0)
    assert thinking.data(KIND_ROLE) == "thinking"
    assert model.index(0, 0, thinking).data() == "Let me think."  # the folded detail row
    assert model.index(0, 0, thinking).data(IS_DETAIL_ROLE)
    assert not view.isExpanded(thinking)  # thinking starts folded

    inserted: list[tuple[int, int]] = []
    model.rowsInserted.connect(lambda parent, first, last: inserted.append((first, last)))
    model.append_events(run_events()[3:])
    tool = model.index(2, 0)
    assert tool.data(STATUS_ROLE) == "pending"
    assert model.rowCount(tool) == 2  # its detail and the review block nested under it
    assert model.index(1, 0, tool).data(KIND_ROLE) == "hitl"
    assert inserted == [(2, 2), (1, 1)]

    t = 1_700_000_000_000
    model.append_events(
        [
            event(
                6,
                "hitl",
                BlockKind.HITL,
                BlockOp.PATCH,
                {"status": "decided", "decision": "approve", "resolved_ms": t + 5030},
                t + 5030,
            ),
            event(7, "tool", BlockKind.TOOL_USE, BlockOp.PATCH, {"status": "running"}, t + 5031),
            event(
                8,
                "tool",
                BlockKind.TOOL_USE,
                BlockOp.PATCH,
                {"status": "success", "result": "ok", "duration_ms": 12},
                t + 5043,
            ),
            event(9, "end", BlockKind.END, BlockOp.APPLY, {"state": "done"}, t + 5050),
        ]
    )
    assert tool.data(STATUS_ROLE) == "success"
    assert tool.data(DURATION_ROLE) == 12
    assert "result: ok" in model.index(0, 0, tool).data()
    assert model.index(1, 0, tool).data(STATUS_ROLE) == "approve"
    assert model.rowCount(model.index(3, 0)) == 0  # the end block has no detail
    # Old or foreign events are ignored.
    model.append_events([event(3, "x", BlockKind.TEXT, BlockOp.APPLY, {"text": "stale"}, t)])
    assert model.rowCount() == 4
    view.grab()  # the delegate paints every kind without raising

    spans = spans_for(model.blocks(), now_ms=t + 6000)
    assert [(s.lane, s.end_ms - s.start_ms) for s in spans] == [(0, 12), (1, 5000)]
    strip = TimelineStrip()
    qtbot.addWidget(strip)
    strip.set_blocks(model.blocks())
    strip.resize(400, 40)
    assert not strip.grab().isNull()


def test_runs_model_moves_runs_between_state_groups(qtmodeltester: Any) -> None:
    def run(i: int, state: str, pending: int = 0) -> RunRecord:
        return RunRecord(
            id=f"inv_{i}",
            session_id="s",
            agent="demo",
            prompt=f"task {i}",
            state=state,
            parent_id=None,
            external=False,
            owner=None,
            error=None,
            created_at=1_700_000_000 + i,
            started_at=None,
            finished_at=None,
            updated_at_ms=0,
            active_ms=0,
            pending=pending,
        )

    model = RunsModel()
    qtmodeltester.check(model)
    model.set_runs([run(1, "running"), run(2, "waiting", 1), run(3, "done")])
    assert model.rowCount() == len(GROUP_ORDER)
    waiting = model.index(0, 0)
    assert waiting.data() == "Waiting for review (1)"
    assert model.index(0, 0, waiting).data(RUN_ID_ROLE) == "inv_2"
    model.apply_changes([run(2, "running"), run(4, "queued")])
    running = model.index(1, 0)
    assert [model.index(r, 0, running).data(RUN_ID_ROLE) for r in range(model.rowCount(running))] == [
        "inv_2",
        "inv_1",
    ]  # newest first
    assert model.rowCount(waiting) == 0
    model.apply_changes([run(2, "done")])
    assert model.index_for("inv_2").parent().row() == GROUP_ORDER.index("done")
    model.apply_changes([run(1, "running", 3)])
    assert model.index_for("inv_1", 2).data() == "3"


def test_every_run_state_the_store_writes_has_its_own_group_on_the_board() -> None:
    """No "Idle" group: a run neither running, waiting for review nor finished is queued or interrupted, and each
    has its group (a state without one would be listed under Failed)."""
    unfinished = {state for state in RunState if not state.finished} - {RunState.RUNNING, RunState.WAITING}
    assert unfinished == {RunState.QUEUED, RunState.INTERRUPTED}
    for state in RunState:
        assert state.value in GROUP_ORDER and state.value in GROUP_TITLES


def test_format_json_cuts_huge_payloads_and_show_all_splits_lines() -> None:
    big = {"path": "big.txt", "content": "x" * 10_000_000, "items": list(range(50_000))}
    cut = format_json(big)  # stops after the budget: the 10 MB are never all formatted
    assert cut.truncated
    assert len(cut.text) < 260_000
    assert max(len(line) for line in cut.text.splitlines()) < 10_100
    # A shortened line keeps a few screen widths: Qt lays a line out whole, and a 10,000-character one cost the
    # detail of a 1 MB request more than all the rest of what it shows.
    assert max(len(line) for line in cut.text.splitlines()) < 2_100
    assert max(len(line) for line in format_json({"content": "z" * 50_000}).text.splitlines()) < 2_100
    full = format_json({"content": "y" * 25_000}, budget=None, max_line=10_000)
    assert not full.truncated and full.split_lines == 2
    assert full.text.replace(" ↩\n", "").count("y") == 25_000
    small = format_json({"a": [1, 2], "b": {"c": None}})
    assert not small.truncated
    assert json.loads(small.text) == {"a": [1, 2], "b": {"c": None}}


def _format_whole_then_cut(value: Any, budget: int) -> str:
    """The pretty text as format_json printed it before it cut long values first: all of it, then its prefix."""
    whole = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return format_json(value, budget=None, max_line=10**9).text if len(whole) <= budget else whole[:budget]


@pytest.mark.parametrize(
    "value",
    [
        {"path": "big.txt", "content": 'line\n"quoted" é\t' * 100_000},
        {"items": list(range(100_000)), "tail": "x" * 10},
        [{"k": "v" * n, 3: None, "nested": [True, 1.5, ("a", "b")]} for n in range(0, 3000, 7)],
        {"exact": "e" * 199_990},
        {"short": "s", "none": None},
        "a bare string " * 50_000,
    ],
)
def test_format_json_cuts_long_values_first_and_prints_the_same_text(value: Any) -> None:
    """A 1 MB string is cut before it is escaped (not escaped whole, then cut): the text shown is unchanged."""
    budget = 200_000
    expected = _format_whole_then_cut(value, budget)
    formatted = format_json(value, budget=budget, max_line=10**9)
    assert formatted.text.removesuffix("\n… (cut here: use “Show all” to see the rest)") == expected
    assert formatted.truncated == (len(json.dumps(value, indent=2, ensure_ascii=False, default=str)) > budget)


def test_json_view_folds_and_highlights(qtbot: Any) -> None:
    view = JsonView()
    qtbot.addWidget(view)
    text = format_json({"a": {"b": [1, 2, 3]}, "c": True}).text
    view.set_json_text(text)
    assert fold_ranges(text.split("\n")) == {0: 9, 1: 7, 2: 6}
    view.collapse_all()
    assert view.folded == {1, 2}
    assert not view.document().findBlockByNumber(3).isVisible()
    view.toggle_fold(1)
    assert view.folded == {2}
    assert view.document().findBlockByNumber(2).isVisible()
    view.expand_all()
    assert all(view.document().findBlockByNumber(n).isVisible() for n in range(10))
    formats = view.document().findBlockByNumber(1).layout().formats()
    assert formats, "the key line is highlighted"
    view.resize(400, 300)
    view.show()
    assert not view.grab().isNull()


def test_json_panel_shows_a_10mb_payload_truncated_with_show_all(qtbot: Any) -> None:
    panel = JsonPanel("Arguments")
    qtbot.addWidget(panel)
    record = {
        "hitl_id": "h",
        "hitl_type": "tool_approval",
        "tool_name": "write_file",
        "data": {"arguments": {"path": "big.txt", "content": "z" * 10_000_000}},
    }
    prepared = prepare_request(record)
    panel.set_formatted(prepared.formatted)
    panel.resize(600, 400)
    panel.show()
    panel.grab()
    assert panel.view.document().characterCount() < 260_000  # what Qt lays out stays small
    assert panel.show_all_button.isVisibleTo(panel)
    assert "10.0 MB" in panel.notice.text()
    assert prepared.digest == args_digest(record["data"]["arguments"]) and prepared.total_chars > 10_000_000


def test_write_file_diff_against_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("one\ntwo\n")
    diff, note = write_file_diff(tmp_path, {"path": "notes.md", "content": "one\nthree\n"})
    assert note == "changes to notes.md"
    assert diff is not None and "-two\n" in diff and "+three\n" in diff and "--- a/notes.md" in diff
    diff, note = write_file_diff(tmp_path, {"path": "new.txt", "content": "hi"})
    assert note == "new file new.txt" and "--- /dev/null" in diff and "\\ No newline at end of file" in diff
    diff, note = write_file_diff(tmp_path, {"path": "../escape.txt", "content": "x"})
    assert diff is None and note.startswith("refused")
    diff, note = write_file_diff(None, {"path": "a.txt", "content": "x\n"})
    assert "workspace unknown" in note and "+x" in diff


def test_detail_rows_and_model_ignore_invalid_indexes() -> None:
    model = TimelineModel()
    assert model.data(QModelIndex()) is None
    assert model.rowCount(QModelIndex()) == 0
    assert model.flags(QModelIndex()) == Qt.ItemFlag.NoItemFlags


def test_models_answer_parent_as_a_model_and_as_a_qobject() -> None:
    """``parent(index)`` is the model API; ``parent()`` stays QObject's (the overload PySide6 declares)."""
    owner = QObject()
    for model in (InboxModel(owner), RunsModel(owner), TimelineModel(owner)):
        assert model.parent() is owner
        assert not model.parent(QModelIndex()).isValid()


def test_tray_notifier_gives_one_notice_per_arrival_while_the_window_is_not_in_front(qtbot: Any) -> None:
    from PySide6.QtWidgets import QWidget

    from reviewer_app.ui.desktop.tray import TrayNotifier
    from tests.ui.conftest import make_summary

    window = QWidget()
    qtbot.addWidget(window)  # never shown: not the active window
    notifier = TrayNotifier(window, tray=False)
    assert notifier.icon is None
    notifier.notify_new([])
    notifier.set_pending(3)
    notifier.notify_new([make_summary(1, summary="ls -la")])
    notifier.notify_new([make_summary(2), make_summary(3, tool="write_file")])
    assert notifier.notifications == ["run_shell: ls -la", "2 new requests, e.g. run_shell"]
