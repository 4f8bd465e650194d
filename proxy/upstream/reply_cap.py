"""A byte cap on the replies litellm reads, enforced as each body streams in.

litellm reads a whole reply before handing it back, so a cap checked on what
it returns bounds what a client sees but not the gateway's memory: a 50 MB
reply would be held (and parsed) whole first. ``CappedTransport`` is the httpx
transport under the client litellm's OpenAI-SDK providers use
(``litellm.aclient_session``); it counts each body's bytes as they arrive and
aborts the read past the cap of the call in progress.

The cap is per call, not per client: litellm's session is one object for the
process, while each gateway has its own ``max_response_bytes``. A call opens a
``ReplyCap`` with ``capped(limit)``; the transport reads it from the calling
context when the request is sent, so the body of that response — read now or
streamed later — is held to that call's cap. The cap records that it tripped,
because litellm wraps whatever the transport raised in its own error types.

The transport is also where litellm's replies are held to the rules the
pass-through path applies itself (``passthrough``): a body that came
compressed anyway is decoded with its *decoded* size bounded
(``content_decoding``; an unknown coding is refused), and a redirect is
refused or kept to its origin (``redirects``), a stream must come as one
of the stream types providers use (an HTML page is not one) and, in the
OpenAI or Anthropic wire format, as server-sent events that open with an
event of that format's shape (``replies.check_stream_start``): litellm reads a
chunk of nulls, a JSON body or a stream without events as an empty, successful
answer. An upstream's cookies are dropped before litellm's client could keep them. litellm builds the HTTP clients
of the providers it does not reach through the OpenAI SDK (``anthropic/``, ...)
itself, with its own transport; ``litellm_backend`` has them built on this one.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import cast

import httpx

from ..base.sdk_params import Endpoint
from .content_decoding import BoundedDecoder, DecodedTooLarge, UnsupportedEncoding, bounded_body, decoder_for
from .redirects import CREDENTIAL_HEADERS, RedirectRefused, check_redirect
from .replies import MalformedReply, check_stream_start, media_type
from .sse import FirstEventReader

__all__ = [
    "CappedTransport",
    "MalformedStream",
    "NotAStream",
    "ReplyCap",
    "ReplyTooLarge",
    "UndecodableReply",
    "capped",
]


@dataclass
class ReplyCap:
    """One call's limit and redirect rule, and what went wrong with a reply of that call, if anything."""

    limit: int
    follow_redirects: bool = False  # same-origin redirects only, without credentials (``redirects``)
    followed: set[str] = field(default_factory=set)  # the URLs redirected to: asked without credentials
    stream: bool = False  # a 2xx must then be one of the providers' stream types
    exceeded: bool = False
    redirected: bool = False
    undecodable: bool = False
    not_a_stream: str | None = None  # the media type a stream was answered with instead
    malformed: str | None = None  # why a stream's first event is not of its wire format's shape


class ReplyTooLarge(httpx.ReadError):
    """A body went past its call's cap: the read is aborted and the connection dropped."""


class UndecodableReply(httpx.DecodingError):
    """A body in a content coding the gateway does not decode (or corrupt in one it does)."""


class NotAStream(httpx.DecodingError):
    """A stream answered with a body that is no stream (an HTML page, say)."""


class MalformedStream(httpx.DecodingError):
    """A server-sent event stream whose first event is not of the shape its wire format's events have."""


# The wire formats whose events are known, by the path a request went to (Azure's and OpenAI's alike), and the
# endpoint whose first-event shape they share: OpenAI's chunks carry choices; Responses' and Anthropic's Messages
# events are typed. Other providers' streams are held to their media type alone.
_WIRE_FORMATS: tuple[tuple[str, Endpoint], ...] = (
    ("/chat/completions", "chat"),
    ("/completions", "completions"),
    ("/responses", "responses"),
    ("/messages", "responses"),
)


def _wire_format(path: str) -> Endpoint | None:
    return next((endpoint for suffix, endpoint in _WIRE_FORMATS if path.endswith(suffix)), None)


# What the providers litellm reaches stream as: server-sent events (OpenAI, Azure, Anthropic, ...),
# newline-delimited JSON (Ollama's own API, Cohere's older one), AWS's event stream (Bedrock), a JSON
# array (Gemini without SSE).
_STREAM_TYPES = frozenset(
    {
        "text/event-stream",
        "application/x-ndjson",
        "application/stream+json",
        "application/vnd.amazon.eventstream",
        "application/json",
    }
)


_current: ContextVar[ReplyCap | None] = ContextVar("trustgate_reply_cap", default=None)


@contextlib.contextmanager
def capped(limit: int, *, follow_redirects: bool = False, stream: bool = False) -> Iterator[ReplyCap]:
    """Hold the replies of the upstream calls made inside the block to ``limit`` (decoded) bytes each."""
    cap = ReplyCap(limit, follow_redirects=follow_redirects, stream=stream)
    token = _current.set(cap)
    try:
        yield cap
    finally:
        _current.reset(token)


