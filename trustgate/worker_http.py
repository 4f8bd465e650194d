"""The worker's own HTTP endpoints: ``/metrics`` and the liveness/readiness probes.

Served by uvicorn inside the worker's event loop, so that a probe answering
means the loop that scores jobs is not stuck, and ``/metrics`` can ask Redis
for the stream's backlog at scrape time (the queue depth every replica
reports). The worker installs its own SIGTERM/SIGINT handlers (graceful drain),
so this server must not take them over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Protocol

import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from redis.exceptions import RedisError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from exporters import GatewayMetrics

__all__ = ["serve_worker_http", "worker_http_app"]

log = logging.getLogger("trustgate.worker")


class ProbedWorker(Protocol):
    @property
    def alive(self) -> bool: ...
    @property
    def ready(self) -> bool: ...
    async def depth(self) -> int: ...


def worker_http_app(worker: ProbedWorker, metrics: GatewayMetrics) -> Starlette:
    async def scrape(request: Request) -> Response:
        try:
            metrics.scoring_queue_depth.set(await worker.depth())
        except RedisError as exc:  # the last known depth stays; readiness already reports the outage
            log.warning("queue depth unavailable: %s", type(exc).__name__)
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    async def liveness(request: Request) -> JSONResponse:
        return _probe(worker.alive)

    async def readiness(request: Request) -> JSONResponse:
        return _probe(worker.ready)

    return Starlette(
        routes=[Route("/metrics", scrape), Route("/health/liveness", liveness), Route("/health/readiness", readiness)]
    )


def _probe(ok: bool) -> JSONResponse:
    return JSONResponse({"status": "ok" if ok else "unavailable"}, status_code=200 if ok else 503)


class _InLoopServer(uvicorn.Server):
    """uvicorn without its signal handling: the worker's own handlers stay in charge of shutdown."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    def install_signal_handlers(self) -> None:
        """Older uvicorn's name for the same hook."""


@contextlib.asynccontextmanager
async def serve_worker_http(worker: ProbedWorker, metrics: GatewayMetrics, host: str, port: int) -> AsyncIterator[None]:
    """Serve the endpoints for the duration of the block; fails fast if the port cannot be bound."""
    config = uvicorn.Config(
        worker_http_app(worker, metrics), host=host, port=port, log_level="warning", access_log=False, lifespan="off"
    )
    server = _InLoopServer(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()  # re-raises the bind error
            raise OSError(f"worker metrics server on {host}:{port} stopped at start-up")
        await asyncio.sleep(0.01)
    try:
        yield
    finally:
        server.should_exit = True
        await task
