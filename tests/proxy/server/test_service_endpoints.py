"""Models list, health probes and Prometheus metrics."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.proxy.metric_samples import samples
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

AUTH = {"authorization": f"Bearer {MASTER_KEY}"}


def test_models_lists_configured_groups(gateway: ServerThread) -> None:
    body = httpx.get(f"{gateway.url}/v1/models", headers=AUTH).json()
    assert body["object"] == "list"
    assert [m["id"] for m in body["data"]] == ["fake"]
    assert httpx.get(f"{gateway.url}/v1/models").status_code == 401


def test_liveness(gateway: ServerThread) -> None:
    assert httpx.get(f"{gateway.url}/health/liveness").json() == {"status": "ok"}


def test_readiness_follows_the_upstream(gateway: ServerThread, start_gateway: Callable[..., ServerThread]) -> None:
    ready = httpx.get(f"{gateway.url}/health/readiness", headers=AUTH)
    assert ready.status_code == 200 and ready.json()["models"] == {"fake": "ok"}
    down = start_gateway(gateway_config("http://127.0.0.1:9"))
    not_ready = httpx.get(f"{down.url}/health/readiness", headers=AUTH)
    assert not_ready.status_code == 503 and not_ready.json()["models"] == {"fake": "unreachable"}


def test_request_metrics_count_by_model_and_status(gateway: ServerThread, fake_upstream: FakeUpstream) -> None:
    url = f"{gateway.url}/v1/chat/completions"
    for content in ["a", "b", "[fail:429]"]:
        httpx.post(url, headers=AUTH, json={"model": "fake", "messages": [{"role": "user", "content": content}]})
    httpx.post(
        url, headers=AUTH, json={"model": "fake", "stream": True, "messages": [{"role": "user", "content": "s"}]}
    )
    httpx.post(url, headers=AUTH, json={"model": "nope", "messages": [{"role": "user", "content": "x"}]})
    httpx.post(url, json={"model": "fake", "messages": [{"role": "user", "content": "x"}]})
    found = samples(gateway)

    def count(model: str, status: str, mode: str, key: str = "master") -> float:
        labels = frozenset({"model": model, "status": status, "mode": mode, "endpoint": "chat", "key": key}.items())
        return found.get(("trustgate_requests_total", labels), 0.0)

    assert count("fake", "200", "unary") == 2
    assert count("fake", "429", "unary") == 1
    assert count("fake", "200", "stream") == 1
    assert count("unknown", "404", "unary") == 1  # unknown names never become label values
    assert count("unknown", "401", "unary", key="unknown") == 1
    duration = found[
        (
            "trustgate_request_duration_seconds_count",
            frozenset({"model": "fake", "mode": "unary", "endpoint": "chat"}.items()),
        )
    ]
    assert duration == 3
