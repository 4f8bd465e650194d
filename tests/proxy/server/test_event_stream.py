"""The gateway's own streamed response (``proxy.server.event_stream``): a stream read to its end, and a client
that leaves."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator

import httpx
import pytest

from proxy.server.connections import DEPARTURE, Departure
from proxy.server.event_stream import EventStream, FinalEvents
from tests.conftest import MASTER_KEY
from tests.fake_upstream import FakeUpstream
from tests.proxy.metric_samples import samples
from tests.servers import ServerThread

AUTH = {"authorization": f"Bearer {MASTER_KEY}"}


def _counted(server: ServerThread, status: str, mode: str = "stream") -> float:
    return sum(
        value
        for (name, labels), value in samples(server).items()
        if name == "trustgate_requests_total"
        and dict(labels).get("status") == status
        and dict(labels).get("mode") == mode
    )


@pytest.mark.integration
def test_a_stream_is_an_event_stream_that_ends_with_done(gateway: ServerThread) -> None:
    body = {"model": "fake", "messages": [{"role": "user", "content": "a b c"}], "stream": True}
    response = httpx.post(f"{gateway.url}/v1/chat/completions", json=body, headers=AUTH)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert response.headers["cache-control"] == "no-cache"
    assert response.text.endswith("data: [DONE]\n\n")
    assert _counted(gateway, "200") == 1


@pytest.mark.integration
def test_a_client_leaving_mid_stream_is_counted_499_and_logs_no_error(
    gateway: ServerThread, fake_upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    body = {"model": "fake", "messages": [{"role": "user", "content": "[stall-stream] a b c"}], "stream": True}
    with caplog.at_level(logging.ERROR):
        with httpx.stream("POST", f"{gateway.url}/v1/chat/completions", json=body, headers=AUTH) as response:
            assert next(response.iter_raw()).startswith(b"data: ")
        deadline = time.monotonic() + 10
        while (fake_upstream.stream_disconnects == 0 or _counted(gateway, "499") == 0) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert fake_upstream.stream_disconnects == 1  # the upstream read was cancelled
    assert _counted(gateway, "499") == 1
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    after = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        headers=AUTH,
        json={"model": "fake", "messages": [{"role": "user", "content": "next"}], "stream": True},
    )
    assert after.status_code == 200 and after.text.endswith("data: [DONE]\n\n")


@pytest.mark.integration
def test_a_client_leaving_before_a_whole_reply_is_counted_499_and_the_next_request_is_served(
    gateway: ServerThread, fake_upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    """The upstream call is cancelled in the request's own task (``unless_client_leaves``): the request ends
    as a 499, and the connection's next request, in a new task, is not cancelled by what is left of it."""
    body = {"model": "fake", "messages": [{"role": "user", "content": "[stall:4] a b c"}]}
    with caplog.at_level(logging.ERROR):
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{gateway.url}/v1/chat/completions", json=body, headers=AUTH, timeout=0.5)
        deadline = time.monotonic() + 3  # before the fake's 4 s answer
        while (
            fake_upstream.disconnects == 0 or _counted(gateway, "499", "unary") == 0
        ) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert fake_upstream.disconnects == 1 and _counted(gateway, "499", "unary") == 1
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    with httpx.Client(headers=AUTH) as client:
        for _ in range(3):
            after = client.post(
                f"{gateway.url}/v1/chat/completions",
                json={"model": "fake", "messages": [{"role": "user", "content": "next"}]},
            )
            assert after.status_code == 200 and after.json()["choices"]
    assert _counted(gateway, "200", "unary") == 3


class Server:
    """The server side of one response, as the gateway's protocol gives it to the app: ``send`` records each
    message, and the scope carries the request's ``Departure``."""

    def __init__(self) -> None:
        self.sent: list[dict[str, object]] = []
        self.departure = Departure()
        self.scope = {"type": "http", DEPARTURE: self.departure}

    async def send(self, message: dict[str, object]) -> None:
        self.sent.append(message)

    async def receive(self) -> dict[str, object]:
        raise AssertionError("an event stream reads nothing from its client")

    def bodies(self) -> list[tuple[object, object]]:
        return [(m["body"], m["more_body"]) for m in self.sent if m["type"] == "http.response.body"]


