"""The Statistics window (issue 19): charts populated from the backend's SQL aggregates, per period."""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtCharts import QAbstractBarSeries, QBarCategoryAxis, QLineSeries

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.stats.window import StatsWindow
from tests.ui.conftest import run_async


async def seed(backend: SQLHITLBackend) -> None:
    for index, (agent, tool) in enumerate([("alpha", "write_file"), ("alpha", "run_shell"), ("beta", "run_shell")]):
        await backend.create(
            hitl_id=f"h{index}",
            hitl_type="tool_approval",
            session_id=f"s-{agent}",
            invocation_id=f"i-{agent}",
            data={"arguments": {"n": index}},
            metadata={"agent": agent},
            tool_name=tool,
        )
    await backend.respond("h0", {"decision": "reject", "message": "no"})
    await backend.respond("h1", {"decision": "reject", "message": "no"})
    await backend.create(
        hitl_id="late",
        hitl_type="tool_approval",
        session_id="s-beta",
        invocation_id="i-beta",
        data={"arguments": {}},
        metadata={"agent": "beta"},
        tool_name="run_shell",
        expires_at=int(time.time()) - 1,
    )
    await backend.expire_due()


def bar_values(window: StatsWindow, name: str) -> list[list[float]]:
    chart = window.views[name].chart()
    series = chart.series()[0]
    assert isinstance(series, QAbstractBarSeries)
    return [[bar_set.at(i) for i in range(bar_set.count())] for bar_set in series.barSets()]


def categories(window: StatsWindow, name: str) -> list[str]:
    axis = next(a for a in window.views[name].chart().axes() if isinstance(a, QBarCategoryAxis))
    return list(axis.categories())


def test_charts_show_the_aggregates(qtbot: Any, qt_backend: SQLHITLBackend) -> None:
    run_async(qtbot, seed(qt_backend))
    window = StatsWindow(qt_backend)
    qtbot.addWidget(window)
    with qtbot.waitSignal(window.loaded, timeout=15_000) as signal:
        window.show()
    stats = signal.args[0]
    assert (stats.created, stats.decided, stats.expired, stats.pending) == (4, 2, 1, 1)
    assert set(window.views) == {"over_time", "time_to_decision", "per_agent", "per_tool", "per_reviewer", "rule_hits"}
    lines = {series.name(): series for series in window.views["over_time"].chart().series()}
    assert isinstance(lines["decided"], QLineSeries) and isinstance(lines["expired"], QLineSeries)
    assert sum(point.y() for point in lines["decided"].points()) == 2
    assert sum(point.y() for point in lines["expired"].points()) == 1
    assert lines["decided"].count() >= 24  # every hour of the day, empty ones at 0
    assert categories(window, "time_to_decision")[-1] == "0–10s"  # fastest at the top
    assert sum(bar_values(window, "time_to_decision")[0]) == 2
    assert categories(window, "per_agent") == ["beta", "alpha"]  # first (ties by name) at the top: axis runs up
    assert bar_values(window, "per_agent") == [[2.0, 2.0]]
    assert categories(window, "per_tool") == ["write_file", "run_shell"] and bar_values(window, "per_tool") == [[1, 3]]
    assert categories(window, "per_reviewer") == [qt_backend.reviewer]
    assert bar_values(window, "rule_hits") == [[]]
    assert "4 requests · 2 decided · 1 expired · 1 pending now" in window.summary.text()


def test_period_choice_reloads(qtbot: Any, qt_backend: SQLHITLBackend) -> None:
    run_async(qtbot, seed(qt_backend))
    window = StatsWindow(qt_backend)
    qtbot.addWidget(window)
    with qtbot.waitSignal(window.loaded, timeout=15_000):
        window.show()
    assert window.stats is not None and window.stats.since_s is not None
    with qtbot.waitSignal(window.loaded, timeout=15_000) as signal:
        window.period.setCurrentIndex(3)  # all time
    assert signal.args[0].since_s is None and signal.args[0].bucket_s == 86_400
    assert window.views["over_time"].chart().title() == "Decisions per day"
