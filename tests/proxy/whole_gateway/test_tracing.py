"""OpenTelemetry through the real gateway, on in-memory exporters: one trace from the caller's
``traceparent`` through the request span and the scoring span to the evaluation events."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from opentelemetry import trace
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import (
    InMemoryLogRecordExporter,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from exporters import Telemetry
from proxy.app import create_app
from proxy.config.settings import settings_from_dict
from tests.conftest import gateway_config
from tests.fake_upstream import FakeUpstream
from tests.proxy.metric_samples import samples
from tests.proxy.scored_gateway import AUTH, AskingScorer, RaisingScorer, scoring_config
from tests.servers import ServerThread
from tests.waiting import wait_until

TRACE_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736
PARENT_ID = 0x00F067AA0BA902B7
TRACEPARENT = f"00-{TRACE_ID:032x}-{PARENT_ID:016x}-01"


@dataclass
class Recorded:
    spans: InMemorySpanExporter
    logs: InMemoryLogRecordExporter
    telemetry: Telemetry

    def finished(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans.get_finished_spans() if s.name == name]

    def ended(self, name: str) -> list[ReadableSpan]:
        """The finished spans of ``name`` once there is one: a streamed response's span ends in the server's
        thread after the last event is written, which the client may read first."""
        wait_until(lambda: bool(self.finished(name)), timeout=10)
        return self.finished(name)

    def events(self) -> list[ReadableLogRecord]:
        return [r.log_record for r in self.logs.get_finished_logs()]  # type: ignore[attr-defined]


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    yield Recorded(spans, logs, Telemetry(tracer_provider.get_tracer("test"), logger_provider.get_logger("test")))
    tracer_provider.shutdown()
    logger_provider.shutdown()


@pytest.fixture
def traced_gateway(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], recorded: Recorded
) -> ServerThread:
    return start_gateway(
        scoring_config(fake_upstream.url, mode="sync"),  # type: ignore[attr-defined]
        telemetry=recorded.telemetry,
        scorers=[AskingScorer("bc", 0.9), RaisingScorer()],
    )


def post(server: ServerThread, content: str = "Who built the first temple?", **extra: Any) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/chat/completions",
        headers={**AUTH, "traceparent": TRACEPARENT},
        json={"model": "fake", "messages": [{"role": "user", "content": content}], **extra},
        timeout=20,
    )


@pytest.mark.integration
def test_one_trace_from_the_request_to_its_evaluation_events(traced_gateway: ServerThread, recorded: Recorded) -> None:
    response = post(traced_gateway)
    completion_id, trust_id = response.json()["id"], response.headers["x-trust-id"]
    assert completion_id.startswith("chatcmpl-")
    (request,) = recorded.finished("chat fake")
    (scoring,) = recorded.finished("trustgate.score")
    # The caller's trace is continued.
    assert request.context.trace_id == TRACE_ID and request.parent is not None
    assert request.parent.span_id == PARENT_ID and request.parent.is_remote
    assert request.attributes["gen_ai.response.id"] == completion_id  # type: ignore[index]
    assert request.attributes["trustgate.trust.id"] == trust_id  # type: ignore[index]
    assert request.attributes["http.response.status_code"] == 200  # type: ignore[index]
    # The scoring span is in that trace, under the request span, and linked to it.
    assert scoring.context.trace_id == TRACE_ID
    assert scoring.parent is not None and scoring.parent.span_id == request.context.span_id
    assert [link.context.span_id for link in scoring.links] == [request.context.span_id]
    assert scoring.attributes["gen_ai.response.id"] == completion_id  # type: ignore[index]
    assert scoring.attributes["trustgate.trust.id"] == trust_id  # type: ignore[index]
    # Every evaluation event is parented to the request span it evaluates.
    events = recorded.events()
    assert events and {e.event_name for e in events} == {"gen_ai.evaluation.result"}
    for event in events:
        assert (event.trace_id, event.span_id) == (TRACE_ID, request.context.span_id)
        assert event.attributes["gen_ai.response.id"] == completion_id  # type: ignore[index]
        assert event.attributes["trustgate.trust.id"] == trust_id  # type: ignore[index]
    by_name = {e.attributes["gen_ai.evaluation.name"]: e.attributes for e in events}  # type: ignore[index]
    assert by_name["trustgate.trust_bc"]["gen_ai.evaluation.score.value"] == 0.9
    # The component that failed emits its own event with error.type and no score.
    assert by_name["trustgate.trust_fc"]["error.type"] == "RuntimeError"
    assert "gen_ai.evaluation.score.value" not in by_name["trustgate.trust_fc"]


@pytest.mark.integration
def test_without_a_traceparent_the_request_starts_its_own_trace(
    traced_gateway: ServerThread, recorded: Recorded
) -> None:
    httpx.post(
        f"{traced_gateway.url}/v1/chat/completions",
        headers=AUTH,
        timeout=20,
        json={"model": "fake", "messages": [{"role": "user", "content": "Who said hi?"}]},
    )
    (request,) = recorded.finished("chat fake")
    (scoring,) = recorded.finished("trustgate.score")
    assert request.parent is None and request.context.trace_id != TRACE_ID
    assert scoring.context.trace_id == request.context.trace_id


@pytest.mark.integration
def test_the_request_span_covers_the_whole_stream(traced_gateway: ServerThread, recorded: Recorded) -> None:
    with httpx.stream(
        "POST",
        f"{traced_gateway.url}/v1/chat/completions",
        headers={**AUTH, "traceparent": TRACEPARENT},
        timeout=20,
        json={"model": "fake", "stream": True, "messages": [{"role": "user", "content": "Who streams it?"}]},
    ) as response:
        lines = response.iter_lines()
        first = next(line for line in lines if line.startswith("data:"))
        assert not recorded.finished("chat fake"), "the span ended before the stream did"
        rest = [line for line in lines if line.startswith("data:")]
    assert first and rest[-1] == "data: [DONE]"
    (request,) = recorded.ended("chat fake")
    assert request.attributes["gen_ai.response.id"] == "chatcmpl-fake-stream"  # type: ignore[index]
    assert request.attributes["trustgate.stream"] is True  # type: ignore[index]
    assert request.attributes["http.response.status_code"] == 200  # type: ignore[index]
    (scoring,) = recorded.finished("trustgate.score")
    assert scoring.end_time is not None and request.end_time is not None and scoring.end_time <= request.end_time
    assert scoring.parent is not None and scoring.parent.span_id == request.context.span_id


@pytest.mark.integration
@pytest.mark.parametrize("content, status", [("[fail:503]", 503), ("[fail:400]", 400)])
def test_upstream_errors_end_the_span_with_their_status(
    traced_gateway: ServerThread, recorded: Recorded, content: str, status: int
) -> None:
    assert post(traced_gateway, content).status_code == status
    (request,) = recorded.finished("chat fake")
    assert request.attributes["http.response.status_code"] == status  # type: ignore[index]
    assert request.attributes["error.type"]  # type: ignore[index]
    assert (request.status.status_code == StatusCode.ERROR) == (status >= 500)
    assert not recorded.finished("trustgate.score")


@pytest.mark.integration
def test_an_unexpected_500_still_ends_the_span(traced_gateway: ServerThread, recorded: Recorded) -> None:
    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    traced_gateway.app.state.gateway.upstream.complete = broken  # type: ignore[attr-defined]
    assert post(traced_gateway).status_code == 500
    (request,) = recorded.finished("chat fake")
    assert request.attributes["http.response.status_code"] == 500  # type: ignore[index]
    assert request.attributes["error.type"] == "RuntimeError"  # type: ignore[index]
    assert request.status.status_code == StatusCode.ERROR


@pytest.mark.integration
def test_a_rejected_request_is_traced_too(traced_gateway: ServerThread, recorded: Recorded) -> None:
    response = httpx.post(
        f"{traced_gateway.url}/v1/chat/completions",
        headers={"traceparent": TRACEPARENT},
        json={"model": "fake", "messages": [{"role": "user", "content": "Who said hi?"}]},
    )
    assert response.status_code == 401
    (request,) = recorded.finished("chat")  # never named: the model was not read before the 401
    assert request.context.trace_id == TRACE_ID
    assert request.attributes["http.response.status_code"] == 401  # type: ignore[index]


@pytest.mark.integration
@pytest.mark.parametrize("path", ["passthrough", "litellm"])
def test_each_upstream_try_is_a_client_span_of_the_request(
    fake_upstream: FakeUpstream, recorded: Recorded, start_gateway: Callable[..., ServerThread], path: str
) -> None:
    """A rate-limited first try, its retry, and a fallback group after a group that is down: one CLIENT
    span each, all children of the request span, so a trace shows where the time went (on both paths)."""
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["model_list"].append(
        {
            "model_name": "primary",
            "litellm_params": {
                "model": "openai/primary-model",
                "api_base": "http://127.0.0.1:9/v1",
                "api_key": "x",
                "timeout": 2,
            },
        }
    )
    config["router_settings"].update(num_retries=1, fallbacks=[{"primary": ["fake"]}])
    config["trustgate"] = {
        "retries": {"backoff_initial_s": 0.01, "backoff_max_s": 0.02, "jitter_s": 0.0},
        "passthrough": path == "passthrough",
    }
    server = start_gateway(config, telemetry=recorded.telemetry)
    fake_upstream.rate_limited = 1
    assert post(server, model="fake").status_code == 200
    (request,) = recorded.finished("chat fake")
    tries = recorded.finished("chat gpt-4o-mini")
    assert [s.attributes["trustgate.attempt"] for s in tries] == [0, 1]
    assert tries[0].attributes["error.type"] and "error.type" not in tries[1].attributes
    assert all(s.kind == SpanKind.CLIENT and s.parent.span_id == request.context.span_id for s in tries)
    assert tries[1].attributes["server.address"] == "127.0.0.1"

    assert post(server, model="primary").status_code == 200
    down = recorded.finished("chat primary-model")
    assert down and all(s.attributes["trustgate.model_group"] == "primary" and s.attributes["error.type"] for s in down)
    (fallback_request,) = recorded.finished("chat primary")
    served = [s for s in recorded.finished("chat gpt-4o-mini") if s.parent.span_id == fallback_request.context.span_id]
    assert [s.attributes["trustgate.model_group"] for s in served] == ["fake"]
    assert all(s.parent.span_id == fallback_request.context.span_id for s in down)


# One request per endpoint, a stream among them: (path, body, the try's span operation).
ENDPOINT_CALLS = [
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Who said hi?"}]}, "chat"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Who said hi?"}], "stream": True}, "chat"),
    ("/v1/completions", {"prompt": "Who said hi?"}, "text_completion"),
    ("/v1/embeddings", {"input": "hi"}, "embeddings"),
    ("/v1/responses", {"input": "Who said hi?"}, "chat"),
]


@pytest.mark.integration
@pytest.mark.parametrize("path", ["passthrough", "litellm"])
def test_a_try_is_attributed_to_the_deployment_that_answered_it(
    fake_upstream: FakeUpstream, recorded: Recorded, start_gateway: Callable[..., ServerThread], path: str
) -> None:
    """A group of two deployments: each try's span and its ``deployment`` label name the deployment the call
    went to (on the litellm path, the one litellm's Router chose), as the upstream saw it, on every endpoint."""
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["model_list"].append(
        {
            "model_name": "fake",
            "litellm_params": {
                "model": "openai/gpt-4o",
                "api_base": f"{fake_upstream.url}/v1",
                "api_key": "x",
                "timeout": 5,
            },
        }
    )  # type: ignore[attr-defined]
    config["trustgate"] = {"passthrough": path == "passthrough", "scoring": {"mode": "off"}}
    server = start_gateway(config, telemetry=recorded.telemetry)
    operations = []
    for _ in range(3):
        for endpoint, body, operation in ENDPOINT_CALLS:
            response = httpx.post(f"{server.url}{endpoint}", headers=AUTH, json={"model": "fake", **body}, timeout=20)
            assert response.status_code == 200, response.text
            operations.append(operation)
    tries = sorted(
        (s for s in recorded.spans.get_finished_spans() if s.kind == SpanKind.CLIENT), key=lambda s: s.start_time or 0
    )
    called = [request["model"] for request in fake_upstream.requests]
    assert len(tries) == len(called) == 15 and {"gpt-4o", "gpt-4o-mini"} == set(called)
    placed = {"gpt-4o-mini": "fake:0", "gpt-4o": "fake:1"}
    assert [s.attributes["trustgate.deployment"] for s in tries] == [placed[model] for model in called]
    assert [s.name for s in tries] == [
        f"{operation} {model}" for operation, model in zip(operations, called, strict=True)
    ]
    counted = samples(server)
    for model, deployment in placed.items():
        assert counted[
            (
                "trustgate_upstream_tries_total",
                frozenset({"model": "fake", "deployment": deployment, "outcome": "success"}.items()),
            )
        ] == called.count(model)
    assert not [r for r in fake_upstream.requests if "metadata" in r or "litellm_metadata" in r]


@pytest.mark.unit
@pytest.mark.parametrize("app_of", ["gateway", "plain FastAPI"])
def test_fastapi_makes_no_spans_of_its_own(monkeypatch: pytest.MonkeyPatch, app_of: str) -> None:
    """With OpenTelemetry's global tracer provider configured (by ``opentelemetry-instrument``, say), FastAPI's
    native telemetry would add a span per request beside the gateway's own: the gateway turns it off. A plain
    FastAPI app is the control: it does make one."""
    spans, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    app = (
        create_app(settings_from_dict(gateway_config("http://127.0.0.1:9/v1"), {}))
        if app_of == "gateway"
        else FastAPI()
    )

    async def ask() -> int:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway") as client:
            return (await client.get("/nowhere")).status_code

    assert asyncio.run(ask()) == 404
    assert len(spans.get_finished_spans()) == (0 if app_of == "gateway" else 1)
    provider.shutdown()
