"""The gateway's side of its local scoring worker (``scoring.worker: child``, the memory backend's default).

Scoring's whole job leaves the serving process: the scorers, their upstream
calls, their CPU work and the record's publishing (store, metrics counts,
alerts, spans and evaluation events) run in a niced child process
(``proxy.local_worker``). The serving process keeps what must answer users
at once: it decides, queues, and answers sync waiters and look-ups of
pending records.

The queue stays here, a ``MemoryJobQueue`` whose ``process`` is this
worker's: that queue alone decides which job goes next (a sync job ahead of
async backlog, and one sync job beside ``queue.concurrency`` busy ones:
``scoring.lanes``), so the child holds at most ``queue.concurrency`` + 1 jobs;
the backlog waits here, so a child that dies loses nothing queued.

Publishing is split so that ``/metrics``, OpenTelemetry and
``GET /v1/trust/{id}`` read as when scoring ran inline:

- the child publishes each record it scores (its store write returns before
  it answers, so once the gateway stops answering "pending" the store has
  the record) and sends its metric counts ahead of the record
  (``exporters.metric_deltas``), which the gateway adds to its own series;
- spans and evaluation events are exported by the child itself, in the
  request's trace (the job carries its ``traceparent``);
- the child's calls to the embedded model server borrow the gateway's slots
  (``proxy.upstream.slot_leases``): users' calls still go first; its rate-limit counts
  (deployments' rpm/tpm, scoring's budget) are the gateway's in-memory ones
  (``proxy.trust.lent_counters``);
- records the child never scored (its death, the gateway's shutdown, a job
  too large to send) are failed and published here (``publish``).

A child that dies (killed, out of memory) fails the jobs it held with the
reason, is logged once, and a fresh one takes the next jobs; restarts back off
up to 30 s while one cannot start. Every start of a child to replace one that
ended is counted (``trustgate_scoring_worker_restarts_total``), one killed
while it was still starting included. At shutdown the queue drains through the child for its grace
period; then the child is told to stop (its socket closes), cancels what it
still holds and exits, killed if it has not within ``STOP_WAIT_S``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import pickle
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from prometheus_client import Counter

from exporters import GatewayMetrics, RecordPublisher
from exporters.metric_deltas import DeltaSink, MetricDeltas
from exporters.prometheus import NAMESPACE
from scoring.children import die_with_parent, forget_child, register_child
from scoring.local_transport import (
    CancelJob,
    FrameError,
    FrameKind,
    FrameTooLarge,
    WorkerFailed,
    WorkerReady,
    read_frame,
    write_frame,
)
from scoring.queue import SHUTDOWN_ERROR
from scoring.types import ScoringJob, TrustRecord

from ..base.limits import Counters
from ..base.log_format import LogFormat
from ..config.settings import ConfigError, GatewaySettings
from ..upstream.slot_leases import SlotLender
from ..upstream.slots import PrioritySlots
from .lent_counters import CounterLender
from .start_order import StartOrder

__all__ = ["WORKER_MODULE", "GatewayShares", "LocalScoringWorker", "local_scoring_worker"]

log = logging.getLogger("trustgate.scoring")

WORKER_MODULE = "proxy.local_worker"
START_TIMEOUT_S = 300.0  # loading spaCy, the vectors and the evidence index takes seconds; a cold disk, more
STOP_WAIT_S = 15.0  # for the child to close its store (pending writes committed) after the socket closed
MAX_BACKOFF_S = 30.0


class WorkerDied(Exception):
    """The local worker ended while it held a job; the message is the record's error."""


@dataclass(frozen=True)
class GatewayShares:
    """What the gateway's local worker counts on in the gateway: its model-server slots and rate-limit counters."""

    slots: PrioritySlots
    counters: Counters


