"""The console's chart geometry: the rate line's steps and gaps over the whole window, and axes that say what
they measure."""

from __future__ import annotations

import pytest

from console.charts import histogram, rate_line, reliability_chart, roc_chart
from exporters.record_summary import TimeBucket
from scoring import ScoreQuality

pytestmark = pytest.mark.unit

HOUR = 3600.0


def buckets(*shares: tuple[int, int] | None) -> list[TimeBucket]:
    """Hourly buckets from 0: (untrusted, scored) each, None for an hour without scored records."""
    return [
        TimeBucket(start=i * HOUR, scored=share[1] if share else 0, untrusted=share[0] if share else 0)
        for i, share in enumerate(shares)
    ]


def xs(points: str) -> list[float]:
    return [float(point.split(",")[0]) for point in points.split()]


def test_the_rate_line_draws_each_run_of_hours_as_steps_and_leaves_the_others_as_gaps() -> None:
    line = rate_line(buckets(None, (1, 2), (0, 4), None, None, (1, 1)), 0.0, 6 * HOUR)
    frame = line.frame
    step = (frame.right - frame.left) / 6
    assert [xs(points) for points in line.segments] == [
        [frame.left + step, frame.left + 2 * step, frame.left + 2 * step, frame.left + 3 * step],
        [frame.left + 5 * step, frame.right],
    ]
    heights = [float(point.split(",")[1]) for point in line.segments[0].split()]
    assert heights == [frame.y(0.5), frame.y(0.5), frame.y(0.0), frame.y(0.0)]
    assert len(line.dots) == 3 and line.peak == 1.0 and line.step == "1 h"
    assert [tick.text for tick in frame.x_ticks] == ["00:00", "01:30", "03:00", "04:30", "06:00"]
    assert (frame.x_ticks[0].at, frame.x_ticks[-1].at) == (frame.left, frame.right)  # the whole window
    assert [tick.text for tick in frame.y_ticks] == ["0%", "50%", "100%"]


def test_a_week_reads_in_days_and_a_quiet_window_draws_nothing() -> None:
    week = rate_line(buckets(*[None] * 24), 0.0, 7 * 24 * HOUR)
    assert week.segments == [] and week.dots == [] and week.peak is None and week.step == "7 h"
    assert [tick.text for tick in week.frame.x_ticks][:2] == ["01 Jan", "02 Jan"]


def test_every_chart_names_its_axes_with_their_units() -> None:
    quality = ScoreQuality(
        n=10, auroc=0.8, ece=0.1, cross_validated=True, roc=[(0.0, 0.0), (1.0, 1.0)], reliability=[(0.5, 0.5, 10)]
    )
    charts = [
        histogram([0, 1, 4, 0, 0, 0, 0, 2, 9, 3]).frame,
        rate_line(buckets((0, 1)), 0.0, HOUR).frame,
        roc_chart({"ov": quality}).frame,
        reliability_chart({"ov": quality}).frame,
    ]
    for frame in charts:
        for title in (frame.x_title, frame.y_title):
            assert title.endswith(")") and "(" in title
        assert len(frame.x_ticks) >= 2 and len(frame.y_ticks) >= 2
    assert [tick.text for tick in charts[0].y_ticks] == ["0", "9"]  # answers, up to the tallest bar's count
