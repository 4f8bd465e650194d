"""A record's trust as headers and as the in-band trust object: its kind, status and what its score rests on."""

from __future__ import annotations

import time

import pytest
from prometheus_client import CollectorRegistry

from exporters import ConfiguredLabels, build_metrics, trust_event, trust_headers, trust_summary
from exporters.record_summary import SummaryRow, summarize
from scoring import Applicability, ComponentResult, TrustRecord

pytestmark = pytest.mark.unit

POEM = Applicability(kind="creative", reason="asks for creative writing (haiku)")
FACTUAL = Applicability(kind="factual", reason="asks a question (what …)")


def scored(**fields: object) -> TrustRecord:
    values: dict[str, object] = {
        "id": "trust-1",
        "status": "done",
        "score": 0.62,
        "label": "uncertain",
        "basis": "default",
        "applicability": FACTUAL,
        "components": {"bc": ComponentResult(component="bc", value=0.62)},
    }
    return TrustRecord.model_validate({**values, **fields})


def test_a_scored_answer_says_what_its_score_rests_on() -> None:
    headers = trust_headers(scored(missing={"sc": "budget", "fc": "timeout"}, informative=True))
    assert headers["x-trust-status"] == "done" and headers["x-trust-kind"] == "factual"
    assert headers["x-trust-missing"] == "fc,sc" and headers["x-trust-basis"] == "default"
    assert headers["x-trust-informative"] == "true" and headers["x-trust-label"] == "uncertain"
    plain = trust_headers(scored())
    assert "x-trust-missing" not in plain and "x-trust-informative" not in plain  # nothing missing; too few labels
    unknown = trust_headers(scored(label="unknown", informative=False, basis="learned"))
    assert unknown["x-trust-label"] == "unknown" and unknown["x-trust-informative"] == "false"
    assert unknown["x-trust-basis"] == "learned" and unknown["x-trust-score"] == "0.6200"


def test_the_trust_object_carries_status_applicability_and_grounds() -> None:
    summary = trust_summary(scored(missing={"fc": "error"}, informative=False, label="unknown"))
    assert summary["status"] == "done" and summary["label"] == "unknown"
    assert summary["applicability"] == {"kind": "factual", "reason": "asks a question (what …)"}
    assert summary["basis"] == "default" and summary["missing"] == {"fc": "error"} and summary["informative"] is False
    poem = TrustRecord(id="trust-2", status="not_applicable", applicability=POEM)
    event = trust_event(poem, sequence_number=7)
    assert event["trust"]["status"] == "not_applicable" and event["trust"]["applicability"]["kind"] == "creative"
    assert event["trust"]["score"] is None and "basis" not in event["trust"]


def test_a_not_applicable_answer_has_a_kind_and_no_score_no_label_no_basis() -> None:
    record = TrustRecord(
        id="trust-2",
        status="not_applicable",
        applicability=POEM,
        components={"lp": ComponentResult(component="lp", value=0.8)},
    )
    headers = trust_headers(record)
    assert headers["x-trust-status"] == "not_applicable" and headers["x-trust-kind"] == "creative"
    assert not {"x-trust-score", "x-trust-label", "x-trust-basis", "x-trust-missing"} & set(headers)
    assert headers["x-trust-lp"] == "0.8000"  # free, and shown as what it is


def test_not_applicable_answers_and_unknown_labels_stay_out_of_low_trust_rates() -> None:
    registry = CollectorRegistry()
    metrics = build_metrics(registry, ConfiguredLabels(models=("m",), kinds=("factual", "creative")))
    assert registry.get_sample_value("trustgate_scoring_applicability_total", {"model": "m", "kind": "creative"}) == 0
    poem = TrustRecord(
        id="p",
        status="not_applicable",
        model="m",
        applicability=POEM,
        components={"lp": ComponentResult(component="lp", value=0.1)},
    )
    metrics.observe_record(poem)
    metrics.observe_record(scored(model="m", label="unknown", score=0.05))
    metrics.observe_applicability("m", "creative")
    value = registry.get_sample_value
    assert value("trustgate_scoring_applicability_total", {"model": "m", "kind": "creative"}) == 1
    assert value("trustgate_scoring_jobs_total", {"model": "m", "status": "not_applicable"}) == 1
    assert value("trustgate_trust_score_count", {"model": "m", "component": "lp"}) is None  # not a trust score
    assert value("trustgate_trust_labels_total", {"model": "m", "label": "unknown"}) == 1
    assert value("trustgate_low_trust_responses_total", {"model": "m"}) == 0

    now = time.time()
    rows = [
        SummaryRow(now, "m", "untrusted", 0.1),
        SummaryRow(now, "m", "trusted", 0.9),
        SummaryRow(now, "m", "unknown", 0.05),
        SummaryRow.of(poem.model_copy(update={"created_at": now})),
    ]
    summary = summarize(rows, since=now - 10, until=now + 10, buckets=1)
    assert (summary.low_trust[0].scored, summary.low_trust[0].untrusted, summary.low_trust[0].rate) == (2, 1, 0.5)
    assert summary.by_label == {"untrusted": 1, "trusted": 1, "unknown": 1, "none": 1}
