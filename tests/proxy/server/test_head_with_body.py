"""A response's head leaves with its body in one write (``connections.HeadWithBody``), and is never held where
a client waits for it.

The gateway's own protocol is driven as asyncio drives it, with a transport
that records each write: every write is one send() on a real connection, so
the number of writes is what the client sees. (Every HTTP test of the suite
goes through the same protocol over real sockets.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import uvicorn
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send
from uvicorn.server import ServerState

from proxy.config.settings import ServerSettings
from proxy.server.connections import guarded_protocol

pytestmark = pytest.mark.unit

App = Callable[[Scope, Receive, Send], Awaitable[None]]


class RecordingTransport(asyncio.Transport):
    """A connection that keeps what is written to it, a write per entry."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if data:  # as asyncio's socket transport: an empty write sends nothing
            self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 4000)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def connected(app: App) -> tuple[asyncio.Protocol, RecordingTransport]:
    """The gateway's protocol serving ``app`` on a new connection (in a running loop), and that connection."""
    config = uvicorn.Config(app=app, log_level="warning")
    config.load()
    protocol = guarded_protocol(ServerSettings())(config=config, server_state=ServerState(), app_state={})
    transport = RecordingTransport()
    protocol.connection_made(transport)
    return protocol, transport


async def served(app: App, *requests: bytes) -> RecordingTransport:
    """Feed ``requests`` (byte strings, each a read) to the gateway's protocol serving ``app``; its writes."""
    protocol, transport = connected(app)
    for data in requests:
        protocol.data_received(data)
        await asyncio.sleep(0.05)
    protocol.connection_lost(None)
    return transport


def request(method: str = "GET", *headers: bytes) -> bytes:
    """A request head with no body of its own (a body, if ``headers`` announce one, is fed as a later read)."""
    return b"\r\n".join([f"{method} / HTTP/1.1".encode(), b"host: gateway", *headers]) + b"\r\n\r\n"


async def whole(scope: Scope, receive: Receive, send: Send) -> None:
    await JSONResponse({"answer": "whole"})(scope, receive, send)


def test_a_whole_response_is_one_write() -> None:
    writes = asyncio.run(served(whole, request())).writes
    assert len(writes) == 1, writes
    head, _, body = writes[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"content-length: 18" in head and body == b'{"answer":"whole"}'


def test_kept_alive_requests_each_get_one_write() -> None:
    writes = asyncio.run(served(whole, request(), request(), request())).writes
    assert [w.count(b"HTTP/1.1 200") for w in writes] == [1, 1, 1]
    assert all(w.endswith(b'{"answer":"whole"}') for w in writes)


def test_the_head_of_a_response_to_head_is_written_though_no_body_follows() -> None:
    writes = asyncio.run(served(whole, request("HEAD"), request("HEAD"))).writes
    assert len(writes) == 2 and all(w.startswith(b"HTTP/1.1 200") and w.endswith(b"\r\n\r\n") for w in writes)


def test_100_continue_goes_out_before_the_body_and_the_answer_after_it() -> None:
    async def echo(scope: Scope, receive: Receive, send: Send) -> None:
        message = await receive()
        await JSONResponse({"got": message["body"].decode()})(scope, receive, send)

    head = request("POST", b"content-length: 5", b"expect: 100-continue")
    writes = asyncio.run(served(echo, head, b"hello")).writes
    assert writes[0] == b"HTTP/1.1 100 Continue\r\n\r\n"  # before the body was sent: the client waits for it
    assert len(writes) == 2 and writes[1].startswith(b"HTTP/1.1 200") and writes[1].endswith(b'{"got":"hello"}')


def stream(first_event_after_s: float) -> App:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        if first_event_after_s:
            await asyncio.sleep(first_event_after_s)
        await send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
        await send({"type": "http.response.body", "body": b"data: 2\n\n", "more_body": False})

    return app


def test_a_streams_head_waits_for_its_first_event_only_within_the_same_turn() -> None:
    writes = asyncio.run(served(stream(first_event_after_s=0), request())).writes
    assert len(writes) == 2 and writes[0].startswith(b"HTTP/1.1 200") and writes[0].endswith(b"data: 1\n\n\r\n")

    async def late_event() -> tuple[list[bytes], list[bytes]]:
        protocol, transport = connected(stream(first_event_after_s=0.3))
        protocol.data_received(request())
        await asyncio.sleep(0.1)  # the app waits for its first event
        before_it = list(transport.writes)
        await asyncio.sleep(0.4)
        return before_it, transport.writes

    before_event, writes = asyncio.run(late_event())
    assert len(before_event) == 1 and before_event[0].startswith(b"HTTP/1.1 200")  # the head alone, at once
    assert before_event[0].endswith(b"\r\n\r\n") and len(writes) == 3 and b"data: 1" in writes[1]


def test_a_response_cut_short_after_its_head_still_sends_the_head_then_closes() -> None:
    async def broken(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"10")]})
        raise RuntimeError("the app failed after its head")

    transport = asyncio.run(served(broken, request()))
    assert len(transport.writes) == 1 and transport.writes[0].startswith(b"HTTP/1.1 200")
    assert transport.closed
