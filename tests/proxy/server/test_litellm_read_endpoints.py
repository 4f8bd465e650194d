"""LiteLLM's read endpoints over real sockets: ``/health`` (a call to every deployment, on both upstream paths,
at most once per ``health.check_cache_s``), ``/model/info``, ``/v1/model/info`` and ``/model_group/info``
(prices, limits, each group's trust policy for the asking key), each key reading the groups it may use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.proxy.server.scorers import FixedScorer
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

NARROW_KEY = "sk-narrow-config-key"
UPSTREAM_SECRET = "sk-upstream-secret"  # gateway_config's deployment key


def get(server: ServerThread, path: str, key: str = MASTER_KEY, **params: str) -> httpx.Response:
    return httpx.get(f"{server.url}{path}", headers={"authorization": f"Bearer {key}"}, params=params, timeout=30)


def two_groups(upstream_url: str, **trustgate: Any) -> dict[str, Any]:
    """``fake`` (the fake upstream, 10 rpm) and ``down`` (nothing listens there); a key that may use ``fake``."""
    config = gateway_config(upstream_url)
    config["model_list"][0]["litellm_params"]["rpm"] = 10
    config["model_list"].append(
        {
            "model_name": "down",
            "litellm_params": {"model": "openai/gpt-4o", "api_base": "http://127.0.0.1:9/v1", "api_key": "sk-x"},
        }
    )
    config["trustgate"] = {"keys": [{"key": NARROW_KEY, "name": "narrow", "models": ["fake"]}], **trustgate}
    return config


def health_calls(fake: FakeUpstream) -> list[dict[str, Any]]:
    return [body for body in fake.requests if body.get("max_tokens") == 1]


@pytest.mark.parametrize("passthrough", [True, False], ids=["passthrough", "litellm"])
def test_health_calls_every_deployment_once_per_cache_window(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], passthrough: bool
) -> None:
    gateway = start_gateway(two_groups(fake_upstream.url, passthrough=passthrough))  # type: ignore[attr-defined]
    answer = get(gateway, "/health")
    assert answer.status_code == 200
    body = answer.json()
    assert (body["healthy_count"], body["unhealthy_count"]) == (1, 1)
    assert body["healthy_endpoints"] == [
        {"model": "openai/gpt-4o-mini", "model_id": "fake:0", "api_base": f"{fake_upstream.url}/v1"}  # type: ignore[attr-defined]
    ]
    [down] = body["unhealthy_endpoints"]
    assert down["model_id"] == "down:0" and down["error"]
    assert len(health_calls(fake_upstream)) == 1, "one call to the deployment behind fake"
    assert UPSTREAM_SECRET not in answer.text

    assert get(gateway, "/health", NARROW_KEY).json() == {
        "healthy_endpoints": [{"model": "openai/gpt-4o-mini", "model_id": "fake:0"}],
        "unhealthy_endpoints": [],
        "healthy_count": 1,
        "unhealthy_count": 0,
    }, "a key reads the deployments it may use, and not where they live"
    assert get(gateway, "/health", model="fake").status_code == 200
    assert get(gateway, "/health", model="down").status_code == 503, "a model asked for with nothing healthy"
    assert get(gateway, "/health", NARROW_KEY, model="down").status_code == 403
    assert get(gateway, "/health", model="nowhere").status_code == 404
    assert len(health_calls(fake_upstream)) == 1, "asked again within health.check_cache_s: not called again"
    assert get(gateway, "/health", "sk-nobody").status_code == 401

    assert get(gateway, "/health/liveness").json() == {"status": "ok"}
    assert get(gateway, "/health/readiness").status_code == 200


def test_health_calls_again_once_its_result_is_old(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    gateway = start_gateway(two_groups(fake_upstream.url, health={"check_cache_s": 0}))  # type: ignore[attr-defined]
    get(gateway, "/health")
    get(gateway, "/health")
    assert len(health_calls(fake_upstream)) == 2


@pytest.mark.parametrize("path", ["/model/info", "/v1/model/info"])
def test_model_info_lists_each_deployment_with_its_limits_and_trust_policy(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], path: str
) -> None:
    config = two_groups(
        fake_upstream.url,  # type: ignore[attr-defined]
        scoring={
            "mode": "async",
            "sample_rate": 0.5,
            "per_key": {"narrow": {"mode": "sync", "on_low_trust": {"below": 0.3}}},
            "budget": {"calls_per_minute": 60},
            "queue": {"scorer_timeout_s": 5},
        },
    )
    gateway = start_gateway(config, scorers=[FixedScorer()])
    answer = get(gateway, path)
    assert answer.status_code == 200 and UPSTREAM_SECRET not in answer.text and "sk-x" not in answer.text
    fake, down = answer.json()["data"]
    assert fake["model_name"] == "fake"
    assert fake["litellm_params"] == {
        "model": "openai/gpt-4o-mini",
        "api_base": f"{fake_upstream.url}/v1",  # type: ignore[attr-defined]
        "timeout": 5.0,
        "rpm": 10,
    }
    info = fake["model_info"]
    assert info["id"] == "fake:0" and info["mode"] == "chat"
    assert (info["input_cost_per_token"], info["output_cost_per_token"]) == (None, None), "unknown: null, never 0"
    assert (info["rpm"], info["tpm"], info["max_parallel_requests"]) == (10, None, None)
    assert info["scoring_budget"] == {"calls_per_minute": 60, "tokens_per_minute": None}
    assert info["trust_policy"]["mode"] == "async" and info["trust_policy"]["sample_rate"] == 0.5
    assert info["trust_policy"]["on_low_trust"]["below"] == 0.4 and info["trust_policy"]["score_kinds"] == ["factual"]
    assert down["model_info"]["id"] == "down:0"

    narrow = get(gateway, path, NARROW_KEY).json()["data"]
    assert [entry["model_name"] for entry in narrow] == ["fake"], "a key reads the groups it may use"
    assert narrow[0]["litellm_params"] == {"model": "openai/gpt-4o-mini"}, "and not where they live"
    assert narrow[0]["model_info"]["trust_policy"]["mode"] == "sync", "its own policy: per_key over the rest"
    assert narrow[0]["model_info"]["trust_policy"]["on_low_trust"]["below"] == 0.3

    assert [e["model_info"]["id"] for e in get(gateway, path, litellm_model_id="down:0").json()["data"]] == ["down:0"]
    assert get(gateway, path, litellm_model_id="down:7").status_code == 404
    assert get(gateway, path, NARROW_KEY, litellm_model_id="down:0").status_code == 404


def test_model_group_info_sums_a_groups_deployments(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = two_groups(fake_upstream.url)  # type: ignore[attr-defined]
    second = {**config["model_list"][0], "litellm_params": {**config["model_list"][0]["litellm_params"], "rpm": 5}}
    config["model_list"].append(second)
    gateway = start_gateway(config)
    groups = {entry["model_group"]: entry for entry in get(gateway, "/model_group/info").json()["data"]}
    assert set(groups) == {"fake", "down"}
    fake = groups["fake"]
    assert fake["providers"] == ["openai"] and fake["mode"] == "chat"
    assert (fake["rpm"], fake["tpm"]) == (15, None), "summed, and no limit where a deployment has none"
    assert (fake["input_cost_per_token"], fake["output_cost_per_token"]) == (None, None)
    assert fake["trust_policy"]["mode"] == "off", "no scorer runs here"
    only = get(gateway, "/model_group/info", model_group="fake").json()["data"]
    assert [entry["model_group"] for entry in only] == ["fake"]
    assert get(gateway, "/model_group/info", NARROW_KEY, model_group="down").status_code == 404
    assert [e["model_group"] for e in get(gateway, "/model_group/info", NARROW_KEY).json()["data"]] == ["fake"]
