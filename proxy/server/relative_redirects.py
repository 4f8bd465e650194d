"""The gateway's own redirects point at a path on the same origin, never at a host the client named.

Starlette answers ``GET /v1/trust/`` with a redirect to ``/v1/trust`` built
from the request's ``Host`` header, so a request carrying ``Host: evil.example``
(through a cache or a proxy that keeps the header) is sent to
``http://evil.example/v1/trust``. This ASGI middleware rewrites the
``location`` of every redirect the app answers to the path and query alone;
leading slashes collapse to one, so ``//evil.example`` cannot turn the path
into another host.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["RelativeRedirects", "same_origin_location"]


def same_origin_location(location: str) -> str:
    """``location`` as a path (and query) on this origin: ``http://evil.example//x?a=1`` -> ``/x?a=1``."""
    parts = urlsplit(location)
    path = "/" + parts.path.lstrip("/\\")
    return f"{path}?{parts.query}" if parts.query else path


class RelativeRedirects:
    """ASGI middleware: a 3xx answer's ``location`` header becomes ``same_origin_location`` of itself."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_relative(message: Message) -> None:
            if message["type"] == "http.response.start" and 300 <= message["status"] < 400:
                message["headers"] = [
                    (
                        name,
                        same_origin_location(value.decode("latin-1")).encode("latin-1")
                        if name.lower() == b"location"
                        else value,
                    )
                    for name, value in message["headers"]
                ]
            await send(message)

        await self.app(scope, receive, send_relative)
