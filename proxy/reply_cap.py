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
A capped call asks for its reply uncompressed: the cap counts bytes on the
wire, and a compressed reply far under it could still decode to many times it.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import cast

import httpx

__all__ = ["CappedTransport", "ReplyCap", "ReplyTooLarge", "capped"]


@dataclass
class ReplyCap:
    """One call's limit, and whether a reply of that call went past it."""

    limit: int
    exceeded: bool = False


class ReplyTooLarge(httpx.ReadError):
    """A body went past its call's cap: the read is aborted and the connection dropped."""


_current: ContextVar[ReplyCap | None] = ContextVar("trustgate_reply_cap", default=None)


@contextlib.contextmanager
def capped(limit: int) -> Iterator[ReplyCap]:
    """Hold the replies of the upstream calls made inside the block to ``limit`` bytes each."""
    cap = ReplyCap(limit)
    token = _current.set(cap)
    try:
        yield cap
    finally:
        _current.reset(token)


class _CappedBody(httpx.AsyncByteStream):
    def __init__(self, body: httpx.AsyncByteStream, cap: ReplyCap) -> None:
        self._body = body
        self._cap = cap

    async def __aiter__(self) -> AsyncIterator[bytes]:
        total = 0
        async for part in self._body:
            total += len(part)
            if total > self._cap.limit:
                self._cap.exceeded = True
                raise ReplyTooLarge(f"upstream reply over {self._cap.limit} bytes")
            yield part

    async def aclose(self) -> None:
        await self._body.aclose()


class CappedTransport(httpx.AsyncBaseTransport):
    """httpx's own transport, one per event loop, with each reply held to its call's ``ReplyCap``.

    litellm's session outlives any one event loop (each gateway in a test
    process runs its own), and pooled connections belong to the loop that
    opened them; so each loop gets its own pool.
    """

    def __init__(self) -> None:
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncHTTPTransport] = (
            weakref.WeakKeyDictionary())

    def _pool(self) -> httpx.AsyncHTTPTransport:
        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is None:
            pool = self._pools[loop] = httpx.AsyncHTTPTransport()
        return pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        cap = _current.get()
        if cap is not None:
            request.headers["accept-encoding"] = "identity"  # compressed, the bytes counted are not those held
        response = await self._pool().handle_async_request(request)
        if cap is None:
            return response
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap.limit:
            await response.aclose()
            cap.exceeded = True
            raise ReplyTooLarge(f"upstream reply of {declared} bytes, over {cap.limit}")
        body = cast(httpx.AsyncByteStream, response.stream)  # what httpx's own transport answers with
        return httpx.Response(response.status_code, headers=response.headers,
                              stream=_CappedBody(body, cap), extensions=response.extensions)

    async def close_loop_pool(self) -> None:
        """Close the running loop's connections (a backend shutting down); a later call opens new ones."""
        pool = self._pools.pop(asyncio.get_running_loop(), None)
        if pool is not None:
            await pool.aclose()

    async def aclose(self) -> None:
        await self.close_loop_pool()
