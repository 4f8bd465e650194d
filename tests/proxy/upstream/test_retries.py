"""Retries with backoff: Retry-After honoured up to a cap, and scoring that backs off instead of amplifying 429s."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest

from proxy.assembly import http_client
from proxy.base.errors import UpstreamError, UpstreamRateLimited
from proxy.config.settings import RetrySettings, RouterSettings, settings_from_dict
from proxy.upstream.client import UpstreamClient
from proxy.upstream.retries import RetryBudget, RetryPolicy
from proxy.upstream.slots import Priority
from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.servers import ServerThread

QUICK = {"backoff_initial_s": 0.01, "backoff_max_s": 0.02, "jitter_s": 0.0}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def policy(clock: Clock, waits: list[float], retries: int = 3, **settings: Any) -> RetryPolicy:
    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    return RetryPolicy(
        RouterSettings(num_retries=retries), RetrySettings(**{**QUICK, **settings}), clock=clock, sleep=sleep
    )


def failing(errors: list[UpstreamError]) -> Callable[[int], Any]:
    async def call(attempt: int) -> str:
        if attempt < len(errors):
            raise errors[attempt]
        return "ok"

    return call


@pytest.mark.unit
def test_backoff_grows_and_retry_after_is_honoured() -> None:
    waits: list[float] = []
    errors = [
        UpstreamError("boom", status_code=503),
        UpstreamError("boom", status_code=503),
        UpstreamRateLimited("slow down", retry_after=0.7),
    ]
    assert (
        asyncio.run(policy(Clock(), waits, backoff_initial_s=0.1, backoff_max_s=10).run("g", failing(errors))) == "ok"
    )
    assert waits[0] == pytest.approx(0.1) and waits[1] == pytest.approx(0.2) and waits[2] == 0.7


@pytest.mark.unit
def test_retry_after_beyond_the_cap_is_not_waited_out() -> None:
    waits: list[float] = []
    with pytest.raises(UpstreamRateLimited) as caught:
        asyncio.run(
            policy(Clock(), waits, retry_after_cap_s=5).run("g", failing([UpstreamRateLimited("x", retry_after=60)]))
        )
    assert waits == [] and caught.value.retry_after == 60


@pytest.mark.unit
def test_client_errors_are_not_retried() -> None:
    waits: list[float] = []
    with pytest.raises(UpstreamError):
        asyncio.run(policy(Clock(), waits).run("g", failing([UpstreamError("bad", status_code=400)])))
    assert waits == []


@pytest.mark.unit
def test_retry_budget_is_a_share_of_calls_over_a_window() -> None:
    clock = Clock()
    budget = RetryBudget(ratio=0.5, minimum=1, window_s=10, clock=clock)
    for _ in range(4):
        budget.record_call()
    assert [budget.try_retry() for _ in range(4)] == [True, True, True, False]  # 1 + 0.5 × 4
    clock.now += 11  # the window slid past every call and retry
    assert budget.try_retry() and not budget.try_retry()


@pytest.mark.unit
def test_a_last_try_that_fails_spends_no_retry_and_sheds_nothing() -> None:
    """Out of tries, a scoring call's failure is raised as it is: no retry is taken from the budget for a try
    that will not happen, and no shed is counted for it."""
    shed: list[tuple[str, str]] = []
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    one_retry = RetrySettings(**{**QUICK, "scoring_retry_ratio": 0.0, "scoring_min_retries": 1})
    retries = RetryPolicy(
        RouterSettings(num_retries=1),
        one_retry,
        clock=Clock(),
        sleep=sleep,
        on_scoring_shed=lambda group, reason: shed.append((group, reason)),
    )
    errors = [UpstreamError("boom", status_code=503), UpstreamError("boom again", status_code=503)]
    with pytest.raises(UpstreamError) as caught:
        asyncio.run(retries.run("g", failing(errors), for_scoring=True))
    assert str(caught.value) == "boom again" and waits == [pytest.approx(0.01)] and shed == []


@pytest.mark.unit
def test_scoring_is_shed_while_its_group_is_rate_limited() -> None:
    clock, shed = Clock(), []
    retries = RetryPolicy(
        RouterSettings(num_retries=0),
        RetrySettings(**QUICK),
        clock=clock,
        on_scoring_shed=lambda group, reason: shed.append((group, reason)),
    )
    calls: list[int] = []

    async def limited(attempt: int) -> str:
        calls.append(attempt)
        raise UpstreamRateLimited("slow down", retry_after=2.0)

    async def fine(attempt: int) -> str:
        calls.append(attempt)
        return "ok"

    async def scenario() -> None:
        with pytest.raises(UpstreamRateLimited):
            await retries.run("g", limited)  # a user call meets the 429
        with pytest.raises(UpstreamRateLimited) as caught:
            await retries.run("g", fine, for_scoring=True)
        assert caught.value.code == "scoring_backoff" and caught.value.retry_after == pytest.approx(2.0)
        assert await retries.run("g", fine) == "ok"  # users are never shed
        assert await retries.run("other", fine, for_scoring=True) == "ok"  # another group is not limited
        clock.now += 2.5
        assert await retries.run("g", fine, for_scoring=True) == "ok"

    asyncio.run(scenario())
    assert shed == [("g", "rate_limited")] and len(calls) == 4


@pytest.mark.integration
def test_scoring_retries_stop_when_the_budget_is_spent(fake_upstream: FakeUpstream) -> None:
    """Against the fake upstream: a user call is retried through a 429, a scoring call on an empty budget is not."""
    config = gateway_config(fake_upstream.url, router_settings={"num_retries": 2, "timeout": 5})  # type: ignore[attr-defined]
    config["trustgate"] = {"retries": {**QUICK, "scoring_retry_ratio": 0.0, "scoring_min_retries": 0}}
    settings = settings_from_dict(config, {})
    body = {"messages": [{"role": "user", "content": "hi"}]}
    shed: list[tuple[str, str]] = []

    async def scenario() -> None:
        async with (
            http_client() as http,
            contextlib.aclosing(
                UpstreamClient(settings, http, on_scoring_shed=lambda g, r: shed.append((g, r)))
            ) as upstream,
        ):
            fake_upstream.rate_limited, fake_upstream.retry_after = 1, "0"
            assert (await upstream.complete("fake", body)).data["choices"]
            assert len(fake_upstream.requests) == 2
            fake_upstream.rate_limited = 1
            with pytest.raises(UpstreamRateLimited):
                await upstream.complete("fake", body, priority=Priority.SCORING)
            assert len(fake_upstream.requests) == 3  # no retry

    asyncio.run(scenario())
    assert shed == [("fake", "retry_budget")]


@pytest.mark.integration
@pytest.mark.parametrize("path", ["passthrough", "litellm"])
def test_429_retried_after_retry_after_on_both_paths(
    path: str, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = gateway_config(fake_upstream.url, router_settings={"num_retries": 2, "timeout": 5})  # type: ignore[attr-defined]
    config["trustgate"] = {"passthrough": path == "passthrough", "retries": {**QUICK, "retry_after_cap_s": 1}}
    server = start_gateway(config)
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=MASTER_KEY, max_retries=0)
    fake_upstream.rate_limited, fake_upstream.retry_after = 2, "0.05"
    reply = client.chat.completions.create(model="fake", messages=[{"role": "user", "content": "retry me"}])
    assert reply.choices[0].message.content == "You said: retry me" and len(fake_upstream.requests) == 3
    fake_upstream.rate_limited, fake_upstream.retry_after = 5, "120"  # longer than the cap: passed back at once
    response = httpx.post(
        f"{server.url}/v1/chat/completions",
        headers={"authorization": f"Bearer {MASTER_KEY}"},
        json={"model": "fake", "messages": [{"role": "user", "content": "x"}]},
    )
    assert response.status_code == 429 and response.headers["retry-after"] == "120"
    assert response.json()["error"]["type"] == "rate_limit_error" and len(fake_upstream.requests) == 4