class _CappedBody(httpx.AsyncByteStream):
    """The body as it arrives, decoded, with both what crossed the wire and what it decodes to held to the cap."""

    def __init__(self, body: httpx.AsyncByteStream, cap: ReplyCap, decoder: BoundedDecoder) -> None:
        self._body = body
        self._cap = cap
        self._decoder = decoder

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for piece in bounded_body(self._body, self._decoder, self._cap.limit):
                yield piece
        except DecodedTooLarge as exc:
            self._cap.exceeded = True
            raise ReplyTooLarge(str(exc)) from exc
        except UnsupportedEncoding as exc:
            self._cap.undecodable = True
            raise UndecodableReply(str(exc)) from exc

    async def aclose(self) -> None:
        await self._body.aclose()


class _CheckedStart(httpx.AsyncByteStream):
    """An event stream held back until its first event is read and found of ``endpoint``'s shape, then as it is;
    one that ends before its first event is malformed.

    What is held is already bounded by the cap (``_CappedBody`` beneath).
    """

    def __init__(self, body: httpx.AsyncByteStream, endpoint: Endpoint, cap: ReplyCap) -> None:
        self._body = body
        self._endpoint = endpoint
        self._cap = cap

    async def __aiter__(self) -> AsyncIterator[bytes]:
        held: list[bytes] = []
        first_event = FirstEventReader()
        checked = False
        async for piece in self._body:
            if checked:
                yield piece
                continue
            held.append(piece)
            data = first_event.feed(piece)
            if data is None:
                continue
            try:
                check_stream_start(data, self._endpoint)
            except MalformedReply as exc:
                self._cap.malformed = str(exc)
                raise MalformedStream(str(exc)) from exc
            checked = True
            yield b"".join(held)
        if not checked:  # litellm would read no event as an empty answer, and make up its final chunk
            self._cap.malformed = "the stream ended before its first event"
            raise MalformedStream(self._cap.malformed)

    async def aclose(self) -> None:
        await self._body.aclose()


class CappedTransport(httpx.AsyncBaseTransport):
    """httpx's own transport, one per event loop, with each reply held to its call's ``ReplyCap``.

    litellm's session outlives any one event loop (each gateway in a test
    process runs its own), and pooled connections belong to the loop that
    opened them; so each loop gets its own pool. A request made outside a
    capped call still asks for identity encoding and has its redirects refused.
    """

    def __init__(self) -> None:
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncHTTPTransport] = (
            weakref.WeakKeyDictionary()
        )

    def _pool(self) -> httpx.AsyncHTTPTransport:
        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is None:
            pool = self._pools[loop] = httpx.AsyncHTTPTransport()
        return pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        cap = _current.get()
        request.headers["accept-encoding"] = "identity"  # compressed, the bytes counted are not those held
        if cap is not None and str(request.url) in cap.followed:  # httpx keeps same-origin credentials: dropped
            for name in CREDENTIAL_HEADERS:
                request.headers.pop(name, None)
        response = await self._pool().handle_async_request(request)
        if "set-cookie" in response.headers:  # litellm's clients keep a jar: one caller's cookie must not
            del response.headers["set-cookie"]  # ride on the next caller's request
        try:
            target = check_redirect(request, response, follow=cap is not None and cap.follow_redirects)
        except RedirectRefused:
            await response.aclose()
            if cap is not None:
                cap.redirected = True
            raise
        if cap is None:
            return response
        if target is not None:
            cap.followed.add(str(httpx.URL(target)))  # as httpx will write the request's url
        kind = media_type(response.headers.get("content-type"))
        wire_format = _wire_format(request.url.path)
        # A known wire format streams only as server-sent events (as the pass-through path requires): litellm
        # would read a JSON body answered to a stream as no events and make up a final chunk for it.
        streams_as = _STREAM_TYPES if wire_format is None else {"text/event-stream"}
        if cap.stream and response.is_success and kind not in streams_as:
            await response.aclose()
            cap.not_a_stream = kind
            raise NotAStream(f"a stream answered as {kind!r}")
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap.limit:
            await response.aclose()
            cap.exceeded = True
            raise ReplyTooLarge(f"upstream reply of {declared} bytes, over {cap.limit}")
        try:
            decoder = decoder_for(response.headers.get("content-encoding"), cap.limit)
        except UnsupportedEncoding as exc:
            await response.aclose()
            cap.undecodable = True
            raise UndecodableReply(str(exc)) from exc
        headers = httpx.Headers(response.headers)
        if "content-encoding" in headers:  # decoded here: the client above must not decode it again
            del headers["content-encoding"]
            headers.pop("content-length", None)
        body = cast(httpx.AsyncByteStream, response.stream)  # what httpx's own transport answers with
        stream: httpx.AsyncByteStream = _CappedBody(body, cap, decoder)
        if cap.stream and response.is_success and wire_format is not None:
            stream = _CheckedStart(stream, wire_format, cap)
        return httpx.Response(response.status_code, headers=headers, stream=stream, extensions=response.extensions)

    async def close_loop_pool(self) -> None:
        """Close the running loop's connections (a backend shutting down); a later call opens new ones."""
        pool = self._pools.pop(asyncio.get_running_loop(), None)
        if pool is not None:
            await pool.aclose()

    async def aclose(self) -> None:
        """Nothing: the transport is shared by clients litellm builds and drops (its cache closes them when they
        expire) while other calls still use its pools, which close with the backend (``close_loop_pool``)."""
