"""The gateway's local scoring worker: a child process that scores the jobs its gateway sends it.

Started by ``proxy.trust.local_scoring`` (``scoring.worker: child``, the memory
backend's default) as ``python -m proxy.local_worker FD``: the gateway writes
a ``StartOrder`` (pickled: the settings carry the config's secrets, which go
neither on a command line nor in a file) on its stdin, then the two talk over
the socketpair end ``FD`` (``scoring.local_transport``).

It opens the same parts as ``trustgate worker`` (``proxy.assembly.open_parts``):
the scorers and their own upstream client, the record store, telemetry. Its
calls to the embedded model server wait for a slot of the gateway's
(``proxy.upstream.slot_leases``), so that users' calls still go first, and its
rate-limit counts are the gateway's (``proxy.trust.lent_counters``). Each
job is scored, published (store, metrics, alerts; its spans and evaluation
events exported from here with the request's trace context) and only then
sent back with the metric counts it added, so that the gateway stops
answering for it as pending once its record can be read. It never holds more
jobs than the gateway hands it.

It lives and dies with the gateway: armed with the parent-death signal before
exec, registered in ``scoring.children``'s registry, niced by
``scoring.cpu.nice``. It ignores SIGINT and SIGTERM, which a terminal's Ctrl-C
and a service manager send to the whole process group: the gateway drains its
queue through it first, then closes the socket. When the socket closes (the
gateway stopping or gone) it cancels what it holds and exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import signal
import socket
import sys
import time

from prometheus_client import CollectorRegistry

from exporters import build_metrics
from exporters.metric_deltas import DeltaTracker
from scoring.local_transport import (
    CancelJob,
    FrameError,
    FrameKind,
    WorkerFailed,
    WorkerReady,
    read_frame,
    write_frame,
)
from scoring.queue import Process, Publish
from scoring.request_context import working_for
from scoring.types import ScoringJob, TrustRecord

from .assembly import load_calibrator, open_parts
from .base.log_format import configure_logging
from .config.settings import ConfigError
from .trust.lent_counters import LentCounters
from .trust.start_order import StartOrder
from .upstream.local_model import LocalUpstreamError
from .upstream.slot_leases import LeasedSlots

__all__ = ["main"]

log = logging.getLogger("trustgate.worker")


class _Jobs:
    """The jobs in hand, each scored and published in a task of its own; answered over ``writer``."""

    def __init__(self, process: Process, publish: Publish, writer: asyncio.StreamWriter, tracker: DeltaTracker) -> None:
        self._process = process
        self._publish = publish
        self._writer = writer
        self._tracker = tracker
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def start(self, payload: bytes) -> None:
        job = ScoringJob.model_validate_json(payload)
        task = asyncio.create_task(self._score(job), name=f"score-{job.id}")
        self._tasks[job.id] = task
        task.add_done_callback(lambda _: self._tasks.pop(job.id, None))

    def cancel(self, payload: bytes) -> None:
        task = self._tasks.get(CancelJob.model_validate_json(payload).id)
        if task is not None:
            task.cancel()

    async def cancel_all(self) -> None:
        for task in list(self._tasks.values()):
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    async def _score(self, job: ScoringJob) -> None:
        with working_for(job.request_id):  # its lines name the request whose answer it scores
            try:
                record = await self._process(job)
            except Exception as exc:  # the pipeline catches scorer errors; this is the last guard, as inline
                log.exception("scoring job %s failed", job.id)
                record = TrustRecord.for_job(job, "failed", error=type(exc).__name__, finished_at=time.time())
        try:
            await self._publish(record)
        except Exception:
            log.exception("publishing trust record %s failed", record.id)
        deltas = self._tracker.take()
        if deltas:  # before the record: its counts are in once the gateway has it
            write_frame(self._writer, FrameKind.METRICS, deltas.model_dump_json().encode())
        write_frame(self._writer, FrameKind.RECORD, record.model_dump_json().encode())
        with contextlib.suppress(ConnectionError):
            await self._writer.drain()


async def _serve(order: StartOrder, sock: socket.socket) -> int:
    reader, writer = await asyncio.open_connection(sock=sock)
    registry = CollectorRegistry()
    metrics = build_metrics(registry)

    def send(kind: FrameKind, payload: bytes) -> None:
        write_frame(writer, kind, payload)

    slots = LeasedSlots(send) if order.settings.trustgate.local_upstream.enabled else None
    counters = LentCounters(send) if order.settings.trustgate.limits.redis_url is None else None
    async with contextlib.AsyncExitStack() as stack:
        try:
            parts = await open_parts(
                order.settings,
                "local-worker",
                stack,
                metrics=metrics,
                calibrator=load_calibrator(order.settings),
                local_slots=slots,
                counters=counters,
            )
        except (ConfigError, LocalUpstreamError) as exc:
            write_frame(writer, FrameKind.FAILED, WorkerFailed(error=str(exc)).model_dump_json().encode())
            await writer.drain()
            return 2
        assert parts.process is not None  # a local worker always scores
        jobs = _Jobs(parts.process, parts.publisher.publish, writer, DeltaTracker(registry))
        write_frame(writer, FrameKind.READY, WorkerReady(has_scorers=parts.has_scorers).model_dump_json().encode())
        await writer.drain()
        try:
            while (frame := await read_frame(reader)) is not None:
                kind, payload = frame
                if kind == FrameKind.JOB:
                    jobs.start(payload)
                elif kind == FrameKind.CANCEL:
                    jobs.cancel(payload)
                elif kind == FrameKind.SLOT_ANSWER and slots is not None:
                    slots.answer(payload)
                elif kind == FrameKind.COUNT_ANSWER and counters is not None:
                    counters.answer(payload)
        except (FrameError, ConnectionError) as exc:
            log.warning("scoring worker: connection to the gateway broken (%s); stopping", exc)
        finally:
            if slots is not None:
                slots.disconnected()
            if counters is not None:
                counters.disconnected()
            await jobs.cancel_all()
            writer.close()
    return 0


def main() -> int:
    fd = int(sys.argv[1])
    order: StartOrder = pickle.load(sys.stdin.buffer)  # from our own parent, over a pipe only it holds
    sys.stdin.close()
    configure_logging(order.log_format)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    for signum in (signal.SIGINT, signal.SIGTERM):  # the gateway's shutdown stops this worker, after draining
        signal.signal(signum, signal.SIG_IGN)
    os.nice(order.settings.trustgate.scoring.cpu.nice)
    sock = socket.socket(fileno=fd)
    try:
        return asyncio.run(_serve(order, sock))
    except Exception as exc:  # started, but not through its start-up: the gateway reads the reason from the log
        log.exception("scoring worker failed: %s", type(exc).__name__)
        return 1


if __name__ == "__main__":
    sys.exit(main())
