"""OpenTelemetry: a span per proxied request and per scoring job, and GenAI evaluation events — one trace.

The request span continues an incoming W3C ``traceparent``; the scoring job
carries the request span's context to wherever it is scored (this process or
a worker), so the scoring span and the evaluation events join that trace.

Code elsewhere talks only to the tracer and logger held here. The SDK is wired
once, in ``configure_telemetry``, and only when enabled; which exporters,
over which protocol, follows the standard ``OTEL_*`` environment variables
(``exporters.otel_export``). Evaluation results are LogRecords with
``event_name="gen_ai.evaluation.result"`` — the Events API was removed from
opentelemetry-python in 1.44.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry._logs import Logger as OtelLogger
from opentelemetry._logs import LogRecord, NoOpLoggerProvider
from opentelemetry.context import Context
from opentelemetry.trace import INVALID_SPAN, Link, NoOpTracer, NoOpTracerProvider, Span, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from scoring import RAGDetails, ScoringJob, TrustRecord

from .otel_export import ExportChoice, log_exporters, span_exporters

__all__ = [
    "RequestTrace",
    "Telemetry",
    "configure_telemetry",
    "disabled_telemetry",
    "place_upstream_span",
    "upstream_span",
]

EVALUATION_EVENT = "gen_ai.evaluation.result"
COMPONENT_NAMES = {
    "bc": "trustgate.trust_bc",
    "fc": "trustgate.trust_fc",
    "ov": "trustgate.trust_ov",
    "lp": "trustgate.trust_lp",
    "sc": "trustgate.trust_sc",
    "ev": "trustgate.trust_ev",
    "rag": "trustgate.rag_trust",
}
TRUST_ID = "trustgate.trust.id"  # the trust record's id; gen_ai.response.id is the completion's
FEEDBACK_NAME = "trustgate.user_feedback"  # a user's label on an answer: an evaluation made by a person
REQUEST_ID_ATTRIBUTE = "http.request.header.x-request-id"  # OTel's name for a request header (a list of values)
ENDPOINT = "trustgate.endpoint"  # which OpenAI endpoint was called: chat, completions, responses, embeddings
# gen_ai.operation.name of each endpoint (the GenAI semantic conventions' well-known values); the Responses
# API generates a chat turn, so it is `chat` too, told apart by trustgate.endpoint.
OPERATIONS = {"chat": "chat", "completions": "text_completion", "embeddings": "embeddings", "responses": "chat"}
ACTION = "trustgate.trust.action"  # what a low-trust policy did: blocked, escalated, kept, escalation_failed
ACTION_EVENT_NAME = "trustgate.low_trust_action"
_W3C = TraceContextTextMapPropagator()


def error_type(error: str) -> str:
    """A low-cardinality ``error.type`` from a component's error text (``"ValueError: ..."``, ``"timeout"``)."""
    return error.split(":", 1)[0].strip() or "error"


class RequestTrace:
    """The span of one OpenAI-endpoint request, from the first byte received to the last byte sent.

    It continues the caller's ``traceparent`` when there is one. Named as the
    GenAI conventions name it, ``{operation} {model}`` (``chat gpt-4o``,
    ``embeddings text-embedding-3-small``), once the model is known; ended
    exactly once, with the final status — after a stream's last chunk, and for
    every error status too.
    """

    def __init__(self, span: Span, *, untraced_parent: str | None = None) -> None:
        self._span = span
        self._ended = False
        self._operation = "chat"
        self._untraced_parent = untraced_parent

    @classmethod
    def untraced(cls, traceparent: str | None) -> RequestTrace:
        """A request of a gateway that exports no traces: nothing is recorded, and the caller's
        ``traceparent`` is only carried on, to the scoring job, as a non-recording tracer would."""
        return cls(INVALID_SPAN, untraced_parent=traceparent)

    def activate(self) -> None:
        """Make this span the current one for the rest of the request's task, so that the upstream calls
        made for it (``upstream_span``) are its children. Never detached: each request runs in its own
        asyncio task, whose context ends with it, and a stream's last chunk (where the span ends) may be
        sent from another context than the one that attached it."""
        if self._span is not INVALID_SPAN:
            otel_context.attach(trace.set_span_in_context(self._span))

    def endpoint(self, endpoint: str) -> None:
        """Which endpoint this request came to: the span's operation until the model names it fully."""
        self._operation = OPERATIONS.get(endpoint, endpoint)
        self._span.update_name(self._operation)
        self._span.set_attribute("gen_ai.operation.name", self._operation)
        self._span.set_attribute(ENDPOINT, endpoint)

    def named(self, model: str, stream: bool) -> None:
        self._span.update_name(f"{self._operation} {model}")
        self._span.set_attribute("gen_ai.request.model", model)
        self._span.set_attribute("trustgate.stream", stream)

    def usage(self, input_tokens: int, output_tokens: int) -> None:
        """The tokens the upstream reported for the answer."""
        self._span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
        self._span.set_attribute("gen_ai.usage.output_tokens", output_tokens)

    def answered(self, completion_id: str | None, trust_id: str | None) -> None:
        if completion_id:
            self._span.set_attribute("gen_ai.response.id", completion_id)
        if trust_id:
            self._span.set_attribute(TRUST_ID, trust_id)

    @property
    def traceparent(self) -> str | None:
        """The W3C ``traceparent`` of this span, carried by the scoring job to wherever it is scored."""
        if self._span is INVALID_SPAN:
            return _carried(self._untraced_parent)
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


