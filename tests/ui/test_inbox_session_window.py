"""A big inbox gives the view its session rows a window at a time (a view lays out every top-level row it has after
each filter keystroke): the rows past the window come as the view scrolls to them or a request there is selected,
and live changes, pages and searches keep the tree the view has consistent with the one a fresh model builds."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from PySide6.QtCore import Qt

from reviewer_app.domain.records import RequestSummary
from reviewer_app.ui.inbox import visible_tree
from reviewer_app.ui.inbox.cells import HITL_ID_ROLE
from reviewer_app.ui.inbox.filters import InboxFilter
from reviewer_app.ui.inbox.model import InboxModel
from reviewer_app.ui.inbox.view import InboxView
from tests.ui.conftest import make_summary
from tests.ui.test_inbox_model import tree

WINDOW = 10


def request(n: int, **kwargs: Any) -> RequestSummary:
    """Two requests per session and run: 30 sessions for 60 requests."""
    return make_summary(n, session=f"s{n // 2:04d}", invocation=f"i{n // 2:05d}", **kwargs)


def everything_exposed(model: InboxModel) -> InboxModel:
    while model.more_sessions:
        model.expose_more()
    return model


def fresh(model: InboxModel) -> InboxModel:
    other = InboxModel()
    other.set_requests(list(model.requests_in_scope()))
    other.set_filter(model.filter)
    return everything_exposed(other)


@pytest.fixture(autouse=True)
def small_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(visible_tree, "SESSION_ROWS_AT_ONCE", WINDOW)


def test_the_view_gets_the_first_sessions_then_more_as_it_scrolls(qtbot: Any, qtmodeltester: Any) -> None:
    model = InboxModel()
    qtmodeltester.check(model)
    view = InboxView()
    view.setModel(model)
    model.set_requests([request(n) for n in range(60)])  # a small inbox: its groups open
    assert (model.rowCount(), model.session_count, model.visible_count) == (WINDOW, 30, 60)
    view.resize(500, 300)
    qtbot.addWidget(view)
    view.show()
    qtbot.waitExposed(view)
    bar = view.verticalScrollBar()
    for exposed in (2 * WINDOW, 3 * WINDOW):
        qtbot.waitUntil(lambda: bar.maximum() > bar.value())
        bar.setValue(bar.maximum())
        qtbot.waitUntil(lambda exposed=exposed: model.rowCount() == exposed)
    assert not model.more_sessions
    last = model.index(29, 0)
    assert last.data(Qt.ItemDataRole.UserRole + 4) == "s0029"
    # A filter keystroke gives the view the first window again.
    model.set_filter(InboxFilter(text="echo"))
    assert model.rowCount() == WINDOW and model.more_sessions


def test_selecting_a_request_past_the_window_gives_the_view_its_row(qtbot: Any, qtmodeltester: Any) -> None:
    model = InboxModel()
    model.set_requests([request(n) for n in range(60)])
    qtmodeltester.check(model)
    assert not model.index_for("h000051", expose=False).isValid()
    assert model.rowCount() == WINDOW  # not given by a look-up that must not
    index = model.index_for("h000051")
    assert index.isValid() and index.data(HITL_ID_ROLE) == "h000051"
    assert model.rowCount() == 26  # up to its session (s0025)
    assert model.neighbour("h000051", 1) == "h000052"  # moves go through every session, given or not
    assert model.neighbour("h000059", 1) is None


def test_live_changes_and_pages_past_the_window_stay_consistent(qtmodeltester: Any) -> None:
    model = InboxModel()
    model.set_requests([request(n) for n in range(0, 60, 3)])
    qtmodeltester.check(model)
    rows = [request(n) for n in range(0, 60, 3)]
    # Decided, arrived and changed rows inside and past the window, and whole sessions appearing and going.
    model.apply_changes([dataclasses.replace(rows[1], status="completed", decision="approve")])
    model.apply_changes([dataclasses.replace(rows[18], status="completed", decision="approve")])
    model.apply_changes([request(n) for n in (1, 40, 41, 58, 59)])
    model.apply_changes([request(45, summary="echo changed")])
    model.append_page([request(n) for n in range(60, 90)])
    model.append_page([request(n) for n in (4, 5, 52)])
    assert WINDOW <= model.rowCount() < model.session_count  # sessions among the given rows joined them
    expected = tree(fresh(model))
    assert tree(everything_exposed(model)) == expected
    assert model.visible_count == sum(len(reqs) for _, invs in expected for _, reqs in invs)
    # With everything given, a new session at the end is given at once.
    model.apply_changes([request(200)])
    assert model.rowCount() == model.session_count
    assert tree(model) == tree(fresh(model))


def test_a_small_inbox_gives_every_session(qtmodeltester: Any) -> None:
    model = InboxModel()
    model.set_requests([request(n) for n in range(2 * WINDOW)])
    qtmodeltester.check(model)
    assert model.rowCount() == model.session_count == WINDOW and not model.more_sessions
    model.apply_changes([request(2 * WINDOW)])
    assert model.rowCount() == WINDOW + 1  # a live arrival joins a fully given tree


def test_deciding_the_first_sessions_brings_the_next_ones_into_the_view(qtmodeltester: Any) -> None:
    rows = [request(n) for n in range(60)]
    model = InboxModel()
    model.set_requests(rows)
    qtmodeltester.check(model)
    model.apply_changes([dataclasses.replace(s, status="completed", decision="approve") for s in rows[:40]])
    assert (model.rowCount(), model.session_count) == (WINDOW, 10)
    assert model.index(0, 0).data(Qt.ItemDataRole.UserRole + 4) == "s0020"
