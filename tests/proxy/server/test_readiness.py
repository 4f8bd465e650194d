"""/health/readiness: cached upstream probes (anonymous callers cannot drive upstream calls) and per-group state."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from proxy.config.settings import HealthSettings
from proxy.server.readiness import ReadinessCheck
from proxy.upstream.probes import DeploymentProbe
from tests.conftest import gateway_config
from tests.fake_upstream import FakeUpstream
from tests.proxy.metric_samples import samples
from tests.proxy.scored_gateway import AUTH
from tests.servers import ServerThread

DOWN = "http://127.0.0.1:9/v1"  # the discard port, where nothing listens


def readiness(server: ServerThread, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.get(f"{server.url}/health/readiness", headers=headers, timeout=10)  # no key: probes carry none


def with_health(config: dict[str, Any], **health: Any) -> dict[str, Any]:
    config.setdefault("trustgate", {})["health"] = health
    return config


@pytest.mark.integration
def test_anonymous_calls_probe_the_upstream_at_most_once_per_window(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    server = start_gateway(gateway_config(fake_upstream.url))  # type: ignore[attr-defined]  # default window: 10 s
    with ThreadPoolExecutor(8) as pool:  # concurrent callers share one probe in flight
        replies = list(pool.map(lambda _: readiness(server), range(20)))
    assert all(r.status_code == 200 and r.json() == {"status": "ok"} for r in replies)
    assert fake_upstream.model_listings == 1
    assert samples(server)[("trustgate_readiness_probes_total", frozenset())] == 1


@pytest.mark.integration
def test_the_probe_is_repeated_once_the_window_has_passed(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = with_health(gateway_config(fake_upstream.url), readiness_cache_s=0.5)  # type: ignore[attr-defined]
    server = start_gateway(config)
    readiness(server)
    time.sleep(0.6)
    before = fake_upstream.model_listings
    readiness(server)
    assert fake_upstream.model_listings == before + 1


@pytest.mark.unit
def test_the_cache_window_on_a_clock() -> None:
    now = [100.0]
    probes: list[float] = []

    async def probe() -> list[DeploymentProbe]:
        probes.append(now[0])
        return [DeploymentProbe("a", 0, "http://a", "up")]

    check = ReadinessCheck(probe, HealthSettings(readiness_cache_s=10), clock=lambda: now[0])

    async def scenario() -> None:
        for at in (100.0, 105.0, 109.9, 110.0, 115.0, 120.5):
            now[0] = at
            assert (await check.report()).ready

    asyncio.run(scenario())
    assert probes == [100.0, 110.0, 120.5]


def two_groups_one_down(upstream_url: str) -> dict[str, Any]:
    config = gateway_config(upstream_url)
    config["model_list"].append(
        {
            "model_name": "down",
            "litellm_params": {
                "model": "openai/gpt-4o-mini",
                "api_base": DOWN,
                "api_key": "x",
                "timeout": 2,
            },
        }
    )
    return config


@pytest.mark.integration
@pytest.mark.parametrize("mode, status", [(None, 200), ("any", 200), ("all", 503)])
def test_one_of_two_model_groups_down(
    mode: str | None, status: int, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = two_groups_one_down(fake_upstream.url)  # type: ignore[attr-defined]
    if mode is not None:
        with_health(config, readiness_mode=mode)
    reply = readiness(start_gateway(config), AUTH)
    assert reply.status_code == status
    body = reply.json()
    assert body["models"] == {"fake": "ok", "down": "unreachable"}
    assert body["mode"] == (mode or "any") and body["status"] == ("ok" if status == 200 else "unavailable")


@pytest.mark.integration
def test_every_deployment_is_probed_at_start_and_one_nobody_answers_at_is_named_down_with_its_address(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], caplog: pytest.LogCaptureFixture
) -> None:
    """A group stays ok while one of its deployments answers, and the other is still reported; a deployment
    without an ``api_base`` is probed where litellm would call it (ollama's default, where nobody serves here)."""
    caplog.set_level(logging.INFO, logger="trustgate.readiness")
    config = two_groups_one_down(fake_upstream.url)  # type: ignore[attr-defined]
    fake = config["model_list"][0]
    config["model_list"].insert(1, {**fake, "litellm_params": {**fake["litellm_params"], "api_base": DOWN}})
    config["model_list"].append({"model_name": "local", "litellm_params": {"model": "ollama/llama3"}})
    config.setdefault("trustgate", {})["passthrough"] = False
    server = start_gateway(config)
    # No caller asked: the probe ran at start, and named each deployment nobody answers at.
    wait_for(lambda: samples(server).get(("trustgate_readiness_probes_total", frozenset())) == 1)
    wait_for(lambda: len(down_lines(caplog)) == 3)
    assert sorted(down_lines(caplog)) == [
        f"deployment down (model_list[2]) at {DOWN} is down: nobody answers (ConnectError)",
        f"deployment fake (model_list[1]) at {DOWN} is down: nobody answers (ConnectError)",
        "deployment local (model_list[3]) at http://localhost:11434 is down: nobody answers (ConnectError)",
    ]
    body = readiness(server, AUTH).json()
    assert body["models"] == {"fake": "ok", "down": "unreachable", "local": "unreachable"}
    assert [(d["model"], d["address"], d["state"]) for d in body["deployments"]] == [
        ("fake", f"{fake_upstream.url}/v1", "up"),  # type: ignore[attr-defined]
        ("fake", DOWN, "down"),
        ("down", DOWN, "down"),
        ("local", "http://localhost:11434", "down"),
    ]
    assert body["deployments"][1]["reason"] == "nobody answers (ConnectError)"
    assert "deployments" not in readiness(server).json()  # a map of the deployment is the master key's only


def down_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "trustgate.readiness" and "is down" in r.getMessage()]


def wait_for(condition: Callable[[], bool], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
