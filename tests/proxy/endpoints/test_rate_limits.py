"""Per-key rpm / tpm / max_parallel_requests and per-deployment rpm: 429 in OpenAI's shape with Retry-After.

Across replicas: two gateways on one real redis-server share each key's counters.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from proxy.base.errors import RateLimited
from proxy.base.limits import KeyLimits, Limiter, MemoryCounters
from tests.conftest import gateway_config
from tests.fake_upstream import FakeUpstream
from tests.redis_server import RedisServer
from tests.servers import ServerThread
from tests.waiting import in_a_fresh_limit_window


class Clock:
    def __init__(self) -> None:
        self.now = 60.0 * 16_667 + 20  # 20 s into a minute window

    def __call__(self) -> float:
        return self.now


@pytest.mark.unit
def test_rpm_tpm_and_parallel_limits_in_process() -> None:
    clock = Clock()
    limiter = Limiter(MemoryCounters(clock=clock), clock=clock)

    async def scenario() -> None:
        for _ in range(2):
            await (await limiter.admit("team", KeyLimits(rpm=2))).release()
        with pytest.raises(RateLimited) as caught:
            await limiter.admit("team", KeyLimits(rpm=2))
        assert caught.value.status_code == 429 and caught.value.retry_after == pytest.approx(40)
        await limiter.admit("other", KeyLimits(rpm=2))  # keys are counted apart
        clock.now += 40
        await limiter.admit("team", KeyLimits(rpm=2))  # a new window
        slot = await limiter.admit("big", KeyLimits(tpm=100))
        await slot.done(120)
        with pytest.raises(RateLimited, match="tokens per minute"):
            await limiter.admit("big", KeyLimits(tpm=100))
        held = await limiter.admit("one", KeyLimits(max_parallel_requests=1))
        with pytest.raises(RateLimited, match="parallel"):
            await limiter.admit("one", KeyLimits(max_parallel_requests=1))
        await held.release()
        await held.release()  # twice is once
        await (await limiter.admit("one", KeyLimits(max_parallel_requests=1))).release()

    asyncio.run(scenario())


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path).start()
    yield server
    server.stop()


def limited_config(upstream_url: str, redis_url: str, **limits: Any) -> dict[str, Any]:
    config = gateway_config(upstream_url)
    config["trustgate"] = {"limits": {"redis_url": redis_url}, "keys": [{"key": "sk-team", "name": "team", **limits}]}
    return config


def ask(server: ServerThread, content: str = "hi") -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/chat/completions",
        headers={"authorization": "Bearer sk-team"},
        timeout=20,
        json={"model": "fake", "messages": [{"role": "user", "content": content}]},
    )


@pytest.mark.integration
def test_rpm_is_shared_by_two_replicas_on_one_redis(
    fake_upstream: FakeUpstream, redis_server: RedisServer, start_gateway: Callable[..., ServerThread]
) -> None:
    config = limited_config(fake_upstream.url, redis_server.url, rpm=3)  # type: ignore[attr-defined]
    first, second = start_gateway(config), start_gateway(config)
    in_a_fresh_limit_window()
    statuses = [ask(server).status_code for server in (first, second, first)]
    assert statuses == [200, 200, 200]
    refused = ask(second)
    assert refused.status_code == 429 and 1 <= int(refused.headers["retry-after"]) <= 60
    assert refused.json()["error"]["type"] == "rate_limit_error"
    assert refused.json()["error"]["code"] == "rate_limit_exceeded"
    client = openai.OpenAI(base_url=f"{first.url}/v1", api_key="sk-team", max_retries=0)
    with pytest.raises(openai.RateLimitError):
        client.responses.create(model="fake", input="x")  # every endpoint counts
    assert len(fake_upstream.requests) == 3


@pytest.mark.integration
def test_parallel_requests_are_held_across_replicas(
    fake_upstream: FakeUpstream, redis_server: RedisServer, start_gateway: Callable[..., ServerThread]
) -> None:
    config = limited_config(fake_upstream.url, redis_server.url, max_parallel_requests=1)  # type: ignore[attr-defined]
    first, second = start_gateway(config), start_gateway(config)
    slow: list[httpx.Response] = []
    holder = threading.Thread(target=lambda: slow.append(ask(first, "[stall:1.5]")))
    holder.start()
    for _ in range(200):  # until the slow request reached the upstream (bounded)
        if fake_upstream.requests:
            break
        threading.Event().wait(0.01)
    assert ask(second).status_code == 429
    holder.join(timeout=10)
    assert slow[0].status_code == 200
    assert ask(second).status_code == 200  # the slot was given back


@pytest.mark.integration
def test_deployment_rpm_is_a_429_with_retry_after(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["model_list"][0]["litellm_params"]["rpm"] = 1
    config["trustgate"] = {"retries": {"retry_after_cap_s": 0.5}}
    server = start_gateway(config)
    auth = {"authorization": f"Bearer {config['general_settings']['master_key']}"}
    body = {"model": "fake", "messages": [{"role": "user", "content": "x"}]}
    in_a_fresh_limit_window()
    assert httpx.post(f"{server.url}/v1/chat/completions", json=body, headers=auth).status_code == 200
    second = httpx.post(f"{server.url}/v1/chat/completions", json=body, headers=auth)
    assert second.status_code == 429 and int(second.headers["retry-after"]) >= 1
    assert second.json()["error"]["code"] == "deployment_rate_limited" and len(fake_upstream.requests) == 1


@pytest.mark.integration
def test_deployment_tpm_counts_reported_usage(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["model_list"][0]["litellm_params"]["tpm"] = 5  # one echo answer uses more than that
    config["trustgate"] = {"retries": {"retry_after_cap_s": 0.5}}
    server = start_gateway(config)
    auth = {"authorization": f"Bearer {config['general_settings']['master_key']}"}
    body = {"model": "fake", "messages": [{"role": "user", "content": "one two three"}]}
    in_a_fresh_limit_window()
    assert httpx.post(f"{server.url}/v1/chat/completions", json=body, headers=auth).status_code == 200
    second = httpx.post(f"{server.url}/v1/chat/completions", json=body, headers=auth)
    assert second.status_code == 429 and "tpm" in second.json()["error"]["message"]
