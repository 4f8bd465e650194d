"""The parts of a scoring worker process: one recipe for ``trustgate worker`` and the gateway's local worker.

Both score a job the same way: their own upstream client (not starting the
embedded model server: the gateway on the host runs it), the configured
scorers, calibration and learned fits, the scoring budget, the telemetry the
config and ``OTEL_*`` choose, and a publisher that writes records where the
gateway reads them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

from redis.asyncio import Redis

from exporters import GatewayMetrics, RecordPublisher
from scoring.queue import Process
from scoring.types import Scorer

from .assembly import (
    build_fit_store,
    build_limiter,
    build_processor,
    build_publisher,
    build_telemetry,
    load_calibrator,
    open_upstream_client,
)
from .config import GatewaySettings
from .log_format import LogFormat
from .limits import Counters, Limiter
from .slots import PrioritySlots

__all__ = ["StartOrder", "WorkerParts", "open_worker_parts"]


@dataclass(frozen=True)
class StartOrder:
    """What a gateway hands its local worker at start: the settings (secrets included) and how to log."""

    settings: GatewaySettings
    log_format: LogFormat


@dataclass(frozen=True)
class WorkerParts:
    process: Process  # a job -> its record (scored, calibrated, traced)
    publisher: RecordPublisher
    has_scorers: bool


async def open_worker_parts(settings: GatewaySettings, metrics: GatewayMetrics, redis: Redis | None,
                            stack: contextlib.AsyncExitStack, *,
                            scorers: Sequence[Scorer] | None = None,
                            local_slots: PrioritySlots | None = None,
                            counters: Counters | None = None) -> WorkerParts:
    """Open everything a worker scores with on ``stack``; a config the scorers cannot load raises ConfigError.

    ``local_slots``: the embedded model server's slots, and ``counters``: the rate-limit counters, both
    borrowed from the gateway (a local worker's); by default the worker's own (Redis's, when configured).
    """
    calibrator = load_calibrator(settings)
    # with Redis, or the gateway's lent counters: one scoring budget and one rpm for the gateway and its workers
    limiter = Limiter(counters) if counters is not None else build_limiter(settings, redis, stack)
    telemetry = build_telemetry(settings, stack)
    upstream = await open_upstream_client(
        settings, stack, start_local=False, limiter=limiter, telemetry=telemetry, on_try=metrics.observe_try,
        on_scoring_shed=lambda group, reason: metrics.scoring_calls_shed.labels(model=group, reason=reason).inc(),
        local_slots=local_slots)
    publisher = await build_publisher(settings, metrics, redis, stack)
    process, has_scorers = await build_processor(settings, upstream, metrics, telemetry, scorers, calibrator, stack,
                                                 limiter, build_fit_store(settings, redis))
    return WorkerParts(process, publisher, has_scorers)
