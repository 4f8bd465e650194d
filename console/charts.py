"""The console's small charts as SVG geometry, computed here so the templates only draw.

Pure functions of a ``TrustSummary`` (the overview) or a model's calibration
report (ROC and reliability): numbers in, a frame (the plot area, each axis's
ticks and its title with its unit) and the marks inside it out, each mark with
the text a screen reader (and a hover title) needs. Every chart says what its
axes measure, so that a chart read alone (a screenshot in a ticket) still says
what it shows.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from exporters.record_summary import HISTOGRAM_BINS, TimeBucket
from scoring import ScoreQuality

__all__ = [
    "Bar",
    "Curve",
    "Frame",
    "Histogram",
    "RateLine",
    "ReliabilityDot",
    "Tick",
    "histogram",
    "rate_line",
    "reliability_chart",
    "roc_chart",
]


@dataclass(frozen=True)
class Tick:
    at: float  # where along its axis, in view-box units
    text: str


@dataclass(frozen=True)
class Frame:
    """A chart's view box, its plot area inside it, and what each axis says (its title carries the unit)."""

    width: int
    height: int
    left: float
    right: float
    top: float
    bottom: float
    x_title: str
    y_title: str
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]

    def x(self, fraction: float) -> float:
        return round(self.left + fraction * (self.right - self.left), 1)

    def y(self, fraction: float) -> float:
        return round(self.bottom - fraction * (self.bottom - self.top), 1)


def _frame(
    size: tuple[int, int],
    x_title: str,
    y_title: str,
    x_ticks: list[tuple[float, str]],
    y_ticks: list[tuple[float, str]],
) -> Frame:
    """Margins that leave room for the tick labels (left, below) and the axis titles (the y axis's above it, so
    that it reads without turning the head); ticks at fractions of each axis."""
    width, height = size
    frame = Frame(width, height, 68, width - 32, 44, height - 52, x_title, y_title, (), ())
    return dataclasses.replace(
        frame,
        x_ticks=tuple(Tick(frame.x(at), text) for at, text in x_ticks),
        y_ticks=tuple(Tick(frame.y(at), text) for at, text in y_ticks),
    )


PERCENT_TICKS = [(0.0, "0%"), (0.5, "50%"), (1.0, "100%")]
UNIT_TICKS = [(0.0, "0"), (0.5, "0.5"), (1.0, "1")]


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    title: str
    low: bool  # the bin lies under the untrusted threshold's neighbourhood (score < 0.4): drawn in the alert colour


@dataclass(frozen=True)
class Histogram:
    frame: Frame
    bars: list[Bar]


def histogram(counts: list[int]) -> Histogram:
    """Ten bars over scores [0, 1]; heights relative to the tallest, whose count the y axis names."""
    tallest = max(counts, default=0)
    frame = _frame(
        (320, 190),
        "Trust score (0–1)",
        "Answers (count)",
        UNIT_TICKS,
        [(0.0, "0")] + ([(1.0, str(tallest))] if tallest else []),
    )
    step = (frame.right - frame.left) / HISTOGRAM_BINS
    bars = []
    for index, count in enumerate(counts):
        height = (frame.bottom - frame.top) * count / (tallest or 1)
        low, high = index / HISTOGRAM_BINS, (index + 1) / HISTOGRAM_BINS
        bars.append(
            Bar(
                x=round(frame.left + index * step + 1, 1),
                y=round(frame.bottom - height, 1),
                width=round(step - 2, 1),
                height=round(height, 1),
                title=f"{count} with score {low:.1f}–{high:.1f}",
                low=high <= 0.4,
            )
        )
    return Histogram(frame, bars)


@dataclass(frozen=True)
class RateLine:
    frame: Frame
    # One polyline per run of consecutive buckets with scored records, as steps: each bucket's share drawn across
    # its own time span. A bucket without scored records ends a run, so it shows as a gap, never as a zero.
    segments: list[str]
    dots: list[tuple[float, float, str]]  # each bucket with data at its middle: x, y, title
    peak: float | None
    step: str  # how long one bucket is, as a person says it


