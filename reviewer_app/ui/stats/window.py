"""The Statistics window (Ctrl+6): a period picker over six charts and the operator's own numbers; the charts'
figures come from one backend call (:meth:`SQLHITLBackend.decision_stats`, GROUP BY on the database thread), the
numbers from :meth:`SQLHITLBackend.operator_numbers` (the history judged off the loop), never from the Qt thread.
"""

from __future__ import annotations

import time

from PySide6.QtCharts import QChartView
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QKeySequence, QShowEvent
from PySide6.QtWidgets import QComboBox, QGridLayout, QHBoxLayout, QLabel, QMainWindow, QVBoxLayout, QWidget

from reviewer_app.domain.stats import DAY_S, DecisionStats
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.common import theme
from reviewer_app.ui.common.keepers import TaskKeeper
from reviewer_app.ui.common.texts import format_age
from reviewer_app.ui.stats import charts
from reviewer_app.ui.stats.numbers import NumbersPanel

PERIODS: tuple[tuple[str, int | None], ...] = (
    ("Last 24 hours", DAY_S),
    ("Last 7 days", 7 * DAY_S),
    ("Last 30 days", 30 * DAY_S),
    ("All time", None),
)


class StatsWindow(QMainWindow):
    """Six charts over the chosen period, reloaded on demand (F5) or when the period changes.

    Signals:
        loaded(object): the :class:`DecisionStats` now plotted.
        failed(str): the figures could not be read.
    """

    loaded = Signal(object)
    failed = Signal(str)

    def __init__(self, backend: SQLHITLBackend, parent: QWidget | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.backend = backend
        self.setObjectName("statsWindow")
        self.setWindowTitle("Reviewer — statistics")
        self.tasks = TaskKeeper(self.failed.emit)
        self.stats: DecisionStats | None = None
        self._generation = 0

        central = QWidget()
        outer = QVBoxLayout(central)
        top = QHBoxLayout()
        self.period = QComboBox()
        self.period.setObjectName("statsPeriod")
        self.period.setAccessibleName("Period")
        for label, seconds in PERIODS:
            self.period.addItem(label, seconds)
        self.period.currentIndexChanged.connect(lambda _i: self.reload())
        period_label = QLabel("&Period:")
        period_label.setBuddy(self.period)
        self.summary = QLabel("Loading…")
        self.summary.setObjectName("statsSummary")
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        top.addWidget(period_label)
        top.addWidget(self.period)
        top.addSpacing(16)
        top.addWidget(self.summary, 1)
        outer.addLayout(top)
        body = QHBoxLayout()
        self.grid = QGridLayout()
        body.addLayout(self.grid, 3)
        self.numbers = NumbersPanel()
        body.addWidget(self.numbers, 1)
        outer.addLayout(body, 1)
        self.setCentralWidget(central)
        self.views: dict[str, QChartView] = {}

        reload = QAction("&Reload the statistics", self, shortcut=QKeySequence("F5"))
        reload.triggered.connect(self.reload)
        self.addAction(reload)
        for number, (label, _) in enumerate(PERIODS, start=1):
            pick = QAction(f"Statistics over: {label.lower()}", self, shortcut=QKeySequence(f"Alt+{number}"))
            pick.triggered.connect(lambda _=False, i=number - 1: self.period.setCurrentIndex(i))
            self.addAction(pick)
        self.resize(1280, 820)

    def showEvent(self, event: QShowEvent) -> None:
        if self.stats is None:
            self.reload()
        super().showEvent(event)

    def reload(self) -> None:
        self._generation += 1
        self.summary.setText("Loading…")
        self.tasks.spawn(self._load(self._generation, self.period.currentData()))

    async def _load(self, generation: int, span_s: int | None) -> None:
        since = None if span_s is None else int(time.time()) - int(span_s)
        try:
            stats = await self.backend.decision_stats(since_s=since)
        except Exception as exc:
            self.summary.setText(f"Could not read the statistics: {exc}")
            self.failed.emit(str(exc))
            return
        if generation != self._generation:  # a later period choice wins
            return
        self.show_stats(stats)
        # The own numbers judge every decision of the period (slower than SQL's GROUP BY): the charts come first.
        self.numbers.headline.setText("Working out your own numbers…")
        try:
            numbers = await self.backend.operator_numbers(days=None if span_s is None else max(1, span_s // DAY_S))
        except Exception as exc:
            self.numbers.headline.setText(f"Could not work out your own numbers: {exc}")
            return
        if generation == self._generation:
            self.numbers.show_numbers(numbers, stats.rule_hits)

    def show_stats(self, stats: DecisionStats) -> None:
        self.stats = stats
        colors = theme.current()
        mean = "—" if stats.mean_time_to_decision_s is None else format_age(stats.mean_time_to_decision_s)
        self.summary.setText(
            f"{stats.created} requests · {stats.decided} decided · {stats.expired} expired · "
            f"{stats.pending} pending now · mean time to decision {mean}"
        )
        built = {
            "over_time": charts.over_time(stats),
            "time_to_decision": charts.histogram("Time to decision (people)", stats.time_to_decision, colors.info),
            "per_agent": charts.ranking("Requests per agent", stats.per_agent, colors.info),
            "per_tool": charts.ranking("Requests per tool", stats.per_tool, colors.wait),
            "per_reviewer": charts.ranking("Decisions per reviewer", stats.per_reviewer, colors.ok),
            "rule_hits": charts.ranking("Rule hits", stats.rule_hits, colors.danger),
        }
        positions = {
            "over_time": (0, 0, 1, 2),
            "time_to_decision": (0, 2, 1, 1),
            "per_agent": (1, 0, 1, 1),
            "per_tool": (1, 1, 1, 1),
            "per_reviewer": (1, 2, 1, 1),
            "rule_hits": (2, 0, 1, 3),
        }
        for name, chart in built.items():
            view = self.views.get(name)
            if view is None:
                view = charts.chart_view(chart)
                view.setObjectName(f"chart_{name}")
                self.views[name] = view
                self.grid.addWidget(view, *positions[name])
            else:
                old = view.chart()
                view.setChart(chart)  # the view takes ownership of the new chart, not the old one
                old.deleteLater()
        self.grid.setRowStretch(0, 3)
        self.grid.setRowStretch(1, 3)
        self.grid.setRowStretch(2, 2)
        self.loaded.emit(stats)
