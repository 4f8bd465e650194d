"""The console's small charts as SVG geometry, computed here so the templates only draw.

Pure functions of a ``TrustSummary`` (the overview) or a model's calibration
report (ROC and reliability): numbers in, rectangles, polyline points and dots
out, each with the text a screen reader (and a hover title) needs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from exporters.record_summary import HISTOGRAM_BINS, TimeBucket
from scoring import ScoreQuality

__all__ = ["Bar", "Curve", "Line", "ReliabilityDot", "histogram", "rate_line", "reliability_dots", "roc_curves"]

WIDTH, HEIGHT, PAD = 300, 90, 4  # the histogram's view box
LINE_WIDTH, LINE_HEIGHT = 600, 140  # the rate line's: it spans two cards


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    title: str
    low: bool  # the bin lies under the untrusted threshold's neighbourhood (score < 0.4): drawn in the alert colour


@dataclass(frozen=True)
class Line:
    points: str  # SVG polyline points, "x,y x,y ..."
    dots: list[tuple[float, float, str]]  # each bucket with data: x, y, title
    start: str
    end: str
    peak: float | None


def histogram(counts: list[int]) -> list[Bar]:
    """Ten bars over [0, 1]; heights relative to the tallest."""
    tallest = max(counts, default=0) or 1
    step = (WIDTH - 2 * PAD) / HISTOGRAM_BINS
    bars = []
    for index, count in enumerate(counts):
        height = (HEIGHT - 2 * PAD) * count / tallest
        low, high = index / HISTOGRAM_BINS, (index + 1) / HISTOGRAM_BINS
        bars.append(
            Bar(
                x=PAD + index * step + 1,
                y=HEIGHT - PAD - height,
                width=step - 2,
                height=height,
                title=f"{count} with score {low:.1f}–{high:.1f}",
                low=high <= 0.4,
            )
        )
    return bars


def _clock(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(seconds))


def rate_line(buckets: list[TimeBucket]) -> Line:
    """The untrusted share per time bucket (buckets without scored records leave a gap in the dots, not a zero)."""
    step = (LINE_WIDTH - 2 * PAD) / max(len(buckets) - 1, 1)
    dots = []
    for index, bucket in enumerate(buckets):
        if bucket.rate is None:
            continue
        x = PAD + index * step
        y = LINE_HEIGHT - PAD - (LINE_HEIGHT - 2 * PAD) * bucket.rate
        dots.append(
            (
                round(x, 1),
                round(y, 1),
                f"{_clock(bucket.start)}: {bucket.untrusted} of {bucket.scored} untrusted ({bucket.rate:.0%})",
            )
        )
    rates = [b.rate for b in buckets if b.rate is not None]
    return Line(
        points=" ".join(f"{x},{y}" for x, y, _ in dots),
        dots=dots,
        start=_clock(buckets[0].start) if buckets else "",
        end=_clock(buckets[-1].start) if buckets else "",
        peak=max(rates) if rates else None,
    )


SQUARE = 200  # the calibration page's charts: a unit square drawn in a 200 x 200 view box
CURVE_SCORES = ("ov", "fitted")  # the default Trust_OV and the learned one, the two an operator chooses between


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


def _square(x: float, y: float) -> tuple[float, float]:
    """A point of the unit square in the view box (y up)."""
    return round(PAD + x * (SQUARE - 2 * PAD), 1), round(SQUARE - PAD - y * (SQUARE - 2 * PAD), 1)


def roc_curves(scores: dict[str, ScoreQuality]) -> list[Curve]:
    """The ROC of the default and the learned Trust_OV (those the report has points for)."""
    curves = []
    for name in CURVE_SCORES:
        quality = scores.get(name)
        if quality is None or not quality.roc:
            continue
        points = " ".join(f"{x},{y}" for x, y in (_square(fpr, tpr) for fpr, tpr in quality.roc))
        curves.append(Curve(name, points, f"{name}: AUROC {quality.auroc:.3f}" if quality.auroc is not None else name))
    return curves


def reliability_dots(scores: dict[str, ScoreQuality]) -> list[ReliabilityDot]:
    """Mean score against accuracy per bin, for the default and the learned Trust_OV."""
    dots = []
    for name in CURVE_SCORES:
        quality = scores.get(name)
        if quality is None:
            continue
        for mean, accuracy, count in quality.reliability:
            x, y = _square(mean, accuracy)
            dots.append(
                ReliabilityDot(
                    name,
                    x,
                    y,
                    round(2 + min(count, 50) ** 0.5, 1),
                    f"{name}: {count} answers scored {mean:.2f} on average, {accuracy:.0%} right",
                )
            )
    return dots