def _clock(seconds: float, window_s: float) -> str:
    """A tick's time: the hour within a day's window, the day beyond."""
    return time.strftime("%H:%M" if window_s <= 86400 else "%d %b", time.gmtime(seconds))


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(seconds))


def rate_line(buckets: list[TimeBucket], since: float, until: float) -> RateLine:
    """The untrusted share per time bucket over the whole window ``since``–``until``."""
    window_s = max(until - since, 1.0)
    frame = _frame(
        (640, 230),
        "Time (UTC)",
        "Untrusted answers (%)",
        [(fraction, _clock(since + fraction * window_s, window_s)) for fraction in (0.0, 0.25, 0.5, 0.75, 1.0)],
        PERCENT_TICKS,
    )
    count = max(len(buckets), 1)
    segments: list[str] = []
    run: list[str] = []
    dots = []
    for index, bucket in enumerate([*buckets, None]):
        if bucket is None or bucket.rate is None:
            if run:
                segments.append(" ".join(run))
            run = []
            continue
        y = frame.y(bucket.rate)
        run += [f"{frame.x(index / count)},{y}", f"{frame.x((index + 1) / count)},{y}"]
        dots.append(
            (
                frame.x((index + 0.5) / count),
                y,
                f"{_when(bucket.start)}: {bucket.untrusted} of {bucket.scored} untrusted ({bucket.rate:.0%})",
            )
        )
    rates = [b.rate for b in buckets if b.rate is not None]
    return RateLine(frame, segments, dots, max(rates) if rates else None, _span(window_s / count))


def _span(seconds: float) -> str:
    minutes = seconds / 60
    return f"{minutes / 60:g} h" if minutes >= 60 else f"{minutes:g} min"


CURVE_SCORES = ("ov", "fitted")  # the default Trust_OV and the learned one, the two an operator chooses between
SQUARE = (250, 264)  # the calibration page's charts: a unit square, with room for the axes' labels


@dataclass(frozen=True)
class Curve:
    score: str  # "ov" or "fitted": also the CSS class of its stroke
    points: str  # SVG polyline points
    title: str


@dataclass(frozen=True)
class ReliabilityDot:
    score: str
    x: float
    y: float
    r: float  # grows with the bin's count
    title: str


@dataclass(frozen=True)
class Roc:
    frame: Frame
    curves: list[Curve]


@dataclass(frozen=True)
class Reliability:
    frame: Frame
    dots: list[ReliabilityDot]


def roc_chart(scores: dict[str, ScoreQuality]) -> Roc:
    """The ROC of the default and the learned Trust_OV (those the report has points for)."""
    frame = _frame(SQUARE, "False positive rate (0–1)", "True positive rate (0–1)", UNIT_TICKS, UNIT_TICKS)
    curves = []
    for name in CURVE_SCORES:
        quality = scores.get(name)
        if quality is None or not quality.roc:
            continue
        points = " ".join(f"{frame.x(fpr)},{frame.y(tpr)}" for fpr, tpr in quality.roc)
        curves.append(Curve(name, points, f"{name}: AUROC {quality.auroc:.3f}" if quality.auroc is not None else name))
    return Roc(frame, curves)


def reliability_chart(scores: dict[str, ScoreQuality]) -> Reliability:
    """Mean score against accuracy per bin, for the default and the learned Trust_OV."""
    frame = _frame(SQUARE, "Mean score (0–1)", "Answers right (%)", UNIT_TICKS, PERCENT_TICKS)
    dots = []
    for name in CURVE_SCORES:
        quality = scores.get(name)
        if quality is None:
            continue
        for mean, accuracy, count in quality.reliability:
            dots.append(
                ReliabilityDot(
                    name,
                    frame.x(mean),
                    frame.y(accuracy),
                    round(2 + min(count, 50) ** 0.5, 1),
                    f"{name}: {count} answers scored {mean:.2f} on average, {accuracy:.0%} right",
                )
            )
    return Reliability(frame, dots)
