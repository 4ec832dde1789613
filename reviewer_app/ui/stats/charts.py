"""QtCharts bar charts built from :class:`DecisionStats` (QtCharts: Qt's own, ~4 MB in the bundle, no numpy)."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCharts import (
    QBarCategoryAxis,
    QBarSet,
    QChart,
    QChartView,
    QDateTimeAxis,
    QHorizontalBarSeries,
    QLineSeries,
    QValueAxis,
)
from PySide6.QtCore import QDateTime, Qt
from PySide6.QtGui import QColor, QPainter

from reviewer_app.domain.stats import HOUR_S, DecisionStats, TimeBucket
from reviewer_app.ui.common import theme


def _chart(title: str) -> QChart:
    chart = QChart()
    chart.setTitle(title)
    chart.setAnimationOptions(QChart.AnimationOption.NoAnimation)
    chart.legend().setVisible(False)
    chart.setBackgroundRoundness(4)
    if theme.current().dark:
        chart.setTheme(QChart.ChartTheme.ChartThemeDark)
    return chart


def _value_axis(top: int) -> QValueAxis:
    """A count axis from 0 with whole-number ticks."""
    axis = QValueAxis()
    axis.setLabelFormat("%d")
    intervals = min(5, max(1, top))
    step = max(1, -(-top // intervals))
    axis.setRange(0, step * intervals)
    axis.setTickCount(intervals + 1)
    return axis


def _filled(stats: DecisionStats) -> list[TimeBucket]:
    """Every bucket of the period, empty ones as zeros, so the line drops to 0 where nothing was decided."""
    known = {bucket.start_s: bucket for bucket in stats.per_bucket}
    if not known:
        return []
    first = min(known) if stats.since_s is None else stats.since_s - stats.since_s % stats.bucket_s
    last = max(*known, stats.until_s - stats.until_s % stats.bucket_s)
    return [known.get(start, TimeBucket(start, 0, 0)) for start in range(first, last + 1, stats.bucket_s)]


def over_time(stats: DecisionStats) -> QChart:
    """Decisions and expiries per hour (per day beyond a week) over a date axis (its labels are never elided)."""
    unit = "hour" if stats.bucket_s == HOUR_S else "day"
    chart = _chart(f"Decisions per {unit}")
    colors = theme.current()
    buckets = _filled(stats)
    axis_x = QDateTimeAxis()
    axis_x.setFormat("HH:mm" if stats.bucket_s == HOUR_S and len(buckets) <= 48 else "MMM d")
    axis_x.setTickCount(min(9, max(2, len(buckets))))
    chart.addAxis(axis_x, Qt.AlignmentFlag.AlignBottom)
    axis_y = _value_axis(max((max(b.decided, b.expired) for b in buckets), default=0))
    chart.addAxis(axis_y, Qt.AlignmentFlag.AlignLeft)
    for name, color, values in (
        ("decided", colors.ok, [b.decided for b in buckets]),
        ("expired", colors.warning, [b.expired for b in buckets]),
    ):
        series = QLineSeries()
        series.setName(name)
        pen = series.pen()
        pen.setColor(color)
        pen.setWidthF(2.0)
        series.setPen(pen)
        for bucket, value in zip(buckets, values, strict=True):
            series.append(float(bucket.start_s * 1000), float(value))
        chart.addSeries(series)
        series.attachAxis(axis_x)
        series.attachAxis(axis_y)
    if buckets:
        axis_x.setRange(
            QDateTime.fromSecsSinceEpoch(buckets[0].start_s), QDateTime.fromSecsSinceEpoch(buckets[-1].start_s)
        )
    chart.legend().setVisible(True)
    chart.legend().setAlignment(Qt.AlignmentFlag.AlignTop)
    return chart


def histogram(title: str, pairs: list[tuple[str, int]], color: QColor) -> QChart:
    """Horizontal bars in the buckets' order, fastest at the top (labels on the left are never elided)."""
    return ranking(title, pairs, color)


def ranking(title: str, pairs: list[tuple[str, int]], color: QColor) -> QChart:
    """Horizontal bars, busiest at the top (agents, tools, reviewers, rules)."""
    chart = _chart(title)
    bars = QBarSet(title)
    bars.setColor(color)
    ordered = list(reversed(pairs))  # a horizontal bar axis runs bottom-up
    for _, count in ordered:
        bars.append(count)
    series = QHorizontalBarSeries()
    series.append(bars)
    chart.addSeries(series)
    categories = QBarCategoryAxis()
    categories.append([_short(label) for label in _unique(label for label, _ in ordered)] or ["none"])
    chart.addAxis(categories, Qt.AlignmentFlag.AlignLeft)
    series.attachAxis(categories)
    values = _value_axis(max((n for _, n in pairs), default=0))
    chart.addAxis(values, Qt.AlignmentFlag.AlignBottom)
    series.attachAxis(values)
    return chart


def _unique(labels: Iterable[str]) -> list[str]:
    seen: dict[str, int] = {}
    result = []
    for text in labels:
        seen[text] = seen.get(text, 0) + 1
        result.append(text if seen[text] == 1 else f"{text} ({seen[text]})")
    return result


def _short(label: str, keep: int = 28) -> str:
    return label if len(label) <= keep else label[: keep // 2] + "…" + label[-(keep // 2 - 1) :]


def chart_view(chart: QChart) -> QChartView:
    view = QChartView(chart)
    view.setRenderHint(QPainter.RenderHint.Antialiasing)
    view.setMinimumSize(320, 220)
    return view
