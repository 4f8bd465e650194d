"""The gateway's /metrics as an operator scrapes it: traffic attributed to a key's name and an endpoint,
time to first token for streams, one fallback counted by the group asked and the group that answered,
the process series, label values bounded by the config whatever clients send, and an exposition
`promtool check metrics` finds clean. On both upstream paths (pass-through and litellm's Router)."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Callable

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter
from prometheus_client.parser import text_string_to_metric_families

from exporters.prometheus import LabelledChildren
from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.servers import ServerThread

KEYS = [{"key": "sk-team-a", "name": "team-a"}, {"key": "sk-team-b", "name": "team-b"}]
DEAD = "http://127.0.0.1:9/v1"  # nothing listens: connection refused, which the fallback answers for
# What a key label may read besides the configured names: the master key, no auth, and not recognised.
GATEWAY_KEY_NAMES = {"master", "anonymous", "unknown"}
Samples = list[tuple[str, dict[str, str], float]]


@pytest.fixture(params=["passthrough", "litellm"])
def teams(
    request: pytest.FixtureRequest, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> ServerThread:
    """Two named keys; group ``primary`` is down and falls back to ``fake``."""
    config = gateway_config(
        fake_upstream.url,  # type: ignore[attr-defined]
        trustgate={"keys": KEYS, "passthrough": request.param == "passthrough"},
    )
    config["model_list"].append(
        {
            "model_name": "primary",
            "litellm_params": {"model": "openai/gpt-4o-mini", "api_base": DEAD, "api_key": "x", "timeout": 2},
        }
    )
    config["router_settings"]["fallbacks"] = [{"primary": ["fake"]}]
    return start_gateway(config)


def _post(server: ServerThread, path: str, key: str, body: dict[str, object]) -> httpx.Response:
    return httpx.post(f"{server.url}{path}", headers={"authorization": f"Bearer {key}"}, timeout=20, json=body)


def _traffic(server: ServerThread) -> None:
    """Two keys on two endpoints each, one of them streaming, the master key once, and one fallback."""
    chat = {"model": "fake", "messages": [{"role": "user", "content": "hi"}]}
    assert _post(server, "/v1/chat/completions", "sk-team-a", chat).status_code == 200
    assert _post(server, "/v1/embeddings", "sk-team-a", {"model": "fake", "input": "hi"}).status_code == 200
    assert _post(server, "/v1/chat/completions", "sk-team-b", {**chat, "stream": True}).status_code == 200
    assert _post(server, "/v1/completions", "sk-team-b", {"model": "fake", "prompt": "hi"}).status_code == 200
    assert _post(server, "/v1/chat/completions", MASTER_KEY, chat).status_code == 200
    assert _post(server, "/v1/chat/completions", "sk-team-b", {**chat, "model": "primary"}).status_code == 200


def _scrape(server: ServerThread) -> tuple[str, Samples]:
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    return text, [
        (s.name, s.labels, s.value) for family in text_string_to_metric_families(text) for s in family.samples
    ]


def _value(samples: Samples, name: str, **labels: str) -> float:
    return sum(value for sample, found, value in samples if sample == name and labels.items() <= found.items())


@pytest.mark.integration
def test_traffic_is_attributed_to_key_names_and_endpoints(teams: ServerThread) -> None:
    _traffic(teams)
    _, samples = _scrape(teams)
    requests = "trustgate_requests_total"
    assert _value(samples, requests, key="team-a", endpoint="chat", mode="unary", status="200") == 1
    assert _value(samples, requests, key="team-a", endpoint="embeddings", status="200") == 1
    assert _value(samples, requests, key="team-b", endpoint="chat", mode="stream", status="200") == 1
    assert _value(samples, requests, key="team-b", endpoint="completions", status="200") == 1
    assert _value(samples, requests, key="master", endpoint="chat") == 1
    # The fallback: counted once, by the group asked and the group that answered; the request itself is
    # booked to the group that answered; the failed try at the group asked is a try of its own.
    assert _value(samples, "trustgate_fallbacks_total", asked="primary", answered="fake") == 1
    assert _value(samples, "trustgate_fallbacks_total") == 1
    assert _value(samples, requests, key="team-b", endpoint="chat", mode="unary", model="fake") == 1
    assert _value(samples, requests, model="primary") == 0
    assert (
        _value(samples, "trustgate_upstream_tries_total", model="primary", deployment="primary:0", outcome="failure")
        == 1
    )
    assert _value(samples, "trustgate_request_duration_seconds_count", endpoint="embeddings") == 1
    assert _value(samples, "trustgate_time_to_first_token_seconds_count", model="fake", endpoint="chat") == 1
    assert _value(samples, "trustgate_time_to_first_token_seconds_count") == 1, "unary answers have no TTFT"
    assert _value(samples, "trustgate_user_upstream_tokens_total", key="team-a", kind="prompt") > 0
    assert _value(samples, "trustgate_upstream_tries_total", model="fake", deployment="fake:0", outcome="success") == 6
    assert _value(samples, "trustgate_upstream_try_duration_seconds_count", deployment="fake:0") == 6
    assert _value(samples, "process_cpu_seconds_total") > 0 and _value(samples, "process_resident_memory_bytes") > 0


@pytest.mark.integration
def test_label_values_stay_bounded_by_the_config(teams: ServerThread) -> None:
    """Made-up keys and model names, however many, add no label values: only configured names appear."""
    _traffic(teams)
    for _ in range(20):
        made_up = uuid.uuid4().hex
        _post(teams, "/v1/chat/completions", f"sk-{made_up}", {"model": made_up, "messages": []})
        _post(teams, "/v1/embeddings", "sk-team-a", {"model": made_up, "input": "hi"})
    _, samples = _scrape(teams)
    keys = {labels["key"] for _, labels, _ in samples if "key" in labels}
    models = {labels["model"] for _, labels, _ in samples if "model" in labels}
    assert keys <= {k["name"] for k in KEYS} | GATEWAY_KEY_NAMES and {"team-a", "team-b", "unknown"} <= keys
    assert models <= {"fake", "primary", "unknown"}
    assert {labels["deployment"] for _, labels, _ in samples if "deployment" in labels} == {"fake:0", "primary:0"}
    assert {
        (labels["asked"], labels["answered"]) for name, labels, _ in samples if name == "trustgate_fallbacks_total"
    } == {("primary", "fake")}
    series = {(name, tuple(sorted(labels.items()))) for name, labels, _ in samples if name.startswith("trustgate_")}
    _traffic(teams)
    _, again = _scrape(teams)
    assert {(n, tuple(sorted(labels.items()))) for n, labels, _ in again if n.startswith("trustgate_")} == series


@pytest.mark.integration
def test_promtool_finds_the_exposition_clean(teams: ServerThread) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian package `prometheus`; `make install` installs it)")
    _traffic(teams)
    text, samples = _scrape(teams)
    assert _value(samples, "trustgate_fallbacks_total") == 1, "the exposition checked holds the fallback"
    checked = subprocess.run(
        [promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60, check=False
    )
    assert checked.returncode == 0 and not (checked.stdout + checked.stderr).strip(), checked.stdout + checked.stderr


@pytest.mark.unit
def test_a_kept_child_is_the_series_labels_names() -> None:
    """``LabelledChildren`` hands back the very child ``labels()`` gives, so what it counts is that series."""
    registry = CollectorRegistry()
    calls = Counter("calls", "Calls.", ["model", "purpose"], registry=registry)
    children = LabelledChildren()
    children(calls, "fake", "user").inc()
    children(calls, "fake", "user").inc(3)
    children(calls, "fake", "bc").inc()
    assert children(calls, "fake", "user") is calls.labels(model="fake", purpose="user")
    assert registry.get_sample_value("calls_total", {"model": "fake", "purpose": "user"}) == 4
    assert registry.get_sample_value("calls_total", {"model": "fake", "purpose": "bc"}) == 1
