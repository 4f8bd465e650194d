"""OpenTelemetry: a span per proxied request and per scoring job, and GenAI evaluation events.

Code elsewhere talks only to the tracer and logger held here. The SDK is wired
once, in ``configure_telemetry``, and only when enabled; OTLP export then
follows the standard ``OTEL_*`` environment variables (read by the exporter
itself). Evaluation results are LogRecords with
``event_name="gen_ai.evaluation.result"`` — the Events API was removed from
opentelemetry-python in 1.44.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from opentelemetry import trace
from opentelemetry._logs import LogRecord, NoOpLoggerProvider
from opentelemetry._logs import Logger as OtelLogger
from opentelemetry.trace import NoOpTracerProvider, Span, Tracer

from scoring.types import TrustRecord

from .prometheus import RAG_METRICS

__all__ = ["Telemetry", "configure_telemetry", "disabled_telemetry"]

EVALUATION_EVENT = "gen_ai.evaluation.result"
COMPONENT_NAMES = {"bc": "trustgate.trust_bc", "fc": "trustgate.trust_fc", "ov": "trustgate.trust_ov",
                   "rag": "trustgate.rag_trust"}


@dataclass(frozen=True)
class Telemetry:
    tracer: Tracer
    logger: OtelLogger

    @contextlib.contextmanager
    def request_span(self, model: str, stream: bool) -> Iterator[Span]:
        with self.tracer.start_as_current_span("chat " + model, kind=trace.SpanKind.SERVER) as span:
            span.set_attribute("gen_ai.operation.name", "chat")
            span.set_attribute("gen_ai.request.model", model)
            span.set_attribute("trustgate.stream", stream)
            yield span

    @contextlib.contextmanager
    def scoring_span(self, record_id: str, model: str) -> Iterator[Span]:
        with self.tracer.start_as_current_span("trustgate.score", kind=trace.SpanKind.INTERNAL) as span:
            span.set_attribute("gen_ai.request.model", model)
            span.set_attribute("gen_ai.response.id", record_id)
            yield span

    def emit_evaluations(self, record: TrustRecord) -> None:
        """One event per score: each component's, the RAG component's Trust-Eval metrics, the calibrated probability."""
        for component in record.components.values():
            label = record.label if component.component == "ov" else component.label
            self._emit(record.id, COMPONENT_NAMES.get(component.component, component.component),
                       component.value, label)
            if component.component == "rag":
                for metric in RAG_METRICS:
                    value = component.details.get(metric)
                    self._emit(record.id, f"trustgate.{metric}", value if isinstance(value, float) else None, None)
        self._emit(record.id, "trustgate.trust_probability", record.probability, None)

    def _emit(self, response_id: str, name: str, value: float | None, label: str | None) -> None:
        if value is None:
            return
        attributes: dict[str, str | float] = {"gen_ai.evaluation.name": name,
                                              "gen_ai.evaluation.score.value": value,
                                              "gen_ai.response.id": response_id}
        if label is not None:
            attributes["gen_ai.evaluation.score.label"] = label
        self.logger.emit(LogRecord(event_name=EVALUATION_EVENT, attributes=attributes, body=f"{name}={value:.4f}"))


def disabled_telemetry() -> Telemetry:
    return Telemetry(NoOpTracerProvider().get_tracer("trustgate"), NoOpLoggerProvider().get_logger("trustgate"))


def configure_telemetry(service_name: str = "trustgate") -> tuple[Telemetry, list[object]]:
    """An SDK tracer and logger exporting over OTLP/HTTP; returns the providers to shut down."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": service_name})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
    telemetry = Telemetry(tracer_provider.get_tracer("trustgate"), logger_provider.get_logger("trustgate"))
    return telemetry, [tracer_provider, logger_provider]
