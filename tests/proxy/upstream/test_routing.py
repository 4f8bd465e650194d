"""The choice of a deployment within a group (``proxy.upstream.routing``), strategy by strategy, on a seeded generator.

The gateway-level behaviour (real servers, two fake upstreams) is in test_litellm_deployments.py.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from typing import Any

import pytest

from proxy.base.errors import UpstreamError, UpstreamRateLimited
from proxy.config.litellm_config import RoutingStrategy
from proxy.config.settings import Deployment
from proxy.upstream.routing import GroupRouter

pytestmark = pytest.mark.unit


def group(*params: dict[str, Any], strategy: RoutingStrategy = "simple-shuffle") -> GroupRouter:
    deployments = [
        Deployment(model_name="g", litellm_params={"model": f"openai/m{i}", "api_base": "http://h/v1", **p})
        for i, p in enumerate(params)
    ]
    return GroupRouter(deployments, strategy, default_timeout=5.0, rng=random.Random(7))


async def answer(value: str = "ok") -> str:
    return value


def test_weights_come_from_weight_then_rpm_then_tpm() -> None:
    for params in (
        [{"weight": 9}, {"weight": 1, "rpm": 1000}],
        [{"rpm": 900}, {"rpm": 100}],
        [{"tpm": 9000}, {"tpm": 1000}],
    ):
        router = group(*params)
        picks = Counter(router.choose([]) for _ in range(2000))
        assert 0.85 < picks[0] / 2000 < 0.95, (params, picks)


def test_a_retry_goes_to_a_deployment_not_yet_tried_even_one_of_weight_zero() -> None:
    router = group({"weight": 1}, {"weight": 0}, {"weight": 0})
    assert {router.choose([]) for _ in range(200)} == {0}
    assert {router.choose([0]) for _ in range(200)} == {1, 2}
    assert router.choose([0, 1]) == 2
    assert router.choose([0, 1, 2]) == 0  # all tried: the weights again


def test_least_busy_picks_the_one_with_fewest_in_flight() -> None:
    async def scenario() -> None:
        router = group({}, {}, strategy="least-busy")
        release = asyncio.Event()

        async def held() -> str:
            await release.wait()
            return "done"

        first = router.choose([])
        task = asyncio.create_task(router.run(first, "d", held))
        await asyncio.sleep(0)
        assert router.in_flight(first) == 1
        assert {router.choose([]) for _ in range(50)} == {1 - first}
        release.set()
        await task
        assert router.in_flight(first) == 0

    asyncio.run(scenario())


def test_latency_based_routing_measures_each_then_prefers_the_fastest_and_penalises_failures() -> None:
    async def scenario() -> None:
        router = group({"timeout": 30}, {"timeout": 30}, strategy="latency-based-routing")

        async def slow() -> str:
            await asyncio.sleep(0.05)
            return "slow"

        await router.run(0, "d0", slow)
        assert router.choose([]) == 1  # never measured: counts as fastest
        await router.run(1, "d1", answer)
        assert {router.choose([]) for _ in range(20)} == {1}

        async def failing() -> str:
            raise UpstreamError("down", status_code=503)

        with pytest.raises(UpstreamError):
            await router.run(1, "d1", failing)  # counts as its whole 30 s timeout
        assert router.choose([]) == 0

    asyncio.run(scenario())


def test_a_full_deployment_is_passed_over_and_refused_when_chosen_anyway() -> None:
    async def scenario() -> None:
        router = group({"max_parallel_requests": 1}, {"max_parallel_requests": 1})
        release = asyncio.Event()

        async def held() -> str:
            await release.wait()
            return "done"

        task = asyncio.create_task(router.run(0, "d0", held))
        await asyncio.sleep(0)
        assert {router.choose([]) for _ in range(50)} == {1}
        with pytest.raises(UpstreamRateLimited, match="max_parallel_requests limit"):
            await router.run(0, "d0", answer)
        release.set()
        assert await task == "done" and await router.run(0, "d0", answer) == "ok"

    asyncio.run(scenario())
