"""A local scoring worker's counts carried to the gateway's series: counters and histograms arrive whole (every
bucket, the sum, the count), sent as JSON between the two registries, and a worker that starts again from zero
adds to what the gateway holds rather than resetting it."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from exporters import build_metrics
from exporters.metric_deltas import DeltaSink, DeltaTracker, MetricDeltas

pytestmark = pytest.mark.unit


def values(registry: CollectorRegistry, *names: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in registry.collect()
        if family.name in names
        for s in family.samples
        if not s.name.endswith("_created")
    }


def carried(tracker: DeltaTracker, sink: DeltaSink) -> None:
    sink.apply(MetricDeltas.model_validate_json(tracker.take().model_dump_json()))


def test_a_workers_counts_reach_the_gateways_series_and_survive_its_restart() -> None:
    gateway = build_metrics(CollectorRegistry())
    sink = DeltaSink(gateway)
    gateway.upstream_calls.labels(model="m", purpose="user").inc()  # the gateway's own count stays its own

    worker = build_metrics(CollectorRegistry())
    tracker = DeltaTracker(worker.registry)
    worker.upstream_calls.labels(model="m", purpose="sc").inc(3)
    worker.trust_score.labels(model="m", component="sc").observe(0.25)
    worker.trust_score.labels(model="m", component="sc").observe(0.95)
    worker.store_shed_writes.inc()  # a series without labels
    carried(tracker, sink)
    carried(tracker, sink)  # nothing new: nothing added twice

    names = ("trustgate_trust_score", "trustgate_store_shed_writes")
    assert values(gateway.registry, *names) == values(worker.registry, *names)
    calls = values(gateway.registry, "trustgate_upstream_calls")
    assert calls[("trustgate_upstream_calls_total", frozenset({("model", "m"), ("purpose", "sc")}))] == 3
    assert calls[("trustgate_upstream_calls_total", frozenset({("model", "m"), ("purpose", "user")}))] == 1

    restarted = build_metrics(CollectorRegistry())  # a new worker process counts from zero
    tracker = DeltaTracker(restarted.registry)
    restarted.upstream_calls.labels(model="m", purpose="sc").inc(2)
    restarted.trust_score.labels(model="m", component="sc").observe(0.55)
    carried(tracker, sink)
    calls = values(gateway.registry, "trustgate_upstream_calls")
    assert calls[("trustgate_upstream_calls_total", frozenset({("model", "m"), ("purpose", "sc")}))] == 5
    scores = values(gateway.registry, "trustgate_trust_score")
    labels = frozenset({("model", "m"), ("component", "sc")})
    assert scores[("trustgate_trust_score_count", labels)] == 3
    assert scores[("trustgate_trust_score_sum", labels)] == 0.25 + 0.95 + 0.55
    assert scores[("trustgate_trust_score_bucket", labels | {("le", "0.6")})] == 2