@pytest.mark.unit
def test_final_events_end_the_body_in_the_same_message_and_the_generator_still_finishes() -> None:
    """The end of the chunked body goes with the last events (one write), and a client that leaves once the
    response is whole does not cancel the generator's own ending (where the request is metered)."""
    finished: list[str] = []

    async def chunks(server: Server) -> AsyncIterator[bytes]:
        try:
            yield b"data: 1\n\n"
            yield FinalEvents(b"data: [DONE]\n\n")
            server.departure.leave()
            await asyncio.sleep(0.01)  # metering that waits, as a Redis-backed limit does
            finished.append("metered")
        except asyncio.CancelledError:
            finished.append("cancelled")
            raise

    async def scenario() -> Server:
        server = Server()
        await EventStream(chunks(server), {})(server.scope, server.receive, server.send)  # type: ignore[arg-type]
        return server

    server = asyncio.run(scenario())
    assert server.bodies() == [(b"data: 1\n\n", True), (b"data: [DONE]\n\n", False)]
    assert finished == ["metered"]


@pytest.mark.unit
def test_a_client_leaving_mid_stream_cancels_the_generator_where_it_waits_and_the_response_ends_quietly() -> None:
    finished: list[str] = []

    async def chunks(server: Server) -> AsyncIterator[bytes]:
        try:
            yield b"data: 1\n\n"
            asyncio.get_running_loop().call_soon(server.departure.leave)
            await asyncio.sleep(10)  # the upstream's next event, which never comes
            yield FinalEvents(b"data: [DONE]\n\n")
        except asyncio.CancelledError:
            finished.append("cancelled")
            raise

    async def scenario() -> tuple[Server, bool]:
        server = Server()
        await EventStream(chunks(server), {})(server.scope, server.receive, server.send)  # type: ignore[arg-type]
        task = asyncio.current_task()
        return server, task is not None and task.cancelling() > 0

    server, still_cancelling = asyncio.run(asyncio.wait_for(scenario(), 5))
    assert finished == ["cancelled"]
    assert server.bodies() == [(b"data: 1\n\n", True)]  # the body is not ended as if it were whole
    assert not still_cancelling


@pytest.mark.unit
def test_a_client_gone_before_the_stream_began_still_lets_the_generator_see_its_cancellation() -> None:
    """The server's send to a client already gone does not wait, so the generator starts and is cancelled at
    its first wait, where it meters the request (a 499), rather than never running at all."""
    finished: list[str] = []

    async def chunks() -> AsyncIterator[bytes]:
        try:
            yield b"data: 1\n\n"
            await asyncio.sleep(10)
            yield FinalEvents(b"data: [DONE]\n\n")
        except asyncio.CancelledError:
            finished.append("cancelled")
            raise

    async def scenario() -> Server:
        server = Server()
        server.departure.leave()
        await EventStream(chunks(), {})(server.scope, server.receive, server.send)  # type: ignore[arg-type]
        return server

    server = asyncio.run(asyncio.wait_for(scenario(), 5))
    assert finished == ["cancelled"]
    assert server.bodies() == [(b"data: 1\n\n", True)]


@pytest.mark.unit
def test_a_stream_that_goes_on_after_its_final_events_is_a_bug_that_surfaces() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield FinalEvents(b"data: [DONE]\n\n")
        yield b"data: late\n\n"

    async def scenario() -> None:
        server = Server()
        await EventStream(chunks(), {})(server.scope, server.receive, server.send)  # type: ignore[arg-type]

    with pytest.raises(RuntimeError, match="after its final events"):
        asyncio.run(scenario())
