"""Serve an ASGI app on a free loopback port inside the running event loop, for as long as a block runs.

``trustgate eval replay`` runs a real gateway (and, for the scripted model, its
upstream) beside the client that drives it: each is uvicorn on a socket bound
to port 0, so nothing collides with a gateway already running on the machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import uvicorn

__all__ = ["free_port", "serve_app"]

START_TIMEOUT_S = 600.0  # a gateway that starts the local model and loads the scorers' assets takes a while


def free_port() -> int:
    """A loopback port free now (for a server that binds its own socket: the embedded model server)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.asynccontextmanager
async def serve_app(app: Any) -> AsyncIterator[str]:
    """The app's base URL while the block runs; its lifespan runs on entry and exit."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[listener]))
    try:
        async with asyncio.timeout(START_TIMEOUT_S):
            while not server.started:
                if task.done():
                    await task
                    raise RuntimeError("the server stopped while starting")
                await asyncio.sleep(0.05)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        server.should_exit = True
        with contextlib.suppress(Exception):
            await task
        listener.close()