def _carried(traceparent: str | None) -> str | None:
    """``traceparent`` as a non-recording tracer carries it on: re-written when valid, else none."""
    parent = _parent(traceparent)
    if parent is None:
        return None
    carrier: dict[str, str] = {}
    _W3C.inject(carrier, context=parent)
    return carrier.get("traceparent")


def upstream_span(
    tracer: Tracer, *, endpoint: str, group: str, model: str, deployment: str, attempt: int, address: str | None
) -> contextlib.AbstractContextManager[Span]:
    """A CLIENT span for one try at one deployment, child of the current span (the request's, or the scoring
    job's for a scorer's call): each retry and each fallback group is a span of its own. For a stream it
    lasts until the stream opened (its first byte). A tracer that records nothing gets no span at all."""
    if isinstance(tracer, NoOpTracer):
        return contextlib.nullcontext(INVALID_SPAN)
    return _upstream_span(
        tracer, endpoint=endpoint, group=group, model=model, deployment=deployment, attempt=attempt, address=address
    )


@contextlib.contextmanager
def _upstream_span(
    tracer: Tracer, *, endpoint: str, group: str, model: str, deployment: str, attempt: int, address: str | None
) -> Iterator[Span]:
    operation = OPERATIONS.get(endpoint, endpoint)
    attributes: dict[str, str | int] = {
        "gen_ai.operation.name": operation,
        "gen_ai.request.model": model,
        "trustgate.model_group": group,
        "trustgate.deployment": deployment,
        "trustgate.attempt": attempt,
    }
    if address:
        attributes["server.address"] = address
    with tracer.start_as_current_span(
        f"{operation} {model}", kind=trace.SpanKind.CLIENT, attributes=attributes
    ) as span:
        try:
            yield span
        except BaseException as exc:
            span.set_attribute("error.type", getattr(exc, "code", None) or type(exc).__name__)
            raise


def place_upstream_span(span: Span, *, endpoint: str, model: str, deployment: str, address: str | None) -> None:
    """Re-name an ``upstream_span`` for the deployment the try went to, where that is learnt only from the
    call (litellm's Router chooses on the litellm path)."""
    span.update_name(f"{OPERATIONS.get(endpoint, endpoint)} {model}")
    span.set_attributes({"gen_ai.request.model": model, "trustgate.deployment": deployment})
    if address:
        span.set_attribute("server.address", address)


def _parent(traceparent: str | None) -> Context | None:
    return _W3C.extract({"traceparent": traceparent}) if traceparent else None


