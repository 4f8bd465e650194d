"""A scoring worker process's counts, carried to the gateway that serves ``/metrics`` (``scoring.worker: child``).

The local worker builds the same ``GatewayMetrics`` on its own registry and
counts there what scoring does (scorers' upstream calls, tries and tokens,
records by status and score, refused calls, store sheds). After each job it
sends what its counters and histograms gained since the last send
(``DeltaTracker.take``); the gateway adds that to its own series of the same
names (``DeltaSink``). So ``/metrics`` reads exactly as when scoring ran in
the gateway: one series per name and labels, never reset by a worker's
restart, and a record's counts are in before its record reaches the gateway.

Gauges and the ``process_*`` series are the worker's own and are not carried.
A histogram gains by bucket: prometheus_client has no public call that adds a
count to a bucket, so ``DeltaSink`` adds to the bucket's value directly.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from pydantic import BaseModel, ConfigDict

from .prometheus import GatewayMetrics

__all__ = ["DeltaSink", "DeltaTracker", "MetricDeltas"]

Labels = tuple[tuple[str, str], ...]


class CounterDelta(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str  # the family's name (``trustgate_upstream_calls``)
    labels: dict[str, str]
    amount: float


class HistogramDelta(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    labels: dict[str, str]
    buckets: list[float]  # observations gained per bucket (not cumulative), in the histogram's bucket order
    sum: float


class MetricDeltas(BaseModel):
    model_config = ConfigDict(extra="forbid")

    counters: list[CounterDelta] = []
    histograms: list[HistogramDelta] = []

    def __bool__(self) -> bool:
        return bool(self.counters or self.histograms)


class DeltaTracker:
    """The worker's side: what its registry's counters and histograms gained since the last ``take``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry
        self._seen: dict[tuple[str, str, Labels], float] = {}

    def take(self) -> MetricDeltas:
        counters: list[CounterDelta] = []
        histograms: dict[tuple[str, Labels], dict[str, Any]] = {}
        for family in self._registry.collect():
            if family.type not in ("counter", "histogram") or family.name.startswith("process_"):
                continue
            for sample in family.samples:
                suffix = sample.name[len(family.name) :]
                if suffix not in ("_total", "_bucket", "_sum"):
                    continue  # _created, and _count (the +Inf bucket says it)
                labels = tuple(sorted((k, v) for k, v in sample.labels.items() if k != "le"))
                key = (sample.name, sample.labels.get("le", ""), labels)
                gained = sample.value - self._seen.get(key, 0.0)
                self._seen[key] = sample.value
                if family.type == "counter":
                    if gained:
                        counters.append(CounterDelta(name=family.name, labels=dict(labels), amount=gained))
                    continue
                entry = histograms.setdefault((family.name, labels), {"cumulative": [], "sum": 0.0})
                if suffix == "_bucket":
                    entry["cumulative"].append(gained)
                else:
                    entry["sum"] = gained
        return MetricDeltas(
            counters=counters,
            histograms=[
                HistogramDelta(
                    name=name,
                    labels=dict(labels),
                    sum=entry["sum"],
                    buckets=[b - a for a, b in itertools.pairwise([0.0, *entry["cumulative"]])],
                )
                for (name, labels), entry in histograms.items()
                if any(entry["cumulative"])
            ],
        )


class DeltaSink:
    """The gateway's side: adds a worker's gains to its own series of the same names."""

    def __init__(self, metrics: GatewayMetrics) -> None:
        self._known: dict[str, Counter | Histogram] = {}
        for field in dataclasses.fields(metrics):
            metric = getattr(metrics, field.name)
            if isinstance(metric, Counter | Histogram):
                self._known[metric._name] = metric

    def apply(self, deltas: MetricDeltas) -> None:
        """Add ``deltas``; a name or a bucket layout this gateway lacks is skipped."""
        for counter in deltas.counters:
            metric = self._known.get(counter.name)
            if isinstance(metric, Counter) and counter.amount > 0:
                (metric.labels(**counter.labels) if counter.labels else metric).inc(counter.amount)
        for gained in deltas.histograms:
            histogram = self._known.get(gained.name)
            if not isinstance(histogram, Histogram):
                continue
            child = histogram.labels(**gained.labels)
            buckets = child._buckets
            if len(buckets) != len(gained.buckets):
                continue
            for bucket, amount in zip(buckets, gained.buckets, strict=True):
                if amount:
                    bucket.inc(amount)
            child._sum.inc(gained.sum)
