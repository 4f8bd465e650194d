"""``trustgate worker``: score jobs from the Redis Stream, with the same config and scorers as the gateway.

A worker re-asks upstreams through its own UpstreamClient (same retries,
timeouts, fallbacks; the gateways' rate-limit counters in Redis, and so one
scoring budget for all), writes records to Redis and serves its own ``/metrics``
and ``/health/liveness`` / ``/health/readiness`` probes (``worker_http``).
SIGTERM/SIGINT stop reading new jobs and let in-flight ones finish for a grace
period; what is still unfinished then stays pending in the consumer group for
another worker to reclaim.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import uuid
from collections.abc import Sequence

from prometheus_client import CollectorRegistry

from exporters import build_metrics, build_worker_metrics
from proxy import ConfigError, GatewaySettings, configured_labels, load_calibrator, open_parts
from scoring import RedisStreamWorker, Scorer

from .worker_http import serve_worker_http

__all__ = ["run_worker"]

log = logging.getLogger("trustgate.worker")


def _consumer_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


async def run_worker(
    settings: GatewaySettings,
    *,
    scorers: Sequence[Scorer] | None = None,
    metrics_host: str = "127.0.0.1",
    metrics_port: int | None = 9400,
    stop: asyncio.Event | None = None,
    grace_s: float = 30.0,
) -> None:
    if settings.trustgate.scoring.queue.backend != "redis":
        raise ConfigError("trustgate worker needs trustgate.scoring.queue.backend: redis")
    calibrator = load_calibrator(settings)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop.set)
    registry = CollectorRegistry()
    metrics = build_metrics(registry, configured_labels(settings))
    async with contextlib.AsyncExitStack() as stack:
        parts = await open_parts(settings, "worker", stack, metrics=metrics, calibrator=calibrator, scorers=scorers)
        assert parts.redis is not None and parts.process is not None  # the backend was checked above
        worker = RedisStreamWorker(
            parts.redis,
            parts.publisher.store,
            settings.trustgate.scoring.queue,
            process=parts.process,
            publish=parts.publisher.publish,
            consumer=_consumer_name(),
            events=build_worker_metrics(registry, metrics),
        )
        if metrics_port is not None:
            await stack.enter_async_context(serve_worker_http(worker, metrics, metrics_host, metrics_port))
        log.info("scoring worker started")
        await worker.run(stop, grace_s=grace_s)
        log.info("scoring worker stopped")
