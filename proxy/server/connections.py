"""The HTTP server's guard against clients that hold connections: deadlines, a cap, and quiet accept errors.

uvicorn bounds a kept-alive connection between requests (``timeout_keep_alive``)
but not a connection that never sends a request, nor one that sends its
request head or body one byte at a time (slowloris): every such socket is a
file descriptor held for ever, and past the process's limit no one can connect.
So: a request head must arrive within ``header_timeout_s`` of the connection
(or of the previous response), a body within ``body_timeout_s`` of its head
(else 408), and connections beyond ``max_connections`` are answered 503 and
closed at once. A head that spans reads may take ``MAX_HEAD_BYTES``, else
431. When the process still runs out of descriptors, the event loop's accept
errors are counted and logged at most once per interval instead of once per
attempt.

One client must not be able to take every place: a peer address holds at most
``per_client_connections`` of them, and ``reserved_connections`` places beyond
the cap serve only ``/health/*`` and ``/metrics``, one request each, so that an
orchestrator's probes and the metrics scrape still answer while the cap is
reached (a restart of a healthy but busy gateway helps no one). A peer at its
share may still open ``_PROBES_BEYOND_SHARE`` connections that serve those
paths alone (anything else there is answered 503): the probes may come from
the busy client's own address (the node's, where a load balancer's traffic is
source-NATed to it, or a proxy's), and then must not be refused with it.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import resource
import socket
from collections import Counter
from collections.abc import Callable
from typing import Any, cast

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from scoring import ThrottledLog

from ..base.errors import error_body
from ..config.settings import ServerSettings

__all__ = [
    "DEPARTURE",
    "BodyDeadline",
    "Departure",
    "GuardedHttpProtocol",
    "HeadWithBody",
    "guarded_protocol",
    "quiet_accept_errors",
    "raise_descriptor_limit",
    "server_options",
]

log = logging.getLogger("trustgate.server")

# What accept() fails with when the process or the system is out of descriptors or buffers.
_RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
# Descriptors the process needs besides client connections: the upstream pool (proxy.assembly) and files.
_OTHER_DESCRIPTORS = 1000 + 100


_AT_CAP = "The gateway is at its connection limit; retry later"
_PER_CLIENT = "This client holds as many connections as one client may; close one or retry later"
# Connections a peer at its share may still open for /health/* and /metrics (liveness and readiness at once).
_PROBES_BEYOND_SHARE = 2
# The most bytes a request head may take once it spans more than one read: h11's bound as uvicorn sets it, and
# Node's. llhttp, the parser, has none of its own, and httptools keeps a partial header line in memory.
MAX_HEAD_BYTES = 16 * 1024


def _answer_and_close(status: bytes, body: dict[str, Any], *extra_headers: bytes) -> bytes:
    """A whole HTTP response, written straight to a connection that is then closed."""
    content = orjson.dumps(body)
    head = b"".join(
        [
            b"HTTP/1.1 ",
            status,
            b"\r\ncontent-type: application/json\r\nconnection: close\r\n",
            *(header + b"\r\n" for header in extra_headers),
            b"content-length: ",
            str(len(content)).encode(),
            b"\r\n\r\n",
        ]
    )
    return head + content


def _refusal(message: str) -> bytes:
    return _answer_and_close(
        b"503 Service Unavailable", error_body(message, "api_error", code="too_many_connections"), b"retry-after: 1"
    )


_REFUSAL, _CLIENT_REFUSAL = _refusal(_AT_CAP), _refusal(_PER_CLIENT)
_HEAD_TOO_LARGE = _answer_and_close(
    b"431 Request Header Fields Too Large",
    error_body(
        f"The request head is larger than {MAX_HEAD_BYTES} bytes",
        "invalid_request_error",
        code="request_header_too_large",
    ),
)


DEPARTURE = "trustgate.departure"  # the scope key of a request's ``Departure``
BODY_RECEIVED = "trustgate.body_received"  # set in a request's scope once its whole body has arrived


class Departure:
    """A request's client leaving before its response is whole, as the server sees it (its connection lost).

    The protocol puts one in each request's scope, and calls back whoever
    waits on an answer for that client (``request_context.unless_client_leaves``):
    uvicorn only flags the request as disconnected, for a handler to find
    when it next reads the request, so a handler waiting on its upstream would
    otherwise need a task of its own reading for a disconnect.
    """

    __slots__ = ("_callback", "left")

    def __init__(self) -> None:
        self.left = False
        self._callback: Callable[[], object] | None = None

    def on_leave(self, callback: Callable[[], object] | None) -> None:
        """Call ``callback`` when the client leaves (None: no longer)."""
        self._callback = callback

    def leave(self) -> None:
        self.left = True
        if self._callback is not None:
            self._callback()


class HeadWithBody(asyncio.Transport):
    """A connection as one request's response cycle writes to it: the response head leaves with the body's first
    write, in one send(), rather than alone before it.

    uvicorn writes a response's head as soon as the app starts the response,
    and its body at the next message: two send() calls for a whole reply, each
    a system call that wakes the reader, where one does (``strace -c`` on the
    gateway under load: 3 sends per whole reply without this, 2 with it). A head
    with a ``content-length`` waits for its body's write, which an app sends
    right after it (or for the connection's close: a response cut short goes
    out as uvicorn wrote it). Any other head, a stream's, whose first event may come
    later, waits only until the end of the event loop's turn. Never held: an
    interim ``100 Continue``, which the client waits for before it sends its
    body, and the head of a response to ``HEAD``, which has no body to carry it.
    """

    __slots__ = ("_connection", "_head_due", "_held", "_loop")

    def __init__(self, connection: asyncio.Transport, loop: asyncio.AbstractEventLoop, method: str) -> None:
        super().__init__()
        self._connection = connection
        self._loop = loop
        self._head_due = method != "HEAD"  # the next write that is not an interim (1xx) response is the head
        self._held: bytes | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._held is not None:
            data, self._held = self._held + data, None
        elif self._head_due and not bytes(data[:10]).startswith(b"HTTP/1.1 1"):
            self._head_due, self._held = False, bytes(data)
            if b"\r\ncontent-length: " not in self._held:
                self._loop.call_soon(self._release)
            return
        self._connection.write(data)

    def _release(self) -> None:
        if self._held is not None:
            data, self._held = self._held, None
            if not self._connection.is_closing():
                self._connection.write(data)

    def close(self) -> None:
        self._release()
        self._connection.close()

    def is_closing(self) -> bool:
        return self._connection.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._connection.get_extra_info(name, default)


def _reserved_path(path: str) -> bool:
    return path.startswith("/health/") or path == "/metrics"


def _reserved_only(app: ASGIApp, refusal: str) -> ASGIApp:
    """``app`` for a connection in the reserve: probes and scrapes only, each on a connection closed after it;
    anything else is answered 503 with ``refusal``."""

    async def serve(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _reserved_path(scope["path"]):
            body = orjson.dumps(error_body(refusal, "api_error", code="too_many_connections"))
            await send(
                {
                    "type": "http.response.start",
                    "status": 503,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"connection", b"close"),
                        (b"retry-after", b"1"),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return

        async def send_closing(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)

        await app(scope, receive, send_closing)

    return serve


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a request-head deadline and size bound, a connection cap, a per-client
    share and a reserve.

    httptools (llhttp) rather than h11: the same gateway took 10–15% less CPU per request with it
    (``bench.gateway_ab``, BENCHMARKS.md), h11's parsing and response framing being pure Python.

    ``settings``, ``peers`` (connections held per peer address, for one
    server) and ``probing`` (the probe-only connections of peers at their
    share) are set by the subclass ``guarded_protocol`` makes.
    """

    settings: ServerSettings
    peers: Counter[str]
    probing: Counter[str]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_deadline: asyncio.TimerHandle | None = None
        self._head_bytes: int | None = None  # bytes read since the read a request head began in; None: no head due
        self._counted: Counter[str] | None = None  # where this connection's peer is counted: peers or probing
        self._peer: str | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        _without_nagle(transport)
        super().connection_made(transport)
        settings, peer = self.settings, self.client[0] if self.client else None
        at_share = peer is not None and self.peers[peer] >= settings.per_client_connections
        if len(self.connections) > settings.max_connections + settings.reserved_connections:
            refusal = _CLIENT_REFUSAL if at_share else _REFUSAL
        elif at_share and self.probing[peer or ""] >= _PROBES_BEYOND_SHARE:
            refusal = _CLIENT_REFUSAL
        else:
            if peer is not None:
                self._peer, self._counted = peer, self.probing if at_share else self.peers
                self._counted[peer] += 1
            if at_share:
                self.app = _reserved_only(self.app, _PER_CLIENT)
            elif len(self.connections) > settings.max_connections:
                self.app = _reserved_only(self.app, _AT_CAP)
            self._await_request_head()
            return
        transport.write(refusal)
        transport.close()

    def data_received(self, data: bytes) -> None:
        if self._head_bytes is not None:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._head_bytes is not None and self._head_bytes > MAX_HEAD_BYTES and not self.transport.is_closing():
            if self.cycle is None or self.cycle.response_complete:  # else a 431 would land inside a response
                self.transport.write(_HEAD_TOO_LARGE)
            self.transport.close()

    def on_message_begin(self) -> None:
        # Counting starts with the next read: a head that arrives in one read is bounded by the read's size.
        self._head_bytes = 0
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._head_bytes = None
        cycle_before = self.cycle
        super().on_headers_complete()
        cast(dict[str, Any], self.scope)[DEPARTURE] = Departure()  # the request's task, made just now, has not run
        if self.cycle is not cycle_before:  # a new request's cycle (not an upgrade): its writes, heads held back
            self.cycle.transport = HeadWithBody(self.transport, self.loop, self.scope["method"])

    def on_message_complete(self) -> None:
        super().on_message_complete()
        if self.cycle is not None:  # the body deadline is met: ``BodyDeadline`` need not time its reads
            cast(dict[str, Any], self.cycle.scope)[BODY_RECEIVED] = True

    def on_response_complete(self) -> None:
        self._await_request_head()  # before super(): it may start a pipelined request, which is in time
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
        if self._peer is not None and self._counted is not None:
            self._counted[self._peer] -= 1
            if not self._counted[self._peer]:
                del self._counted[self._peer]
            self._peer = self._counted = None
        departure = cast(dict[str, Any], self.cycle.scope).get(DEPARTURE) if self.cycle is not None else None
        if departure is not None and not self.cycle.response_complete:
            departure.leave()
        super().connection_lost(exc)

    def _await_request_head(self) -> None:
        """Close the connection unless a new request's head is complete within header_timeout_s."""
        if self._head_deadline is not None:
            self._head_deadline.cancel()
        self._head_deadline = self.loop.call_later(self.settings.header_timeout_s, self._head_overdue, self.cycle)

    def _head_overdue(self, cycle_before: object) -> None:
        if self.cycle is cycle_before and not self.transport.is_closing():
            self.transport.close()


