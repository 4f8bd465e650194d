"""What every handler reads first: the gateway of the app, and the request as the pipeline reads it.

``HttpIncoming`` is the HTTP side of ``pipeline.Incoming``: the headers, the
body within its size limit, and a guard that cancels an upstream call when the
client goes away.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Mapping
from typing import TypeVar

from fastapi import Request

from ..base.errors import ClientDisconnected, InvalidRequest
from .connections import DEPARTURE, Departure
from .gateway import Gateway

__all__ = ["HttpIncoming", "gateway_of", "read_body", "unless_client_leaves"]

T = TypeVar("T")


def gateway_of(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway


async def read_body(request: Request, limit: int) -> bytes:
    """The request's body, at most ``limit`` bytes (more is a 413); a client that leaves before it is whole is a
    499 (``ClientDisconnected``), not a server error.

    Read once, from the server's messages themselves: Starlette's ``Request.stream`` is an async generator
    per request, and raises its own ``ClientDisconnect``, which nothing answers.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    parts: list[bytes] = []
    size = 0
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnected(
                "The client closed the connection before its request's body arrived", code="client_disconnected"
            )
        part: bytes = message.get("body", b"")
        size += len(part)
        if size > limit:
            raise _too_large(limit)
        if not message.get("more_body", False):
            return b"".join([*parts, part]) if parts else part
        parts.append(part)


def _too_large(limit: int) -> InvalidRequest:
    return InvalidRequest(f"Request body exceeds {limit} bytes", code="body_too_large", status_code=413)


async def unless_client_leaves(request: Request, call: Awaitable[T]) -> T:
    """``call``'s result; if the client disconnects first, ``call`` is cancelled (closing its upstream call).

    uvicorn does not cancel a handler whose client went away, so without this an
    abandoned non-streamed request would hold its upstream call until the timeout.
    ``call`` runs in the request's own task, which the server's ``Departure``
    cancels when the client leaves: no task beside it reading for a disconnect
    (with the call in a task of its own too, about 20 µs of the gateway's CPU
    per request; BENCHMARKS.md). A server that reports no departure
    (an in-process transport, which has no connection to lose) just runs the call.
    """
    departure: Departure | None = request.scope.get(DEPARTURE)
    if departure is None:
        return await call
    if departure.left:  # gone before the call began: it is not made
        if inspect.iscoroutine(call):
            call.close()
        raise _disconnected()
    task = asyncio.current_task()
    assert task is not None, "called outside a task"
    departure.on_leave(task.cancel)
    try:
        return await call
    except BaseException:
        if not departure.left or task.uncancel() > 0:  # not the departure's cancel, or another one is pending
            raise
        raise _disconnected() from None
    finally:
        departure.on_leave(None)


def _disconnected() -> ClientDisconnected:
    return ClientDisconnected(
        "The client closed the connection before the answer was ready", code="client_disconnected"
    )


class HttpIncoming:
    """An HTTP request as the pipeline reads it (``pipeline.Incoming``)."""

    def __init__(self, request: Request) -> None:
        self._request = request
        # Read as a dict: the pipeline looks up a handful of headers, most of them absent, and Starlette's
        # ``Headers`` scans the list and raises for each miss. A repeated header reads as its first value,
        # as there.
        self._headers = {
            name.decode("latin-1"): value.decode("latin-1") for name, value in reversed(request.scope["headers"])
        }

    @property
    def headers(self) -> Mapping[str, str]:
        return self._headers

    async def body(self, limit: int) -> bytes:
        return await read_body(self._request, limit)

    async def unless_client_leaves(self, call: Awaitable[T]) -> T:
        return await unless_client_leaves(self._request, call)
