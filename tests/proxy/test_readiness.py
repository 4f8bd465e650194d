"""/health/readiness: cached upstream probes (anonymous callers cannot drive upstream calls) and per-group state."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from proxy.config.settings import HealthSettings
from proxy.server.readiness import ReadinessCheck
from tests.conftest import gateway_config
from tests.fake_upstream import FakeUpstream
from tests.proxy.test_service_endpoints import AUTH, samples
from tests.servers import ServerThread


def readiness(server: ServerThread, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.get(f"{server.url}/health/readiness", headers=headers, timeout=10)  # no key: probes carry none


def with_health(config: dict[str, Any], **health: Any) -> dict[str, Any]:
    config.setdefault("trustgate", {})["health"] = health
    return config


def test_anonymous_calls_probe_the_upstream_at_most_once_per_window(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    server = start_gateway(gateway_config(fake_upstream.url))  # type: ignore[attr-defined]  # default window: 10 s
    with ThreadPoolExecutor(8) as pool:  # concurrent callers share one probe in flight
        replies = list(pool.map(lambda _: readiness(server), range(20)))
    assert all(r.status_code == 200 and r.json() == {"status": "ok"} for r in replies)
    assert fake_upstream.model_listings == 1
    assert samples(server)[("trustgate_readiness_probes_total", frozenset())] == 1


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


def test_the_cache_window_on_a_clock() -> None:
    now = [100.0]
    probes: list[float] = []

    async def probe() -> dict[str, str]:
        probes.append(now[0])
        return {"a": "ok"}

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
                "api_base": "http://127.0.0.1:9/v1",
                "api_key": "x",
                "timeout": 2,
            },
        }
    )
    return config


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
