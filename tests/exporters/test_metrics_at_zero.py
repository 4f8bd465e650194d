"""Series that exist at zero from start-up: every configured model's counters and histograms, with the label
values the config and the closed sets name, so that ``rate()`` sees a model's first event; the labels read
from a config; a local scoring worker that sends no zeros; the Redis worker's outcomes."""

from __future__ import annotations

from typing import get_args

import pytest
from prometheus_client import CollectorRegistry

from exporters import ConfiguredLabels, build_metrics, build_worker_metrics
from exporters.metric_deltas import DeltaSink, DeltaTracker
from exporters.prometheus import WORKER_OUTCOMES
from proxy import configured_labels, settings_from_dict
from scoring import ANSWER_KINDS, TrustRecord
from scoring.redis_queue import JobOutcome
from scoring.types import FAILURE_REASONS, ShedReason, TrustAction
from tests.conftest import MASTER_KEY, gateway_config

pytestmark = pytest.mark.unit

LABELS = ConfiguredLabels(
    models=("a", "b"),
    callers=(("master", "a"), ("master", "b"), ("team", "a")),
    endpoints=("chat", "embeddings"),
    streamed_endpoints=("chat",),
    components=("bc", "rag", "ov"),
    scorers=("bc", "rag"),
    deployments=(("a", "a:0"), ("b", "b:0"), ("b", "b:1")),
    fallbacks=(("a", "b"),),
    kinds=("factual", "creative", "tool_call"),
)
Series = dict[str, list[tuple[dict[str, str], float]]]


def series(registry: CollectorRegistry) -> Series:
    """Each sample name's (labels, value) pairs, without the ``_created`` timestamps."""
    found: Series = {}
    for family in registry.collect():
        for sample in family.samples:
            if not sample.name.endswith("_created"):
                found.setdefault(sample.name, []).append((sample.labels, sample.value))
    return found


def label_values(found: Series, name: str, label: str) -> set[str]:
    return {labels[label] for labels, _ in found.get(name, [])}


def test_every_model_labelled_series_starts_at_zero_for_every_configured_model() -> None:
    found = series(build_metrics(CollectorRegistry(), LABELS).registry)
    by_model = {name: samples for name, samples in found.items() if any("model" in labels for labels, _ in samples)}
    assert len(by_model) > 30
    per_pair = {"trustgate_fallbacks_skipped_total"}  # a group's fallbacks only
    for name, samples in by_model.items():
        expected = {"a"} if name in per_pair else {"a", "b"}
        assert label_values(found, name, "model") == expected, name
        assert all(value == 0 for _, value in samples), name


def test_the_known_label_values_start_at_zero() -> None:
    found = series(build_metrics(CollectorRegistry(), LABELS).registry)
    assert label_values(found, "trustgate_trust_actions_total", "action") == set(get_args(TrustAction))
    assert label_values(found, "trustgate_scoring_shed_jobs_total", "reason") == set(get_args(ShedReason))
    assert label_values(found, "trustgate_scorer_errors_total", "reason") == set(FAILURE_REASONS)
    assert label_values(found, "trustgate_scorer_errors_total", "component") == {"bc", "rag", "ov"}
    assert label_values(found, "trustgate_trust_score_count", "component") == {"bc", "rag", "ov"}
    assert label_values(found, "trustgate_upstream_calls_total", "purpose") == {"user", "bc", "rag"}
    assert label_values(found, "trustgate_trust_labels_total", "label") == {
        "trusted",
        "uncertain",
        "untrusted",
        "unknown",
    }
    assert label_values(found, "trustgate_scoring_jobs_total", "status") == {
        "done",
        "failed",
        "shed",
        "skipped",
        "not_applicable",
    }
    assert label_values(found, "trustgate_scoring_applicability_total", "kind") == {"factual", "creative", "tool_call"}
    assert label_values(found, "trustgate_rag_metric_count", "metric") == {
        "citation_recall",
        "citation_precision",
        "groundedness",
        "claim_correctness",
    }
    requests = {
        (labels["key"], labels["model"], labels["mode"], labels["endpoint"], labels["status"])
        for labels, _ in found["trustgate_requests_total"]
    }
    assert ("team", "a", "stream", "chat", "200") in requests and ("team", "b", "unary", "chat", "200") not in requests
    assert not any(mode == "stream" and endpoint == "embeddings" for _, _, mode, endpoint, _ in requests)
    assert label_values(found, "trustgate_upstream_tries_total", "deployment") == {"a:0", "b:0", "b:1"}
    assert {(labels["asked"], labels["answered"]) for labels, _ in found["trustgate_fallbacks_total"]} == {("a", "b")}
    assert label_values(found, "trustgate_alert_pushes_total", "outcome") == {"sent", "failed", "dropped"}


