"""What every handler reads first: the gateway of the app, and the request body within its size limit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import Request

from .errors import InvalidRequest

if TYPE_CHECKING:
    from .app import Gateway

__all__ = ["gateway_of", "read_body"]


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
