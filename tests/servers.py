"""Run an ASGI app on a real loopback socket, in a background thread, for tests and benchmarks."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn


class ServerThread:
    """uvicorn on 127.0.0.1:<free port>; ``url`` is ready once ``start()`` returns."""

    def __init__(self, app: Any, *, lifespan: str = "on", port: int = 0, **options: Any) -> None:
        """``options`` go to ``uvicorn.Config`` (the gateway's: ``proxy.server.connections.server_options``);
        ``port`` 0 is any free one, another the address a config already names."""
        # IPPROTO_TCP, not 0: accepted connections inherit it, and asyncio turns Nagle's algorithm off
        # (TCP_NODELAY) only for sockets that say TCP; with it on, a response written as head then body
        # waited for the client's delayed ACK, 40 ms on every kept-alive request after the first.
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", port))
        self.port = self._socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, log_level="warning", lifespan=lifespan, access_log=False, **options)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True)

    def start(self, timeout: float = 30.0) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=15)
        self._socket.close()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
