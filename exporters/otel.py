"""OpenTelemetry: a span per proxied request and per scoring job, and GenAI evaluation events — one trace.

The request span continues an incoming W3C ``traceparent``; the scoring job
carries the request span's context to wherever it is scored (this process or
a worker), so the scoring span and the evaluation events join that trace.

Code elsewhere talks only to the tracer and logger held here. The SDK is wired
once, in ``configure_telemetry``, and only when enabled; OTLP export then
follows the standard ``OTEL_*`` environment variables (read by the exporter
itself). Evaluation results are LogRecords with
``event_name="gen_ai.evaluation.result"`` — the Events API was removed from
opentelemetry-python in 1.44.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from opentelemetry import trace
from opentelemetry._logs import Logger as OtelLogger
from opentelemetry._logs import LogRecord, NoOpLoggerProvider
from opentelemetry.context import Context
from opentelemetry.trace import Link, NoOpTracerProvider, Span, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from scoring.types import RAGDetails, ScoringJob, TrustRecord


__all__ = ["RequestTrace", "Telemetry", "configure_telemetry", "disabled_telemetry"]

EVALUATION_EVENT = "gen_ai.evaluation.result"
COMPONENT_NAMES = {"bc": "trustgate.trust_bc", "fc": "trustgate.trust_fc", "ov": "trustgate.trust_ov",
                   "lp": "trustgate.trust_lp", "sc": "trustgate.trust_sc", "rag": "trustgate.rag_trust"}
TRUST_ID = "trustgate.trust.id"  # the trust record's id; gen_ai.response.id is the completion's
_W3C = TraceContextTextMapPropagator()


def error_type(error: str) -> str:
    """A low-cardinality ``error.type`` from a component's error text (``"ValueError: ..."``, ``"timeout"``)."""
    return error.split(":", 1)[0].strip() or "error"


class RequestTrace:
    """The span of one chat request, from the first byte received to the last byte sent.

    It continues the caller's ``traceparent`` when there is one. The handler
    names it once the model is known and ends it exactly once, with the final
    status — after a stream's last chunk, and for every error status too.
    """

    def __init__(self, span: Span) -> None:
        self._span = span
        self._ended = False

    def named(self, model: str, stream: bool) -> None:
        self._span.update_name(f"chat {model}")
        self._span.set_attribute("gen_ai.request.model", model)
        self._span.set_attribute("trustgate.stream", stream)

    def answered(self, completion_id: str | None, trust_id: str | None) -> None:
        if completion_id:
            self._span.set_attribute("gen_ai.response.id", completion_id)
        if trust_id:
            self._span.set_attribute(TRUST_ID, trust_id)

    @property
    def traceparent(self) -> str | None:
        """The W3C ``traceparent`` of this span, carried by the scoring job to wherever it is scored."""
        carrier: dict[str, str] = {}
        _W3C.inject(carrier, context=trace.set_span_in_context(self._span))
        return carrier.get("traceparent")

    def end(self, status: int, error: str | None = None) -> None:
        if self._ended:
            return
        self._ended = True
        self._span.set_attribute("http.response.status_code", status)
        if status >= 500 or error is not None:
            self._span.set_attribute("error.type", error or str(status))
        if status >= 500:
            self._span.set_status(StatusCode.ERROR)
        self._span.end()


def _parent(traceparent: str | None) -> Context | None:
    return _W3C.extract({"traceparent": traceparent}) if traceparent else None


@dataclass(frozen=True)
class Telemetry:
    tracer: Tracer
    logger: OtelLogger

    def start_request(self, headers: Mapping[str, str]) -> RequestTrace:
        """A server span continuing the incoming ``traceparent`` (a new trace without one)."""
        span = self.tracer.start_span("chat", context=_W3C.extract(headers), kind=trace.SpanKind.SERVER,
                                      attributes={"gen_ai.operation.name": "chat"})
        return RequestTrace(span)

    @contextlib.contextmanager
    def scoring_span(self, job: ScoringJob) -> Iterator[Span]:
        """The span of scoring one answer: in the request's trace, and linked to the request span.

        Scoring runs after the response (async mode) or in another process (a
        worker), so the request span may have ended; the link keeps the two
        joined in backends that show each span's own trace only.
        """
        parent = _parent(job.traceparent)
        request = trace.get_current_span(parent).get_span_context() if parent is not None else None
        links = [Link(request, {"trustgate.link": "scored request"})] if request and request.is_valid else []
        with self.tracer.start_as_current_span("trustgate.score", context=parent, kind=trace.SpanKind.INTERNAL,
                                               links=links) as span:
            span.set_attribute("gen_ai.request.model", job.model)
            if job.completion_id:
                span.set_attribute("gen_ai.response.id", job.completion_id)
            span.set_attribute(TRUST_ID, job.id)
            yield span

    def emit_evaluations(self, record: TrustRecord, job: ScoringJob | None = None) -> None:
        """One event per score (each component's, the RAG metrics, the calibrated probability) and per failure.

        The events are parented to the request span being evaluated, as the GenAI
        conventions ask, when the job carries its context (``job.traceparent``);
        ``gen_ai.response.id`` is the completion's id, the trust record's id is
        ``trustgate.trust.id``.
        """
        event = _EvaluationEvents(self.logger, record.id, job.completion_id if job else None,
                                  _parent(job.traceparent) if job else None)
        for component in record.components.values():
            name = COMPONENT_NAMES.get(component.component, component.component)
            if component.error is not None and component.value is None:
                event.failed(name, error_type(component.error))
                continue
            label = record.label if component.component == "ov" else component.label
            event.score(name, component.value, label)
            if isinstance(component.details, RAGDetails):
                for metric, value in component.details.metrics().items():
                    event.score(f"trustgate.{metric}", value, None)
        event.score("trustgate.trust_probability", record.probability, None)


@dataclass(frozen=True)
class _EvaluationEvents:
    logger: OtelLogger
    trust_id: str
    response_id: str | None
    context: Context | None

    def score(self, name: str, value: float | None, label: str | None) -> None:
        if value is None:
            return
        attributes: dict[str, str | float] = {"gen_ai.evaluation.score.value": value}
        if label is not None:
            attributes["gen_ai.evaluation.score.label"] = label
        self._emit(name, attributes, f"{name}={value:.4f}")

    def failed(self, name: str, error: str) -> None:
        self._emit(name, {"error.type": error}, f"{name} failed: {error}")

    def _emit(self, name: str, attributes: dict[str, str | float], body: str) -> None:
        attributes = {"gen_ai.evaluation.name": name, TRUST_ID: self.trust_id, **attributes}
        if self.response_id:
            attributes["gen_ai.response.id"] = self.response_id
        self.logger.emit(LogRecord(event_name=EVALUATION_EVENT, attributes=attributes, body=body,
                                   context=self.context))


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
