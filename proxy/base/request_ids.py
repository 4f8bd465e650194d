"""Request correlation: every request has an ``x-request-id``, the client's or one the gateway makes.

A client (or a proxy in front) that sends ``x-request-id`` gets it back; one
that does not gets a fresh ``req_…`` id, as OpenAI's API returns one (the
OpenAI SDK reads it into ``_request_id``). The id is bounded — 1 to 128 of
``A-Z a-z 0-9 . _ : -`` — because it is echoed in a header and written to logs
and records: anything else is a 400 in OpenAI's error shape, before any work.

The middleware puts the id into the request's headers (so handlers, the trust
plan and the request span read it as they read any header), on the response
(every one: streams, errors and preflights too), and in a context variable
that every log line written while serving the request carries (``log_format``).
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Callable, Iterable

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from scoring.request_context import NO_REQUEST, current_request_id

from .errors import error_body

__all__ = ["REQUEST_ID_HEADER", "RequestIds", "current_request_id", "request_id_headers", "valid_request_id"]

REQUEST_ID_HEADER = "x-request-id"
_HEADER_NAME = REQUEST_ID_HEADER.encode()
_VALID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def valid_request_id(value: str) -> bool:
    return _VALID.match(value) is not None


def request_id_headers() -> dict[str, str]:
    """The current request's id as a response header, for responses built outside the middleware (a 500)."""
    request_id = current_request_id.get()
    return {REQUEST_ID_HEADER: request_id} if request_id != NO_REQUEST else {}


def _rejection(request_id: str) -> list[Message]:
    body = orjson.dumps(
        error_body(
            f"{REQUEST_ID_HEADER} must be 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'",
            "invalid_request_error",
            param=REQUEST_ID_HEADER,
            code="invalid_request_id",
        )
    )
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (REQUEST_ID_HEADER.encode(), request_id.encode()),
    ]
    return [
        {"type": "http.response.start", "status": 400, "headers": headers},
        {"type": "http.response.body", "body": body},
    ]


class RequestIds:
    """ASGI middleware: accept or make the request's id, and return it on the response.

    ``on_rejected`` counts a request refused for its malformed id (it never reaches a handler that would).
    """

    def __init__(self, app: ASGIApp, on_rejected: Callable[[], None] = lambda: None) -> None:
        self.app = app
        self.on_rejected = on_rejected

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = _first_value(scope["headers"])
        request_id = sent if sent is not None and valid_request_id(sent) else new_request_id()
        current_request_id.set(request_id)
        if sent is not None and sent != request_id:
            self.on_rejected()
            for message in _rejection(request_id):
                await send(message)
            return
        header = (_HEADER_NAME, request_id.encode())
        if sent is None:
            scope["headers"] = [*scope["headers"], header]

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*(item for item in message.get("headers", ()) if item[0] != _HEADER_NAME), header]
            await send(message)

        await self.app(scope, receive, send_with_id)


# Seeded from the system's randomness, and again in a forked child (as ``random``'s own is); its own, so that
# whoever seeds ``random``'s shared generator does not make the ids of two runs alike.
_IDS = random.Random()
os.register_at_fork(after_in_child=_IDS.seed)


def new_request_id() -> str:
    """A fresh ``req_`` id of 128 random bits. An id correlates a request's lines and records and grants
    nothing, so it need not be unguessable: a system call for every request (``secrets``) would buy nothing."""
    return f"req_{_IDS.getrandbits(128):032x}"


def _first_value(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The request's first ``x-request-id``, read as every header is (``Headers.get``): latin-1."""
    for name, value in headers:
        if name == _HEADER_NAME:
            return value.decode("latin-1")
    return None
