"""Correlation: request ids, and which model group answered.

Every response carries ``x-request-id`` — the client's when it sent a valid one,
else a fresh ``req_…`` — and the trust record and the request span carry it too
(the access log: ``test_access_log``). An answer from a fallback group says so
(``x-trustgate-model-group``, ``x-trustgate-fallback``) and is booked to the
group that answered in the record and the metrics, naming the one asked — on
both upstream paths.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from exporters import Telemetry, disabled_telemetry
from proxy.base.request_ids import new_request_id
from tests.conftest import sdk_client
from tests.fake_upstream import FakeUpstream
from tests.proxy.metric_samples import samples
from tests.proxy.scored_gateway import AUTH, AskingScorer, scoring_config, wait_for_record
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

PATHS = ["passthrough", "litellm"]
SYNC = {"x-trustgate-mode": "sync"}
DEAD = "http://127.0.0.1:9/v1"  # nothing listens: connection refused, a failure fallbacks apply to


@dataclass
class Traced:
    spans: InMemorySpanExporter
    telemetry: Telemetry


@pytest.fixture
def traced() -> Iterator[Traced]:
    spans, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    yield Traced(spans, Telemetry(provider.get_tracer("test"), disabled_telemetry().logger))
    provider.shutdown()


@pytest.fixture
def gateway(fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], traced: Traced) -> ServerThread:
    return start_gateway(
        scoring_config(fake_upstream.url),  # type: ignore[attr-defined]
        scorers=[AskingScorer("bc", 0.9)],
        telemetry=traced.telemetry,
    )


def sdk(server: ServerThread, **headers: str) -> openai.OpenAI:
    return sdk_client(server, **headers)


def test_a_client_request_id_round_trips_to_the_sdk_record_and_span(gateway: ServerThread, traced: Traced) -> None:
    raw = sdk(gateway, **SYNC).chat.completions.with_raw_response.create(
        model="fake", messages=[{"role": "user", "content": "hi"}], extra_headers={"x-request-id": "client:run-7.a"}
    )
    reply = raw.parse()
    assert raw.headers["x-request-id"] == "client:run-7.a"
    assert reply._request_id == "client:run-7.a"  # the OpenAI SDK's own correlation field
    assert wait_for_record(gateway, raw.headers["x-trust-id"])["request_id"] == "client:run-7.a"
    (request_span,) = [s for s in traced.spans.get_finished_spans() if s.name == "chat fake"]
    assert request_span.attributes["http.request.header.x-request-id"] == ("client:run-7.a",)  # type: ignore[index]


def test_every_response_gets_a_fresh_id_when_the_client_sent_none(gateway: ServerThread) -> None:
    first = sdk(gateway).chat.completions.create(model="fake", messages=[{"role": "user", "content": "a"}])
    second = sdk(gateway).chat.completions.create(model="fake", messages=[{"role": "user", "content": "b"}])
    assert first._request_id and first._request_id.startswith("req_") and first._request_id != second._request_id
    with sdk(gateway, **SYNC).chat.completions.with_streaming_response.create(
        model="fake", messages=[{"role": "user", "content": "s"}], stream=True
    ) as streamed:
        record_id, request_id = streamed.headers["x-trust-id"], streamed.headers["x-request-id"]
        assert [chunk.choices[0].delta.content for chunk in streamed.parse()][-1] is None
    assert wait_for_record(gateway, record_id)["request_id"] == request_id
    for response in (
        httpx.get(f"{gateway.url}/health/liveness"),  # and on errors, and off the API
        httpx.get(f"{gateway.url}/v1/models"),  # 401
        httpx.post(f"{gateway.url}/v1/chat/completions", headers=AUTH, json={"model": "nope"}),
    ):
        assert response.headers["x-request-id"].startswith("req_")


@pytest.mark.parametrize("sent", ["has space", "x" * 129, "semi;colon", "ünï".encode()])
def test_a_malformed_request_id_is_a_400_before_any_work(
    gateway: ServerThread, fake_upstream: FakeUpstream, sent: str | bytes
) -> None:
    response = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        headers={**AUTH, "x-request-id": sent},
        json={"model": "fake", "messages": [{"role": "user", "content": "x"}]},
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["type"], error["param"], error["code"]) == (
        "invalid_request_error",
        "x-request-id",
        "invalid_request_id",
    )
    assert response.headers["x-request-id"].startswith("req_") and fake_upstream.requests == []
    counted = (
        "trustgate_requests_total",
        frozenset(
            {"model": "unknown", "status": "400", "mode": "unary", "endpoint": "unknown", "key": "unknown"}.items()
        ),
    )
    assert samples(gateway)[counted] == 1


def fallback_config(upstream_url: str, path: str) -> dict[str, Any]:
    config = scoring_config(upstream_url)
    config["model_list"].append(
        {
            "model_name": "primary",
            "litellm_params": {"model": "openai/gpt-4o-mini", "api_base": DEAD, "api_key": "x", "timeout": 2},
        }
    )
    config["router_settings"]["fallbacks"] = [{"primary": ["fake"]}]
    config["trustgate"]["passthrough"] = path == "passthrough"
    return config


def booked(server: ServerThread, model: str) -> float:
    return sum(
        value
        for (name, labels), value in samples(server).items()
        if name == "trustgate_requests_total" and dict(labels).get("model") == model
    )


@pytest.mark.parametrize("path", PATHS)
def test_a_fallback_answer_says_so_and_is_booked_to_the_group_that_answered(
    path: str, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    server = start_gateway(
        fallback_config(fake_upstream.url, path),  # type: ignore[attr-defined]
        scorers=[AskingScorer("bc", 0.9)],
    )
    whole = sdk(server, **SYNC).chat.completions.with_raw_response.create(
        model="primary", messages=[{"role": "user", "content": "fall"}]
    )
    with sdk(server, **SYNC).chat.completions.with_streaming_response.create(
        model="primary", messages=[{"role": "user", "content": "fall"}], stream=True
    ) as streamed:
        text = "".join(chunk.choices[0].delta.content or "" for chunk in streamed.parse())
    responses = httpx.post(
        f"{server.url}/v1/responses", headers={**AUTH, **SYNC}, timeout=30, json={"model": "primary", "input": "fall"}
    )
    assert whole.parse().choices[0].message.content == text == "You said: fall"
    for headers in (whole.headers, streamed.headers, responses.headers):
        assert (headers["x-trustgate-model-group"], headers["x-trustgate-fallback"]) == ("fake", "primary")
        record = wait_for_record(server, headers["x-trust-id"])
        assert (record["model"], record["asked_model"]) == ("fake", "primary")
    metrics = samples(server)
    assert metrics[("trustgate_fallbacks_total", frozenset({"asked": "primary", "answered": "fake"}.items()))] == 3
    assert booked(server, "fake") == 3 and booked(server, "primary") == 0
    assert metrics[
        (
            "trustgate_user_upstream_tokens_total",
            frozenset({"model": "fake", "kind": "completion", "key": "master"}.items()),
        )
    ]


@pytest.mark.parametrize("path", PATHS)
def test_the_asked_group_answering_names_itself_and_no_fallback(
    path: str, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    server = start_gateway(
        fallback_config(fake_upstream.url, path),  # type: ignore[attr-defined]
        scorers=[AskingScorer("bc", 0.9)],
    )
    raw = sdk(server, **SYNC).chat.completions.with_raw_response.create(
        model="fake", messages=[{"role": "user", "content": "direct"}]
    )
    assert raw.headers["x-trustgate-model-group"] == "fake" and "x-trustgate-fallback" not in raw.headers
    record = wait_for_record(server, raw.headers["x-trust-id"])
    assert (record["model"], record["asked_model"]) == ("fake", None)
    # The configured fallback's series is there from the start, at zero: a dashboard draws it before the first one.
    assert [value for key, value in samples(server).items() if key[0] == "trustgate_fallbacks_total"] == [0.0]


def test_fresh_request_ids_differ_after_a_fork_and_after_the_shared_generator_is_seeded() -> None:
    """A forked child (the local scoring worker's start, a process manager's worker) makes other ids than its
    parent, and a library that seeds ``random``'s shared generator does not make two runs' ids alike."""
    random.seed(7)
    first = new_request_id()
    random.seed(7)
    assert new_request_id() != first
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        os.write(writer, new_request_id().encode())
        os._exit(0)
    os.close(writer)
    _, status = os.waitpid(child, 0)
    in_child = os.read(reader, 100).decode()
    os.close(reader)
    assert os.waitstatus_to_exitcode(status) == 0
    assert re.fullmatch(r"req_[0-9a-f]{32}", in_child) and in_child != new_request_id()
