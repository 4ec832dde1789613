"""The inbox search, property-tested: whatever is typed, erased or changed live, the rows shown are the ones a
fresh search over the same requests shows, and the ones each request's own haystack accepts; with the session
rows given to the view a window at a time, under Qt's model tester."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PySide6.QtTest import QAbstractItemModelTester

from reviewer_app.domain.records import RequestSummary
from reviewer_app.ui.inbox import grouping, visible_tree
from reviewer_app.ui.inbox.filters import InboxFilter, haystack
from reviewer_app.ui.inbox.model import InboxModel
from tests.ui.conftest import make_summary
from tests.ui.test_inbox_model import tree

WORDS = ("write", "wrap", "rm -rf", "echo", "Item", "w", "ri")
TOOLS = ("write_file", "run_shell", None)
AGENTS = ("writer", "coder", None)


def rows_of(seeds: list[tuple[int, int]]) -> list[RequestSummary]:
    return [
        make_summary(
            n,
            tool=TOOLS[tool],
            hitl_type="ask_user" if TOOLS[tool] is None else "tool_approval",
            agent=AGENTS[(n // 10) % 3],  # one agent per run, as the store has it
            summary=f"{WORDS[word]} item {n}",
        )
        for n, (word, tool) in enumerate(seeds)
    ]


letters = st.sampled_from("writeamho 1-R")
# A session of typing: each step types a letter, erases one, replaces the text, or lets a request change live.
steps = st.lists(
    st.one_of(
        st.tuples(st.just("type"), letters),
        st.tuples(st.just("erase"), st.just("")),
        st.tuples(st.just("set"), st.text(alphabet="writeamho 1-R", max_size=8)),
        st.tuples(st.just("agent"), st.sampled_from((None, "writer", "coder"))),
        st.tuples(st.just("decide"), st.integers(0, 119)),
        st.tuples(st.just("arrive"), st.sampled_from(WORDS)),
        st.tuples(st.just("scroll"), st.just("")),
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seeds=st.lists(st.tuples(st.integers(0, len(WORDS) - 1), st.integers(0, len(TOOLS) - 1)), max_size=120),
    steps=steps,
    narrow_below=st.sampled_from((grouping.NARROW_BELOW, 1.0)),
    window=st.sampled_from((visible_tree.SESSION_ROWS_AT_ONCE, 2)),
)
def test_the_rows_shown_are_what_a_fresh_search_shows(
    seeds: list[tuple[int, int]], steps: list[tuple[str, Any]], narrow_below: float, window: int
) -> None:
    """``narrow_below`` 1.0: every search that extends the last one narrows it, however many rows that one showed.
    ``window`` 2: the view is given two session rows at a time."""
    kept = grouping.NARROW_BELOW, visible_tree.SESSION_ROWS_AT_ONCE
    grouping.NARROW_BELOW, visible_tree.SESSION_ROWS_AT_ONCE = narrow_below, window
    try:
        typed(rows_of(seeds), steps)
    finally:
        grouping.NARROW_BELOW, visible_tree.SESSION_ROWS_AT_ONCE = kept


def typed(rows: list[RequestSummary], steps: list[tuple[str, Any]]) -> None:
    model = InboxModel()
    tester = QAbstractItemModelTester(model, QAbstractItemModelTester.FailureReportingMode.Warning)  # noqa: F841
    model.set_requests(rows)
    text, agent, arrived = "", None, 1_000
    for kind, value in steps:
        if kind == "type":
            text += value
        elif kind == "erase":
            text = text[:-1]
        elif kind == "set":
            text = value
        elif kind == "agent":
            agent = value
        elif kind == "decide" and value < len(rows):
            model.apply_changes([dataclasses.replace(rows[value], status="completed", decision="approve")])
        elif kind == "arrive":
            model.apply_changes([make_summary(arrived, tool="write_file", agent="coder", summary=f"{value} new")])
            arrived += 1
        elif kind == "scroll":
            model.expose_more()
        f = InboxFilter(text=text, agent=agent)
        model.set_filter(f)
        fresh = InboxModel()
        fresh.set_requests(list(model.requests_in_scope()))
        fresh.set_filter(f)
        while fresh.more_sessions:
            fresh.expose_more()
        assert model.rowCount() >= min(model.session_count, visible_tree.SESSION_ROWS_AT_ONCE)
        assert tree(model) == tree(fresh)[: model.rowCount()], (f, steps)
        expected = {s.hitl_id for s in model.requests_in_scope() if f.accepts(s, haystack(s))}
        assert {s.hitl_id for s in model.iter_requests()} == expected
        assert model.visible_count == len(expected)