def test_without_labels_nothing_is_created_up_front() -> None:
    found = series(build_metrics(CollectorRegistry()).registry)
    assert "trustgate_scoring_jobs_total" not in found and "trustgate_trust_score_count" not in found


def test_rag_series_start_only_where_rag_scores() -> None:
    closed_book = ConfiguredLabels(models=("a",), components=("bc", "ov"), scorers=("bc",))
    found = series(build_metrics(CollectorRegistry(), closed_book).registry)
    assert "trustgate_rag_refusals_total" not in found and "trustgate_rag_metric_count" not in found


def test_the_redis_workers_outcomes_start_at_zero() -> None:
    assert set(WORKER_OUTCOMES) == set(get_args(JobOutcome))
    gateway = build_metrics(CollectorRegistry(), LABELS)
    build_worker_metrics(gateway.registry, gateway)
    found = series(gateway.registry)
    assert label_values(found, "trustgate_worker_jobs_total", "outcome") == set(WORKER_OUTCOMES)
    assert label_values(found, "trustgate_worker_job_duration_seconds_count", "outcome") == set(WORKER_OUTCOMES)
    assert label_values(found, "trustgate_scoring_dead_letters_total", "model") == {"a", "b"}


def test_a_local_worker_carries_only_what_it_counted() -> None:
    """Zeros gain nothing: a worker whose registry starts them sends nothing until it counts, and then only that."""
    worker = build_metrics(CollectorRegistry(), LABELS)
    tracker = DeltaTracker(worker.registry)
    assert not tracker.take()
    worker.observe_record(TrustRecord(id="r1", status="shed", model="a", shed_reason="queue_full", created_at=1.0))
    deltas = tracker.take()
    assert {(c.name, tuple(sorted(c.labels.values())), c.amount) for c in deltas.counters} == {
        ("trustgate_scoring_jobs", ("a", "shed"), 1.0),
        ("trustgate_scoring_shed_jobs", ("a", "queue_full"), 1.0),
    }
    assert not deltas.histograms
    gateway = build_metrics(CollectorRegistry(), LABELS)
    DeltaSink(gateway).apply(deltas)
    shed = series(gateway.registry)["trustgate_scoring_shed_jobs_total"]
    assert sorted(value for _, value in shed) == [0.0] * (len(shed) - 1) + [1.0]


def test_the_labels_a_config_names() -> None:
    config = gateway_config(
        "http://127.0.0.1:9",
        trustgate={
            "keys": [{"key": "sk-a", "name": "team", "models": ["cheap"]}],
            "scoring": {"rag": {"enabled": False}, "sc": {"enabled": False}},
        },
    )
    second = {**config["model_list"][0], "model_name": "backup"}
    config["model_list"] += [second, second]
    config["router_settings"]["model_group_alias"] = {"cheap": "fake"}
    config["router_settings"]["fallbacks"] = [{"cheap": ["backup"]}]
    labels = configured_labels(settings_from_dict(config, {}))
    assert labels.models == ("fake", "backup")
    assert set(labels.callers) == {("team", "fake"), ("master", "fake"), ("master", "backup")}
    assert labels.deployments == (("fake", "fake:0"), ("backup", "backup:0"), ("backup", "backup:1"))
    assert labels.fallbacks == (("fake", "backup"),)
    assert labels.scorers == ("bc", "fc", "lp", "ev") and labels.components == ("bc", "fc", "lp", "ev", "ov")
    assert set(labels.endpoints) == {"chat", "completions", "responses", "embeddings"}
    assert "embeddings" not in labels.streamed_endpoints
    assert labels.kinds == ANSWER_KINDS  # every kind triage tells apart, answers being triaged
    config["trustgate"]["scoring"]["applicability"] = {"enabled": False}
    assert configured_labels(settings_from_dict(config, {})).kinds == ()

    open_gateway = gateway_config("http://127.0.0.1:9", general_settings={}, trustgate={"allow_unauthenticated": True})
    assert configured_labels(settings_from_dict(open_gateway, {})).callers == (("anonymous", "fake"),)
    assert MASTER_KEY not in repr(labels)
