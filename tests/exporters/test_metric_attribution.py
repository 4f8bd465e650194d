"""The gateway's /metrics as an operator scrapes it: traffic attributed to a key's name and an endpoint,
time to first token for streams, the process series, label values bounded by the config whatever
clients send, and an exposition `promtool check metrics` finds clean."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Callable

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.servers import ServerThread

KEYS = [{"key": "sk-team-a", "name": "team-a"}, {"key": "sk-team-b", "name": "team-b"}]
# What a key label may read besides the configured names: the master key, no auth, and not recognised.
GATEWAY_KEY_NAMES = {"master", "anonymous", "unknown"}
Samples = list[tuple[str, dict[str, str], float]]


@pytest.fixture
def teams(fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]) -> ServerThread:
    config = gateway_config(fake_upstream.url, trustgate={"keys": KEYS})  # type: ignore[attr-defined]
    return start_gateway(config)


def _post(server: ServerThread, path: str, key: str, body: dict[str, object]) -> httpx.Response:
    return httpx.post(f"{server.url}{path}", headers={"authorization": f"Bearer {key}"}, timeout=20, json=body)


def _traffic(server: ServerThread) -> None:
    """Two keys on two endpoints each, one of them streaming, and the master key once."""
    chat = {"model": "fake", "messages": [{"role": "user", "content": "hi"}]}
    assert _post(server, "/v1/chat/completions", "sk-team-a", chat).status_code == 200
    assert _post(server, "/v1/embeddings", "sk-team-a", {"model": "fake", "input": "hi"}).status_code == 200
    assert _post(server, "/v1/chat/completions", "sk-team-b", {**chat, "stream": True}).status_code == 200
    assert _post(server, "/v1/completions", "sk-team-b", {"model": "fake", "prompt": "hi"}).status_code == 200
    assert _post(server, "/v1/chat/completions", MASTER_KEY, chat).status_code == 200


def _scrape(server: ServerThread) -> tuple[str, Samples]:
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    return text, [(s.name, s.labels, s.value) for family in text_string_to_metric_families(text)
                  for s in family.samples]


def _value(samples: Samples, name: str, **labels: str) -> float:
    return sum(value for sample, found, value in samples if sample == name and labels.items() <= found.items())


def test_traffic_is_attributed_to_key_names_and_endpoints(teams: ServerThread) -> None:
    _traffic(teams)
    _, samples = _scrape(teams)
    requests = "trustgate_requests_total"
    assert _value(samples, requests, key="team-a", endpoint="chat", mode="unary", status="200") == 1
    assert _value(samples, requests, key="team-a", endpoint="embeddings", status="200") == 1
    assert _value(samples, requests, key="team-b", endpoint="chat", mode="stream", status="200") == 1
    assert _value(samples, requests, key="team-b", endpoint="completions", status="200") == 1
    assert _value(samples, requests, key="master", endpoint="chat") == 1
    assert _value(samples, "trustgate_request_duration_seconds_count", endpoint="embeddings") == 1
    assert _value(samples, "trustgate_time_to_first_token_seconds_count", model="fake", endpoint="chat") == 1
    assert _value(samples, "trustgate_time_to_first_token_seconds_count") == 1, "unary answers have no TTFT"
    assert _value(samples, "trustgate_user_upstream_tokens_total", key="team-a", kind="prompt") > 0
    assert _value(samples, "trustgate_upstream_tries_total", model="fake", deployment="fake:0", outcome="success") == 5
    assert _value(samples, "trustgate_upstream_try_duration_seconds_count", deployment="fake:0") == 5
    assert _value(samples, "process_cpu_seconds_total") > 0 and _value(samples, "process_resident_memory_bytes") > 0


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
    assert models <= {"fake", "unknown"}
    assert {labels["deployment"] for _, labels, _ in samples if "deployment" in labels} == {"fake:0"}
    series = {(name, tuple(sorted(labels.items()))) for name, labels, _ in samples if name.startswith("trustgate_")}
    _traffic(teams)
    _, again = _scrape(teams)
    assert {(n, tuple(sorted(labels.items()))) for n, labels, _ in again if n.startswith("trustgate_")} == series


def test_promtool_finds_the_exposition_clean(teams: ServerThread) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian package `prometheus`; `make install` installs it)")
    _traffic(teams)
    text, _ = _scrape(teams)
    checked = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True,
                             timeout=60, check=False)
    assert checked.returncode == 0 and not (checked.stdout + checked.stderr).strip(), checked.stdout + checked.stderr
