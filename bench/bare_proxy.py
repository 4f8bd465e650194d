"""The least a proxy on TrustGate's stack does: a bare ASGI app that posts each request on with one aiohttp session.

Served by uvicorn on httptools and asyncio, as ``trustgate serve`` is, it reads the body,
forwards it to ``BARE_PROXY_UPSTREAM`` and writes the answer back: whole, or (for a
streamed request) each upstream read as it arrives. No keys, limits, validation,
routing, retries, metrics or framework: what is left of a proxy's cost is the hop
itself on this server and client. ``bench.proxy_floor`` measures it beside the direct
upstream and TrustGate, so that a throughput target can be read against what any proxy
on this stack reaches on the machine at hand.
"""

from __future__ import annotations

import json
import os

import aiohttp
from starlette.types import Receive, Scope, Send

UPSTREAM_VARIABLE = "BARE_PROXY_UPSTREAM"


class BareProxy:
    """The ASGI app; ``upstream`` is the base URL the chat completions go to."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.session: aiohttp.ClientSession | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["path"] == "/v1/chat/completions":
            await self._forward(receive, send)
        else:  # the readiness probe
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1000, keepalive_timeout=30))
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.session is not None:
                    await self.session.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _forward(self, receive: Receive, send: Send) -> None:
        assert self.session is not None, "served without its lifespan"
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        streamed = json.loads(body).get("stream") is True
        async with self.session.post(
            f"{self.upstream}/v1/chat/completions", data=body, headers={"content-type": "application/json"}
        ) as response:
            kind = response.headers.get("content-type", "application/json").encode()
            await send({"type": "http.response.start", "status": response.status, "headers": [(b"content-type", kind)]})
            if not streamed:
                await send({"type": "http.response.body", "body": await response.read()})
                return
            async for chunk in response.content.iter_any():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})


def app() -> BareProxy:
    """The app for ``uvicorn --factory bench.bare_proxy:app``, forwarding to ``$BARE_PROXY_UPSTREAM``."""
    return BareProxy(os.environ[UPSTREAM_VARIABLE])