@dataclass(frozen=True)
class Telemetry:
    tracer: Tracer
    logger: OtelLogger

    def start_request(self, headers: Mapping[str, str]) -> RequestTrace:
        """A server span continuing the incoming ``traceparent`` (a new trace without one).

        Without an SDK (telemetry off, the default) there is no span to make: the
        API's own no-op path (extracting, attaching and injecting a context) cost
        about 20 µs of every request (BENCHMARKS.md) for a span nothing records.
        """
        if isinstance(self.tracer, NoOpTracer):
            return RequestTrace.untraced(headers.get("traceparent"))
        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat"}
        request_id = headers.get("x-request-id")
        if request_id:  # the gateway sets one on every request it serves (proxy.base.request_ids)
            attributes[REQUEST_ID_ATTRIBUTE] = (request_id,)
        span = self.tracer.start_span(
            "chat", context=_W3C.extract(headers), kind=trace.SpanKind.SERVER, attributes=attributes
        )
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
        with self.tracer.start_as_current_span(
            "trustgate.score", context=parent, kind=trace.SpanKind.INTERNAL, links=links
        ) as span:
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
        event = _EvaluationEvents(
            self.logger, record.id, job.completion_id if job else None, _parent(job.traceparent) if job else None
        )
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

    def emit_action(self, record: TrustRecord, traceparent: str | None) -> None:
        """What a low-trust policy did with the answer: an evaluation event of the record's score that carries
        ``trustgate.trust.action`` (and the other record of an escalation), parented to the request span."""
        if record.action is None or record.score is None:
            return
        extra: dict[str, str | float] = {ACTION: record.action}
        for name, other in (("escalated_to", record.escalated_to), ("escalated_from", record.escalated_from)):
            if other is not None:
                extra[f"trustgate.trust.{name}"] = other
        _EvaluationEvents(self.logger, record.id, None, _parent(traceparent)).score(
            ACTION_EVENT_NAME, record.score, record.label, extra=extra
        )

    def emit_feedback(self, record: TrustRecord) -> None:
        """A user's label as an evaluation event of the answer: 1 (correct) or 0, or the graded score given.

        It comes long after the request, so it has no parent span; ``trustgate.trust.id`` joins it to the
        record and its score events.
        """
        feedback = record.feedback
        if feedback is None:
            return
        value = feedback.score if feedback.score is not None else float(feedback.correct)
        extra: dict[str, str | float] = {"trustgate.feedback.correct": feedback.correct}
        if record.model is not None:
            extra["gen_ai.request.model"] = record.model
        _EvaluationEvents(self.logger, record.id, None, None).score(
            FEEDBACK_NAME, value, "correct" if feedback.correct else "incorrect", extra=extra
        )


@dataclass(frozen=True)
class _EvaluationEvents:
    logger: OtelLogger
    trust_id: str
    response_id: str | None
    context: Context | None

    def score(
        self, name: str, value: float | None, label: str | None, extra: Mapping[str, str | float] | None = None
    ) -> None:
        if value is None:
            return
        attributes: dict[str, str | float] = {"gen_ai.evaluation.score.value": value, **(extra or {})}
        if label is not None:
            attributes["gen_ai.evaluation.score.label"] = label
        self._emit(name, attributes, f"{name}={value:.4f}")

    def failed(self, name: str, error: str) -> None:
        self._emit(name, {"error.type": error}, f"{name} failed: {error}")

    def _emit(self, name: str, attributes: dict[str, str | float], body: str) -> None:
        attributes = {"gen_ai.evaluation.name": name, TRUST_ID: self.trust_id, **attributes}
        if self.response_id:
            attributes["gen_ai.response.id"] = self.response_id
        self.logger.emit(LogRecord(event_name=EVALUATION_EVENT, attributes=attributes, body=body, context=self.context))


def disabled_telemetry() -> Telemetry:
    return Telemetry(NoOpTracerProvider().get_tracer("trustgate"), NoOpLoggerProvider().get_logger("trustgate"))


def configure_telemetry(choice: ExportChoice, service_name: str | None = None) -> tuple[Telemetry, list[object]]:
    """An SDK tracer and logger exporting as ``choice`` says (``exporters.otel_export``); returns the providers
    to shut down (which flushes what is still batched).

    The resource is the SDK's: ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES`` as for any service,
    ``service_name`` (the config's) over them, and ``trustgate`` where neither names the service.
    """
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": service_name} if service_name else {})
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):  # the SDK's placeholder
        resource = resource.merge(Resource({"service.name": "trustgate"}))
    tracer_provider = TracerProvider(resource=resource)
    for span_exporter in span_exporters(choice):
        tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
    logger_provider = LoggerProvider(resource=resource)
    for log_exporter in log_exporters(choice):
        logger_provider.add_log_record_processor(BatchLogRecordProcessor(log_exporter))
    telemetry = Telemetry(tracer_provider.get_tracer("trustgate"), logger_provider.get_logger("trustgate"))
    return telemetry, [tracer_provider, logger_provider]
