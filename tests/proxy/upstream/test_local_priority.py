"""Calls to the single-slot local model: one at a time, user calls ahead of queued scoring calls, a sync
request's scoring calls ahead of async requests'.

The fake upstream plays the local llama.cpp server (the config's
``local_upstream`` names its port), over real sockets; the gateway's
UpstreamClient must hold back all but one call and give the next free slot to
the user's call.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from prometheus_client import CollectorRegistry

from exporters import build_metrics
from proxy import settings_from_dict
from proxy.base.errors import UpstreamTimeout
from proxy.trust.ask import UpstreamAsk
from proxy.upstream.client import UpstreamClient
from proxy.upstream.completion import UpstreamStream
from proxy.upstream.prices import PriceList
from proxy.upstream.slots import Priority, PrioritySlots
from tests.conftest import gateway_config
from tests.fake_upstream import FakeUpstream, last_user_text


@contextlib.asynccontextmanager
async def local_client(fake_upstream: FakeUpstream) -> AsyncIterator[UpstreamClient]:
    """An upstream client whose group ``fake`` is the embedded model server (one slot), closed after use."""
    url = urlsplit(fake_upstream.url)  # type: ignore[attr-defined]
    config: dict[str, Any] = gateway_config(f"http://{url.hostname}:{url.port}")
    config["trustgate"] = {"local_upstream": {"enabled": True, "host": url.hostname, "port": url.port}}
    async with (
        httpx.AsyncClient() as http,
        contextlib.aclosing(UpstreamClient(settings_from_dict(config, {}), http)) as client,
    ):
        yield client


def body(text: str, **extra: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}], **extra}


def arrival_order(fake_upstream: FakeUpstream) -> list[str]:
    """The user texts of the calls, in the order they reach ``fake_upstream`` (which answers "ok")."""
    arrived: list[str] = []

    def respond(messages: list[dict[str, Any]]) -> str:
        arrived.append(last_user_text(messages))
        return "ok"

    fake_upstream.responder = respond
    return arrived


# How long the first call holds the one slot: every later call must be queued well before it ends. The calls are
# made 50 ms apart, the last at 150 ms; held only 150 ms, the first call can end on a slow machine before the
# last is queued.
SLOT_HELD_MS = 500


@pytest.mark.integration
def test_a_user_call_overtakes_queued_scoring_calls(fake_upstream: FakeUpstream) -> None:
    at_upstream = arrival_order(fake_upstream)

    async def scenario() -> None:
        async with local_client(fake_upstream) as client:
            first = asyncio.create_task(client.complete("fake", body("scoring-0"), priority=Priority.SCORING))
            await asyncio.sleep(0.05)
            queued = [
                asyncio.create_task(client.complete("fake", body(f"scoring-{i}"), priority=Priority.SCORING))
                for i in range(1, 4)
            ]
            await asyncio.sleep(0.05)
            user = asyncio.create_task(client.complete("fake", body("user")))  # a user call: the default
            await asyncio.gather(first, *queued, user)

    fake_upstream.delay_ms = SLOT_HELD_MS
    asyncio.run(scenario())
    assert at_upstream == ["scoring-0", "user", "scoring-1", "scoring-2", "scoring-3"]


@pytest.mark.integration
def test_a_sync_jobs_scoring_calls_overtake_async_jobs_but_not_users(fake_upstream: FakeUpstream) -> None:
    at_upstream = arrival_order(fake_upstream)

    async def scenario() -> None:
        async with local_client(fake_upstream) as client:
            metrics = build_metrics(CollectorRegistry())
            prices = PriceList({"fake": [None]}, {"fake": ["openai/fake"]})
            for_async = UpstreamAsk(client, metrics, "fake", "bc", prices=prices, lane="async")
            for_sync = UpstreamAsk(client, metrics, "fake", "bc", prices=prices, lane="sync")

            def asked(ask: UpstreamAsk, text: str) -> asyncio.Task[Any]:
                return asyncio.create_task(ask([{"role": "user", "content": text}]))

            first = asked(for_async, "async-0")
            await asyncio.sleep(0.05)
            queued = [asked(for_async, f"async-{i}") for i in range(1, 3)]
            await asyncio.sleep(0.05)
            sync = asked(for_sync, "sync")
            await asyncio.sleep(0.05)
            user = asyncio.create_task(client.complete("fake", body("user")))
            await asyncio.gather(first, *queued, sync, user)

    fake_upstream.delay_ms = SLOT_HELD_MS
    asyncio.run(scenario())
    assert at_upstream == ["async-0", "user", "sync", "async-1", "async-2"]


@pytest.mark.integration
def test_one_call_at_a_time_reaches_the_local_upstream(fake_upstream: FakeUpstream) -> None:
    inside = {"now": 0, "most": 0}

    async def scenario() -> None:
        async with local_client(fake_upstream) as client:
            real_complete = client._passthrough.complete

            async def counting(deployment: Any, payload: dict[str, Any]) -> Any:
                inside["now"] += 1
                inside["most"] = max(inside["most"], inside["now"])
                try:
                    return await real_complete(deployment, payload)
                finally:
                    inside["now"] -= 1

            client._passthrough.complete = counting  # type: ignore[method-assign]
            await asyncio.gather(*(client.complete("fake", body(f"q{i}"), priority=Priority(i % 2)) for i in range(8)))

    fake_upstream.delay_ms = 30
    asyncio.run(scenario())
    assert inside["most"] == 1 and len(fake_upstream.requests) == 8


@pytest.mark.integration
def test_a_stream_holds_the_slot_until_it_is_closed(fake_upstream: FakeUpstream) -> None:
    async def scenario() -> None:
        async with local_client(fake_upstream) as client:
            stream = await client.open_stream("fake", body("streamed words", stream=True))
            waiting = asyncio.create_task(client.complete("fake", body("next"), priority=Priority.SCORING))
            await asyncio.sleep(0.1)
            assert not waiting.done() and len(fake_upstream.requests) == 1
            chunks = [chunk async for chunk in stream]  # read to the end: the stream closes itself
            assert b"[DONE]" in b"".join(chunks)
            await asyncio.wait_for(waiting, 5)

    asyncio.run(scenario())
    assert len(fake_upstream.requests) == 2


@pytest.mark.unit
def test_a_waiting_call_that_gives_up_leaves_no_trace() -> None:
    async def scenario() -> None:
        slots = PrioritySlots(1)
        await slots.acquire(Priority.SCORING, 1.0)
        with pytest.raises(UpstreamTimeout):
            await slots.acquire(Priority.USER, 0.05)
        cancelled = asyncio.create_task(slots.acquire(Priority.USER, 10.0))
        await asyncio.sleep(0.01)
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        assert slots.waiting == 0
        slots.release()
        await asyncio.wait_for(slots.acquire(Priority.SCORING, 1.0), 0.5)  # the slot came back, not to a ghost

    asyncio.run(scenario())


async def _empty_stream() -> UpstreamStream:
    """An opened stream with no chunks, whose close does nothing: what the slot does is all there is to see."""

    async def no_chunks() -> Any:
        return
        yield  # pragma: no cover - makes this an async generator

    async def close() -> None:
        return None

    return UpstreamStream(chunks=no_chunks(), close=close, model_group="local")


@pytest.mark.unit
def test_a_stream_never_read_frees_its_slot_when_collected() -> None:
    """A client gone before its response body started never closes the stream; the slot must not be lost."""

    async def scenario() -> None:
        slots = PrioritySlots(1)
        stream = await slots.open_stream(Priority.USER, 1.0, _empty_stream)
        del stream
        gc.collect()
        await asyncio.wait_for(slots.acquire(Priority.SCORING, 1.0), 0.5)

    asyncio.run(scenario())


@pytest.mark.unit
def test_a_closed_stream_leaves_nothing_for_the_collector_to_do() -> None:
    """Closing releases the slot; collecting the closed stream later must not wake the event loop from outside
    (a ``call_soon_threadsafe`` per stream was a write to the loop's self-pipe and an extra turn)."""

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        woken: list[object] = []
        plain = loop.call_soon_threadsafe
        loop.call_soon_threadsafe = lambda *args, **kwargs: woken.append(args) or plain(*args, **kwargs)  # type: ignore[method-assign]
        slots = PrioritySlots(1)
        stream = await slots.open_stream(Priority.USER, 1.0, _empty_stream)
        await stream.close()
        del stream
        gc.collect()
        assert woken == []
        await asyncio.wait_for(slots.acquire(Priority.SCORING, 1.0), 0.5)  # released once, by the close

    asyncio.run(scenario())
