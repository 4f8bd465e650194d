"""OpenTelemetry chosen by the standard OTEL_* variables alone: a real gateway process exports to a real
OTLP receiver over OTLP/HTTP and over OTLP/gRPC, or prints to the console; spans are named by operation
and model and carry the GenAI usage attributes; the config file overrides the variables."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import httpx
import pytest
import yaml

from exporters import ExportConfigError, configure_telemetry, export_choice
from tests.conftest import MASTER_KEY, gateway_config
from tests.e2e.gateway_process import free_port, serve_config
from tests.exporters.otlp_receiver import Received, grpc_receiver, http_receiver
from tests.fake_upstream import FakeUpstream

Receiver = Callable[[], AbstractContextManager[tuple[str, Received]]]
EVALUATION_EVENT = "gen_ai.evaluation.result"
NO_GRPC = importlib.util.find_spec("opentelemetry.exporter.otlp.proto.grpc") is None


@pytest.mark.unit
def test_the_variables_choose_and_the_config_overrides() -> None:
    assert not export_choice({}).enabled, "nothing asked for: no export"
    assert not export_choice({"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"}).enabled
    chosen = export_choice(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "http/protobuf",
            "OTEL_LOGS_EXPORTER": "console,otlp",
        }
    )
    assert (chosen.traces, chosen.logs) == (("otlp",), ("console", "otlp"))
    assert (chosen.traces_protocol, chosen.logs_protocol) == ("grpc", "http/protobuf")
    overridden = export_choice(
        {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
        traces="console",
        logs="none",
        protocol="http/protobuf",
        endpoint="http://c:4318",
    )
    assert (overridden.traces, overridden.logs, overridden.traces_protocol) == (("console",), (), "http/protobuf")
    assert not export_choice({"OTEL_TRACES_EXPORTER": "console"}, enabled=False).enabled
    assert export_choice({}, enabled=True).traces == ("otlp",)
    with pytest.raises(ExportConfigError, match="OTEL_TRACES_EXPORTER=jaeger: unknown exporter"):
        export_choice({"OTEL_TRACES_EXPORTER": "jaeger"})
    with pytest.raises(ExportConfigError, match="OTEL_EXPORTER_OTLP_PROTOCOL=http/json"):
        export_choice({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})


@pytest.mark.unit
@pytest.mark.parametrize(
    ("environ", "configured", "named"),
    [
        ({}, None, "trustgate"),
        ({"OTEL_SERVICE_NAME": "gateway-eu"}, None, "gateway-eu"),
        ({"OTEL_RESOURCE_ATTRIBUTES": "service.name=gateway-us,team=ml"}, None, "gateway-us"),
        ({"OTEL_SERVICE_NAME": "gateway-eu"}, "from-config", "from-config"),
    ],
)
def test_the_service_is_named_by_the_variables_and_the_config_overrides(
    monkeypatch: pytest.MonkeyPatch, environ: dict[str, str], configured: str | None, named: str
) -> None:
    for name in ("OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    _, providers = configure_telemetry(
        export_choice({"OTEL_TRACES_EXPORTER": "none", "OTEL_LOGS_EXPORTER": "none"}), configured
    )
    resources = [provider.resource.attributes for provider in providers]  # type: ignore[attr-defined]
    assert [r["service.name"] for r in resources] == [named, named]
    for provider in providers:
        provider.shutdown()  # type: ignore[attr-defined]


@pytest.fixture
def scored_config(tmp_path: Path, fake_upstream: FakeUpstream) -> Path:
    """The fake model, scored in sync mode from the answer's log-probabilities (no assets needed)."""
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["trustgate"] = {
        "server": {"port": free_port()},
        "store": {"path": str(tmp_path / "records.sqlite3")},
        "scoring": {
            "mode": "sync",
            "consistency": {"enabled": False},
            "factcheck": {"enabled": False},
            "rag": {"enabled": False},
        },
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _traffic(url: str) -> None:
    auth = {"authorization": f"Bearer {MASTER_KEY}"}
    chat = httpx.post(
        f"{url}/v1/chat/completions",
        headers=auth,
        timeout=30,
        json={"model": "fake", "messages": [{"role": "user", "content": "What is the capital?"}]},
    )
    assert chat.status_code == 200 and chat.headers["x-trust-status"] == "done", chat.text
    assert (
        httpx.post(
            f"{url}/v1/embeddings", headers=auth, timeout=30, json={"model": "fake", "input": "hello"}
        ).status_code
        == 200
    )


def _receivers() -> Iterator[object]:
    yield pytest.param("http/protobuf", http_receiver, id="http")
    yield pytest.param(
        "grpc",
        grpc_receiver,
        id="grpc",
        marks=pytest.mark.skipif(
            NO_GRPC, reason="opentelemetry-exporter-otlp-proto-grpc is not installed (the otlp-grpc extra)"
        ),
    )


@pytest.mark.integration
@pytest.mark.parametrize(("protocol", "receiver"), list(_receivers()))
def test_a_real_receiver_gets_spans_and_evaluation_events(
    scored_config: Path, protocol: str, receiver: Receiver
) -> None:
    with receiver() as (endpoint, received):
        environ = {
            "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_EXPORTER_OTLP_HEADERS": "x-collector-tenant=team-a",
            "OTEL_SERVICE_NAME": "trustgate-eu",
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=staging",
        }
        with serve_config(scored_config, environ=environ, timeout=120) as gateway:
            _traffic(gateway.url)
        gateway.process.wait(30)  # its shutdown (SIGTERM) flushed the batches
        spans = received.spans()
        chat, embeddings = spans["chat fake"], spans["embeddings fake"]
        assert chat["attributes"]["gen_ai.operation.name"] == "chat"
        assert chat["attributes"]["gen_ai.request.model"] == "fake"
        assert chat["attributes"]["gen_ai.usage.input_tokens"] > 0
        assert chat["attributes"]["gen_ai.usage.output_tokens"] > 0
        assert embeddings["attributes"]["gen_ai.operation.name"] == "embeddings"
        assert embeddings["attributes"]["trustgate.endpoint"] == "embeddings"
        events = [e for e in received.events() if e["event_name"] == EVALUATION_EVENT]
        assert events and {e["trace_id"] for e in events} == {chat["trace_id"]}
        assert all(h.get("x-collector-tenant") == "team-a" for h in received.headers)
        resources = received.resources()
        assert resources and all(r["service.name"] == "trustgate-eu" for r in resources)
        assert all(r["deployment.environment.name"] == "staging" for r in resources)


@pytest.mark.integration
def test_the_console_exporters_print_spans_and_events(scored_config: Path) -> None:
    environ = {"OTEL_TRACES_EXPORTER": "console", "OTEL_LOGS_EXPORTER": "console"}
    with serve_config(scored_config, environ=environ, timeout=120) as gateway:
        _traffic(gateway.url)
    gateway.process.wait(30)
    printed = "".join(gateway.output)
    decoder, spans, at = json.JSONDecoder(), [], printed.find("{\n")
    while at != -1:
        span, end = decoder.raw_decode(printed, at)
        spans.append(span)
        at = printed.find("{\n", end)
    chat = next(s for s in spans if s.get("name") == "chat fake")
    assert chat["attributes"]["gen_ai.usage.input_tokens"] > 0 and chat["kind"] == "SpanKind.SERVER"
    assert any(s.get("name") == "embeddings fake" for s in spans)
    events = [s for s in spans if s.get("event_name") == EVALUATION_EVENT]
    assert events and all(e["trace_id"] == chat["context"]["trace_id"] for e in events)
