"""Aggregates over the trust records of a time window: what the console's overview draws.

Pure: the stores hand over one ``SummaryRow`` per record in the window and
``summarize`` counts. A store reads at most ``MAX_SUMMARY_RECORDS`` rows,
newest first, and says so in ``truncated`` rather than answer slowly.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import NamedTuple

from pydantic import BaseModel, Field, computed_field

from scoring import UNKNOWN_LABEL, TrustRecord

__all__ = ["MAX_SUMMARY_RECORDS", "LabelCount", "SummaryRow", "TrustSummary", "summarize"]

MAX_SUMMARY_RECORDS = 50_000
HISTOGRAM_BINS = 10
NO_LABEL = "none"  # records without a score: pending, failed, shed, skipped, not_applicable


class SummaryRow(NamedTuple):
    created_at: float
    model: str | None
    label: str | None
    score: float | None

    @classmethod
    def of(cls, record: TrustRecord) -> SummaryRow:
        return cls(record.created_at, record.model, record.label, record.score)


class LabelCount(NamedTuple):
    """How many of a model group's records carry a user's label (feedback), and how many say correct."""

    model: str
    labels: int
    correct: int


class ModelSummary(BaseModel):
    total: int = 0
    by_label: dict[str, int] = Field(default_factory=dict)
    # Counts of scores in [i/10, (i+1)/10), the last bin closed at 1.0.
    histogram: list[int] = Field(default_factory=lambda: [0] * HISTOGRAM_BINS)


class TimeBucket(BaseModel):
    start: float
    # records with a verdict: labelled trusted, uncertain or untrusted (an unknown label is no verdict, and a
    # not_applicable answer has no label), so neither moves the untrusted share
    scored: int
    untrusted: int

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rate(self) -> float | None:
        return self.untrusted / self.scored if self.scored else None


class TrustSummary(BaseModel):
    since: float
    until: float
    total: int
    truncated: bool = False
    by_label: dict[str, int]
    models: dict[str, ModelSummary]
    bucket_s: float
    low_trust: list[TimeBucket]


def _bin(score: float) -> int:
    return min(HISTOGRAM_BINS - 1, max(0, math.floor(score * HISTOGRAM_BINS)))


def summarize(
    rows: Iterable[SummaryRow], *, since: float, until: float, buckets: int, truncated: bool = False
) -> TrustSummary:
    """Counts by label and model, a score histogram per model, and the untrusted share per time bucket (of the
    answers with a verdict)."""
    bucket_s = (until - since) / buckets
    by_label: Counter[str] = Counter()
    models: dict[str, ModelSummary] = defaultdict(ModelSummary)
    scored, untrusted = [0] * buckets, [0] * buckets
    total = 0
    for row in rows:
        total += 1
        label = row.label or NO_LABEL
        by_label[label] += 1
        summary = models[row.model or "unknown"]
        summary.total += 1
        summary.by_label[label] = summary.by_label.get(label, 0) + 1
        if row.score is not None:
            summary.histogram[_bin(row.score)] += 1
        if row.label is not None and row.label != UNKNOWN_LABEL:
            index = min(buckets - 1, max(0, int((row.created_at - since) // bucket_s)))
            scored[index] += 1
            untrusted[index] += row.label == "untrusted"
    return TrustSummary(
        since=since,
        until=until,
        total=total,
        truncated=truncated,
        by_label=dict(by_label),
        models=dict(sorted(models.items())),
        bucket_s=bucket_s,
        low_trust=[
            TimeBucket(start=since + i * bucket_s, scored=scored[i], untrusted=untrusted[i]) for i in range(buckets)
        ],
    )