class _Child:
    """One started worker process and its connection; ``ended`` is set once either is gone."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        shared: GatewayShares,
    ) -> None:
        self.process = process
        self.reader = reader
        self.writer = writer

        def send(kind: FrameKind, payload: bytes) -> None:
            write_frame(writer, kind, payload)

        self.lender = SlotLender(shared.slots, send)
        self.counts = CounterLender(shared.counters, send)
        self.held: dict[str, asyncio.Future[TrustRecord]] = {}
        self.ended = asyncio.Event()
        self.reader_task: asyncio.Task[None] | None = None  # held here: the loop keeps only a weak reference

    def send(self, kind: FrameKind, payload: bytes) -> None:
        if self.ended.is_set():
            raise WorkerDied("scoring worker stopped before it took the job")
        write_frame(self.writer, kind, payload)

    def fail_held(self, reason: str) -> int:
        held = [future for future in self.held.values() if not future.done()]
        for future in held:
            future.set_exception(WorkerDied(reason))
        return len(held)

    def describe_end(self) -> str:
        code = self.process.returncode
        if code is None:
            return "scoring worker's connection broke"
        if code < 0:
            return f"scoring worker died ({signal.Signals(-code).name})"
        return f"scoring worker exited with status {code}"


class LocalScoringWorker:
    """Scores jobs in a supervised child process: ``process`` and ``publish`` for a ``MemoryJobQueue``."""

    def __init__(
        self,
        settings: GatewaySettings,
        metrics: GatewayMetrics,
        publisher: RecordPublisher,
        shared: GatewayShares,
        log_format: LogFormat,
        restarts: Counter,
    ) -> None:
        self._settings = settings
        self._shared = shared
        self._counts = DeltaSink(metrics)
        self._publisher = publisher
        self._log_format = log_format
        self._restarts = restarts
        self._child: _Child | None = None
        self._live = asyncio.Event()  # a started child takes jobs
        self._published_by_child: set[str] = set()
        self._supervisor: asyncio.Task[None] | None = None
        self._stopping = False
        self.has_scorers = False

    async def start(self) -> None:
        """Start the first child; what keeps it from starting is the gateway's start-up error."""
        child, failure = await self._spawn()
        if child is None:
            raise ConfigError(failure)
        self._adopt(child)
        self._supervisor = asyncio.create_task(self._supervise(), name="local-scoring-supervisor")

    async def stop(self) -> None:
        """Close the child's socket (it cancels what it holds and exits), then wait for it, killing it if need be."""
        self._stopping = True
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
        child = self._child
        if child is None:
            return
        child.writer.close()
        try:
            await asyncio.wait_for(child.process.wait(), STOP_WAIT_S)
        except TimeoutError:
            log.warning("scoring worker %d did not stop within %.0f s; killed", child.process.pid, STOP_WAIT_S)
            with contextlib.suppress(ProcessLookupError):
                child.process.kill()
            await child.process.wait()
        await child.ended.wait()
        child.fail_held(SHUTDOWN_ERROR)
        forget_child(child.process.pid)

    async def process(self, job: ScoringJob) -> TrustRecord:
        """Score ``job`` in the child; a record failed with the reason when the child dies holding it."""
        while True:
            await self._live.wait()
            child = self._child
            if child is not None and not child.ended.is_set():
                break
        try:
            payload = job.model_dump_json().encode()
            future: asyncio.Future[TrustRecord] = asyncio.get_running_loop().create_future()
            child.held[job.id] = future
            child.send(FrameKind.JOB, payload)
            return await future
        except (WorkerDied, FrameTooLarge) as exc:
            return TrustRecord.for_job(job, "failed", error=str(exc)[:500], finished_at=time.time())
        except asyncio.CancelledError:  # the queue's shutdown gave up on it: the child must not publish it
            with contextlib.suppress(WorkerDied, ConnectionError):
                child.send(FrameKind.CANCEL, CancelJob(id=job.id).model_dump_json().encode())
            raise
        finally:
            child.held.pop(job.id, None)

    async def publish(self, record: TrustRecord) -> None:
        """Publish what the child did not: a record it scored is in the store and counted already."""
        if record.id in self._published_by_child:
            self._published_by_child.discard(record.id)
            return
        await self._publisher.publish(record)

    async def _spawn(self) -> tuple[_Child | None, str]:
        """A started child that reported ready, or None and why it did not."""
        ours, theirs = socket.socketpair()
        argv = [sys.executable, "-m", WORKER_MODULE, str(theirs.fileno())]
        try:
            process = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, pass_fds=(theirs.fileno(),), preexec_fn=die_with_parent()
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        register_child(process.pid, argv)
        try:
            return await self._introduce(process, ours)
        except BaseException:  # cancelled while starting (the gateway stopping): no child is left behind
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
            forget_child(process.pid)
            raise

    async def _introduce(self, process: asyncio.subprocess.Process, sock: socket.socket) -> tuple[_Child | None, str]:
        """Hand the child its order and wait until it is ready; a child that is not is stopped."""
        assert process.stdin is not None
        process.stdin.write(pickle.dumps(StartOrder(self._settings, self._log_format)))
        with contextlib.suppress(ConnectionError):
            await process.stdin.drain()
        process.stdin.close()
        reader, writer = await asyncio.open_connection(sock=sock)
        child = _Child(process, reader, writer, self._shared)
        try:
            failure = await self._await_ready(child)
        except BaseException:  # cancelled while it starts (the gateway stopping): its connection goes with it
            writer.close()
            raise
        if failure is None:
            return child, ""
        writer.close()
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        forget_child(process.pid)
        return None, failure

    async def _await_ready(self, child: _Child) -> str | None:
        """None once the child is ready; otherwise why it is not (its own words for a config error)."""
        try:
            frame = await asyncio.wait_for(read_frame(child.reader), START_TIMEOUT_S)
        except TimeoutError:
            return f"the scoring worker did not start within {START_TIMEOUT_S:.0f} s"
        except (FrameError, ConnectionError) as exc:
            return f"the scoring worker broke its connection while starting: {exc}"
        if frame is None:
            await child.process.wait()
            return f"the scoring worker ended while starting (status {child.process.returncode}); see its log"
        kind, payload = frame
        if kind == FrameKind.FAILED:
            return WorkerFailed.model_validate_json(payload).error
        if kind != FrameKind.READY:
            return f"the scoring worker sent {kind.name} before it was ready"
        self.has_scorers = WorkerReady.model_validate_json(payload).has_scorers
        return None

    def _adopt(self, child: _Child) -> None:
        self._child = child
        child.reader_task = asyncio.create_task(self._read(child), name="local-scoring-reader")
        self._live.set()

    async def _read(self, child: _Child) -> None:
        """Take the child's records and metric counts until its connection ends."""
        try:
            while (frame := await read_frame(child.reader)) is not None:
                kind, payload = frame
                if kind == FrameKind.SLOT_ASK:
                    child.lender.ask(payload)
                elif kind == FrameKind.SLOT_RETURN:
                    child.lender.returned(payload)
                elif kind == FrameKind.COUNT_ASK:
                    child.counts.ask(payload)
                elif kind == FrameKind.METRICS:
                    self._counts.apply(MetricDeltas.model_validate_json(payload))
                elif kind == FrameKind.RECORD:
                    record = TrustRecord.model_validate_json(payload)
                    future = child.held.get(record.id)
                    if future is not None and not future.done():
                        self._published_by_child.add(record.id)
                        future.set_result(record)
        except (FrameError, ConnectionError, ValueError) as exc:
            if not self._stopping:
                log.error(
                    "scoring worker %d sent what the gateway cannot read (%s); restarting it", child.process.pid, exc
                )
        finally:
            child.writer.close()  # the connection ended: our end of the socket goes too
            child.lender.close()
            child.counts.close()
            child.ended.set()
            self._live.clear()

    async def _supervise(self) -> None:
        """Wait for the child to end; fail what it held, count it, log it once, start the next one."""
        while True:
            child = self._child
            assert child is not None
            await child.ended.wait()
            if child.process.returncode is None:  # a broken connection: the process must go too
                with contextlib.suppress(ProcessLookupError):
                    child.process.kill()
            await child.process.wait()
            forget_child(child.process.pid)
            reason = child.describe_end()
            failed = child.fail_held(f"{reason} while scoring")
            log.warning("%s holding %d job(s), recorded as failed; starting a new one", reason, failed)
            await self._restart()

    async def _restart(self) -> None:
        """Start workers until one is ready, each start counted: one killed while it starts is a restart too."""
        backoff = 1.0
        while True:
            self._restarts.inc()
            child, failure = await self._spawn()
            if child is not None:
                self._adopt(child)
                return
            log.error("scoring worker could not start (%s); retrying in %.0f s", failure, backoff)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)


@contextlib.asynccontextmanager
async def local_scoring_worker(
    settings: GatewaySettings,
    metrics: GatewayMetrics,
    publisher: RecordPublisher,
    shared: GatewayShares,
    log_format: LogFormat,
) -> AsyncIterator[LocalScoringWorker]:
    """A started local worker for the block's duration (its restarts counted on the gateway's registry)."""
    restarts = Counter(
        "scoring_worker_restarts",
        "Local scoring worker processes started to replace one that ended unasked (killed, crashed, "
        "whether it was scoring or still starting); the jobs each held were recorded as failed.",
        namespace=NAMESPACE,
        registry=metrics.registry,
    )
    worker = LocalScoringWorker(settings, metrics, publisher, shared, log_format, restarts)
    try:
        await worker.start()
        try:
            yield worker
        finally:
            await worker.stop()
    finally:
        metrics.registry.unregister(restarts)