def _without_nagle(transport: asyncio.BaseTransport) -> None:
    """Turn Nagle's algorithm off for a TCP connection, whoever made its listening socket.

    asyncio does it only for sockets that say IPPROTO_TCP, and a listening
    socket made as ``socket(AF_INET, SOCK_STREAM)`` (by a process manager that
    hands uvicorn its sockets, say) says 0, which its connections inherit. With
    Nagle on, each small write after the first waits for the client's delayed
    ACK: 40 ms on Linux for a stream's every event.
    """
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def guarded_protocol(settings: ServerSettings) -> type[GuardedHttpProtocol]:
    """The protocol class to give uvicorn (``http=``): uvicorn builds it, so the settings travel on the class."""
    return type(
        "GuardedHttpProtocol", (GuardedHttpProtocol,), {"settings": settings, "peers": Counter(), "probing": Counter()}
    )


class RequestBodyTimeout(Exception):
    """The client sent a request head and then not its whole body in time."""


class BodyDeadline:
    """ASGI middleware: the request body must arrive within ``timeout_s`` of the head, else 408 and close."""

    def __init__(self, app: ASGIApp, timeout_s: float) -> None:
        self.app = app
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        deadline = asyncio.get_running_loop().time() + self.timeout_s
        body_complete = False
        response_started = False

        async def receive_in_time() -> Message:
            nonlocal body_complete
            # Later receives wait for a disconnect, which may rightly take long; and a body the server has
            # whole already (``GuardedHttpProtocol``, nearly every request) is read without a timer.
            if body_complete or scope.get(BODY_RECEIVED):
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                raise RequestBodyTimeout from None
            body_complete = message["type"] != "http.request" or not message.get("more_body", False)
            return message

        async def send_tracked(message: Message) -> None:
            nonlocal response_started
            response_started = response_started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive_in_time, send_tracked)
        except RequestBodyTimeout:
            if response_started:
                raise
            body = orjson.dumps(
                error_body(
                    f"Request body not received within {self.timeout_s:g} s",
                    "invalid_request_error",
                    code="request_timeout",
                )
            )
            await send(
                {
                    "type": "http.response.start",
                    "status": 408,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"connection", b"close"),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})


