"""``unless_client_leaves``: an upstream call cancelled in the request's own task when the server reports that
the client left (``connections.Departure``), and only then."""

from __future__ import annotations

import asyncio

import pytest
from starlette.requests import Request

from proxy.base.errors import ClientDisconnected
from proxy.server.connections import DEPARTURE, Departure
from proxy.server.request_context import unless_client_leaves

pytestmark = pytest.mark.unit


def _request(departure: Departure | None) -> Request:
    scope: dict[str, object] = {"type": "http", "method": "POST", "path": "/v1/chat/completions", "headers": []}
    if departure is not None:
        scope[DEPARTURE] = departure
    return Request(scope)


def test_a_client_leaving_mid_call_cancels_the_call_and_leaves_the_task_uncancelled() -> None:
    departure, seen = Departure(), []

    async def upstream_call() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return "answer"

    async def scenario() -> None:
        asyncio.get_running_loop().call_later(0.01, departure.leave)
        with pytest.raises(ClientDisconnected) as caught:
            await unless_client_leaves(_request(departure), upstream_call())
        assert caught.value.status_code == 499
        task = asyncio.current_task()
        assert task is not None and task.cancelling() == 0
        await asyncio.sleep(0)  # the task goes on: no cancellation is left pending for it

    asyncio.run(scenario())
    assert seen == ["cancelled"]


def test_a_client_gone_before_the_call_is_not_called_for() -> None:
    departure, started = Departure(), []
    departure.leave()

    async def upstream_call() -> str:
        started.append(True)
        return "answer"

    with pytest.raises(ClientDisconnected):
        asyncio.run(unless_client_leaves(_request(departure), upstream_call()))
    assert started == []


def test_the_call_is_answered_while_the_client_stays_and_the_departure_forgets_it() -> None:
    departure = Departure()

    async def upstream_call() -> str:
        await asyncio.sleep(0)
        return "answer"

    assert asyncio.run(unless_client_leaves(_request(departure), upstream_call())) == "answer"
    departure.leave()  # after the answer: nothing is cancelled any more


def test_without_a_departure_in_the_scope_the_call_just_runs() -> None:
    async def upstream_call() -> str:
        return "answer"

    assert asyncio.run(unless_client_leaves(_request(None), upstream_call())) == "answer"


def test_another_cancellation_goes_on_as_a_cancellation() -> None:
    departure = Departure()

    async def scenario() -> None:
        async def upstream_call() -> str:
            await asyncio.sleep(10)
            return "answer"

        waiting = asyncio.ensure_future(unless_client_leaves(_request(departure), upstream_call()))
        await asyncio.sleep(0.01)
        waiting.cancel()  # the server shutting down, say
        with pytest.raises(asyncio.CancelledError):
            await waiting

    asyncio.run(scenario())
