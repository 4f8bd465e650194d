"""What every handler reads first: the gateway of the app, and the request as the pipeline reads it.

``HttpIncoming`` is the HTTP side of ``pipeline.Incoming``: the headers, the
body within its size limit, and a guard that cancels an upstream call when the
client goes away.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Mapping
from typing import TypeVar

from fastapi import Request

from .errors import ClientDisconnected, GatewayError, InvalidRequest
from .gateway import Gateway

__all__ = ["HttpIncoming", "gateway_of", "read_body", "unless_client_leaves"]

T = TypeVar("T")


def gateway_of(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise InvalidRequest(f"Request body exceeds {limit} bytes", code="body_too_large", status_code=413)
    body = bytearray()
    async for part in request.stream():
        body += part
        if len(body) > limit:
            raise InvalidRequest(f"Request body exceeds {limit} bytes", code="body_too_large", status_code=413)
    return bytes(body)


async def unless_client_leaves(request: Request, call: Awaitable[T]) -> T:
    """``call``'s result; if the client disconnects first, ``call`` is cancelled (closing its upstream call).

    uvicorn does not cancel a handler whose client went away, so without this an
    abandoned non-streamed request would hold its upstream call until the timeout.
    """
    work = asyncio.ensure_future(call)
    watcher = asyncio.ensure_future(_client_gone(request))
    try:
        await asyncio.wait((work, watcher), return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        work.cancel()
        raise
    finally:
        watcher.cancel()
    if work.done():
        return work.result()
    work.cancel()
    with contextlib.suppress(asyncio.CancelledError, GatewayError):
        await work
    raise ClientDisconnected("The client closed the connection before the answer was ready",
                             code="client_disconnected")


async def _client_gone(request: Request) -> None:
    """Returns when the client disconnects (the body has been read already, so nothing else arrives)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


class HttpIncoming:
    """An HTTP request as the pipeline reads it (``pipeline.Incoming``)."""

    def __init__(self, request: Request) -> None:
        self._request = request

    @property
    def headers(self) -> Mapping[str, str]:
        return self._request.headers

    async def body(self, limit: int) -> bytes:
        return await read_body(self._request, limit)

    async def unless_client_leaves(self, call: Awaitable[T]) -> T:
        return await unless_client_leaves(self._request, call)