def quiet_accept_errors(
    loop: asyncio.AbstractEventLoop, on_error: Callable[[], None], interval_s: float = 10.0
) -> Callable[[], None]:
    """Count the loop's out-of-resource accept errors and log them at most once per interval; returns an undo."""
    throttled = ThrottledLog(log, interval_s=interval_s)
    previous = loop.get_exception_handler()

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in _RESOURCE_ERRNOS:
            on_error()
            throttled.warning(
                "accept",
                "cannot accept connections: %s (raise the open-files limit or lower trustgate.server.max_connections)",
                exc.strerror or exc,
            )
        elif previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handle)
    return lambda: loop.set_exception_handler(previous)


def server_options(settings: ServerSettings) -> dict[str, Any]:
    """uvicorn's options for these settings: ``uvicorn.run(app, **server_options(settings))``."""
    return {"http": guarded_protocol(settings), "timeout_keep_alive": settings.keep_alive_s}


def raise_descriptor_limit(settings: ServerSettings) -> None:
    """Raise the open-files soft limit to what ``max_connections`` needs (up to the hard limit), or warn.

    Past the limit accept() fails; with the limit above the connection cap,
    connections beyond it are accepted and answered 503 instead.
    """
    needed = settings.max_connections + settings.reserved_connections + _OTHER_DESCRIPTORS
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        soft = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    if soft != resource.RLIM_INFINITY and soft < needed:
        log.warning(
            "the open-files limit (%d) is below what trustgate.server.max_connections (%d) needs (%d): "
            "raise `ulimit -n` or lower max_connections",
            soft,
            settings.max_connections,
            needed,
        )
