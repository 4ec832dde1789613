"""QtCharts bar charts built from :class:`DecisionStats` (QtCharts: Qt's own, ~4 MB in the bundle, no numpy)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from PySide6.QtCharts import (
    QBarCategoryAxis,
    QBarSeries,
    QBarSet,
    QChart,
    QChartView,
    QHorizontalBarSeries,
    QStackedBarSeries,
    QValueAxis,
)
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPainter

from reviewer_app.domain.stats import HOUR_S, DecisionStats
from reviewer_app.ui import theme

MAX_TIME_LABELS = 12


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
    axis = QValueAxis()
    axis.setLabelFormat("%d")
    axis.setRange(0, max(1, top))
    axis.setTickCount(min(6, max(2, top + 1)))
    return axis


def _bucket_label(start_s: int, bucket_s: int) -> str:
    moment = datetime.fromtimestamp(start_s)
    return moment.strftime("%d %H:00" if bucket_s == HOUR_S else "%b %d")


def over_time(stats: DecisionStats) -> QChart:
    """Decisions and expiries per hour (per day beyond a week), stacked."""
    unit = "hour" if stats.bucket_s == HOUR_S else "day"
    chart = _chart(f"Decisions per {unit}")
    decided, expired = QBarSet("decided"), QBarSet("expired")
    decided.setColor(theme.current().ok)
    expired.setColor(theme.current().warning)
    labels = []
    step = max(1, len(stats.per_bucket) // MAX_TIME_LABELS)
    for position, bucket in enumerate(stats.per_bucket):
        decided.append(bucket.decided)
        expired.append(bucket.expired)
        # Category labels must be unique: the skipped ones get invisible distinct padding.
        labels.append(_bucket_label(bucket.start_s, stats.bucket_s) if position % step == 0 else "\u200b" * position)
    series = QStackedBarSeries()
    series.append(decided)
    series.append(expired)
    chart.addSeries(series)
    categories = QBarCategoryAxis()
    categories.append(labels or ["no decisions"])
    categories.setLabelsAngle(-60 if len(labels) > 6 else 0)
    chart.addAxis(categories, Qt.AlignmentFlag.AlignBottom)
    series.attachAxis(categories)
    top = max((b.decided + b.expired for b in stats.per_bucket), default=0)
    values = _value_axis(top)
    chart.addAxis(values, Qt.AlignmentFlag.AlignLeft)
    series.attachAxis(values)
    chart.legend().setVisible(True)
    chart.legend().setAlignment(Qt.AlignmentFlag.AlignTop)
    return chart


def histogram(title: str, pairs: list[tuple[str, int]], color: QColor) -> QChart:
    """Vertical bars, one per label (the time-to-decision buckets)."""
    chart = _chart(title)
    bars = QBarSet(title)
    bars.setColor(color)
    for _, count in pairs:
        bars.append(count)
    series = QBarSeries()
    series.append(bars)
    chart.addSeries(series)
    categories = QBarCategoryAxis()
    categories.append([label for label, _ in pairs] or ["none"])
    chart.addAxis(categories, Qt.AlignmentFlag.AlignBottom)
    series.attachAxis(categories)
    values = _value_axis(max((n for _, n in pairs), default=0))
    chart.addAxis(values, Qt.AlignmentFlag.AlignLeft)
    series.attachAxis(values)
    return chart


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
