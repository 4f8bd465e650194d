"""What every handler reads first: the gateway of the app, and the request as the pipeline reads it.

``HttpIncoming`` is the HTTP side of ``pipeline.Incoming``: the headers, the
body within its size limit, and a guard that cancels an upstream call when the
client goes away.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping
from typing import TypeVar

from fastapi import Request

from .errors import ClientDisconnected, InvalidRequest
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
    ``call`` runs in the request's own task, and a watcher task cancels that task
    when the client leaves: one task per request rather than one for the call
    too, and no ``asyncio.wait`` (their share of a request's CPU, issue 32).
    """
    task = asyncio.current_task()
    assert task is not None, "called outside a task"
    gone = False

    async def watch() -> None:
        nonlocal gone
        await _client_gone(request)
        gone = True
        task.cancel()

    watcher = asyncio.ensure_future(watch())
    try:
        return await call
    except BaseException:
        if not gone or task.uncancel() > 0:  # not the watcher's cancel, or another one is pending too
            raise
        raise ClientDisconnected("The client closed the connection before the answer was ready",
                                 code="client_disconnected") from None
    finally:
        watcher.cancel()


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
