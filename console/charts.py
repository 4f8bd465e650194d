"""The overview's small charts as SVG geometry, computed here so the templates only draw.

Pure functions of a ``TrustSummary``: numbers in, rectangles and polyline
points out, each with the text a screen reader (and a hover title) needs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from exporters.record_summary import HISTOGRAM_BINS, TimeBucket

__all__ = ["Bar", "Line", "histogram", "rate_line"]

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
        bars.append(Bar(x=PAD + index * step + 1, y=HEIGHT - PAD - height, width=step - 2, height=height,
                        title=f"{count} with score {low:.1f}–{high:.1f}", low=high <= 0.4))
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
        dots.append((round(x, 1), round(y, 1),
                     f"{_clock(bucket.start)}: {bucket.untrusted} of {bucket.scored} untrusted ({bucket.rate:.0%})"))
    rates = [b.rate for b in buckets if b.rate is not None]
    return Line(points=" ".join(f"{x},{y}" for x, y, _ in dots), dots=dots,
                start=_clock(buckets[0].start) if buckets else "", end=_clock(buckets[-1].start) if buckets else "",
                peak=max(rates) if rates else None)
