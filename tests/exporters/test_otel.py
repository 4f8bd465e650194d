"""GenAI evaluation events for every score, RAG metrics and the calibrated probability included; and what a
gateway that exports no traces still carries."""

from __future__ import annotations

import pytest
from opentelemetry import context as otel_context
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.trace import NoOpTracer, NoOpTracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from exporters import RequestTrace, Telemetry
from exporters.otel import disabled_telemetry, upstream_span
from scoring.types import ComponentResult, TrustRecord

pytestmark = pytest.mark.unit


def test_rag_component_emits_its_trust_eval_metrics() -> None:
    logs = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    telemetry = Telemetry(NoOpTracerProvider().get_tracer("t"), provider.get_logger("t"))
    rag = ComponentResult(
        component="rag",
        value=0.75,
        label="answer",
        details={
            "citation_recall": 0.5,
            "citation_precision": 1.0,
            "groundedness": 0.75,
            "claim_correctness": None,
            "refusal": False,
        },
    )
    telemetry.emit_evaluations(TrustRecord(id="trust-1", status="done", components={"rag": rag}))
    events = {r.log_record.attributes["gen_ai.evaluation.name"]: r.log_record for r in logs.get_finished_logs()}  # type: ignore[index]
    assert set(events) == {
        "trustgate.rag_trust",
        "trustgate.citation_recall",
        "trustgate.citation_precision",
        "trustgate.groundedness",
    }
    assert events["trustgate.rag_trust"].attributes["gen_ai.evaluation.score.label"] == "answer"  # type: ignore[index]
    assert events["trustgate.citation_recall"].attributes["gen_ai.evaluation.score.value"] == 0.5  # type: ignore[index]
    assert all(
        e.event_name == "gen_ai.evaluation.result"
        and e.attributes["trustgate.trust.id"] == "trust-1"  # type: ignore[index]
        and "gen_ai.response.id" not in e.attributes
        for e in events.values()
    )  # type: ignore[operator]


def test_a_calibrated_record_emits_its_probability() -> None:
    logs = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    telemetry = Telemetry(NoOpTracerProvider().get_tracer("t"), provider.get_logger("t"))
    ov = ComponentResult(component="ov", value=0.58)
    telemetry.emit_evaluations(
        TrustRecord(id="trust-2", status="done", components={"ov": ov}, score=0.58, probability=0.28, label="uncertain")
    )
    events = {
        r.log_record.attributes["gen_ai.evaluation.name"]: r.log_record.attributes  # type: ignore[index]
        for r in logs.get_finished_logs()
    }
    assert set(events) == {"trustgate.trust_ov", "trustgate.trust_probability"}
    assert events["trustgate.trust_probability"]["gen_ai.evaluation.score.value"] == 0.28
    assert events["trustgate.trust_ov"]["gen_ai.evaluation.score.label"] == "uncertain"


@pytest.mark.parametrize(
    "headers",
    [
        {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
        {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"},
        {"traceparent": "not a traceparent"},
        {},
    ],
)
def test_an_untraced_request_carries_the_callers_traceparent_as_the_apis_no_op_span_does(
    headers: dict[str, str],
) -> None:
    """Telemetry off: no span is made, yet the scoring job gets the very ``traceparent`` it got before."""
    untraced = disabled_telemetry().start_request(headers)
    as_before = RequestTrace(NoOpTracer().start_span("chat", context=TraceContextTextMapPropagator().extract(headers)))
    assert untraced.traceparent == as_before.traceparent
    assert (untraced.traceparent is not None) == headers.get("traceparent", "").startswith("00-")


def test_an_untraced_try_makes_no_span_and_leaves_the_context_as_it_was() -> None:
    before = otel_context.get_current()
    with upstream_span(
        NoOpTracer(), endpoint="chat", group="g", model="m", deployment="g:0", attempt=0, address=None
    ) as span:
        assert not span.is_recording() and otel_context.get_current() is before
