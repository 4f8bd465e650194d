"""The id of the request being served, for every log line written while serving it.

A context variable, not a logger adapter: the lines that matter come from code
that knows nothing of the request (litellm's Router, uvicorn's access log, a
scorer's failure), and each request runs in its own asyncio task, whose context
is its own copy. ``RequestIdMiddleware`` is pure ASGI (Starlette's
``BaseHTTPMiddleware`` would keep the value from reaching the app) and binds
the id before anything else runs: the client's ``x-request-id`` when it is a
plain token, else a fresh one. The log formatter reads ``current_request_id``.
"""

from __future__ import annotations

import re
import uuid
from contextvars import ContextVar

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["REQUEST_ID_HEADER", "RequestIdMiddleware", "current_request_id", "request_id_from"]

REQUEST_ID_HEADER = b"x-request-id"
# A client's id goes into every line of its request's log: bounded, and no characters that could forge a line.
_PLAIN_ID = re.compile(rb"^[A-Za-z0-9._:-]{1,128}$")

_request_id: ContextVar[str | None] = ContextVar("trustgate_request_id", default=None)


def current_request_id() -> str | None:
    """The id of the request this code runs for; None outside a request (start-up, the scoring queue)."""
    return _request_id.get()


def request_id_from(headers: list[tuple[bytes, bytes]]) -> str:
    """The client's ``x-request-id`` if it is a plain token, else a new id."""
    for name, value in headers:
        if name.lower() == REQUEST_ID_HEADER and _PLAIN_ID.match(value):
            return value.decode("ascii")
    return uuid.uuid4().hex


class RequestIdMiddleware:
    """Binds the request id for the whole of an HTTP request, the access log line included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = _request_id.set(request_id_from(scope["headers"]))
        try:
            await self.app(scope, receive, send)
        finally:
            _request_id.reset(token)
