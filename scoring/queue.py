"""The in-process scoring queue: bounded, a fixed number of concurrent jobs, never blocking the caller.

``submit`` either accepts a job at once or sheds it (the queue is full, or the
job's key holds its share of it already, ``queue.key_share``: one key filling
the queue sheds only its own jobs); the user's response never waits on it. Sync
jobs are taken before queued async ones, the keys taking turns within each lane
(``scoring.lanes``), and one more worker than ``concurrency`` scores only sync
jobs: a sync job starts at once even while every other worker holds an async one.
Finished records go to ``publish`` (store, metrics, traces — wired by the app),
and callers in sync mode can ``wait`` for a record up to a timeout. ``stop`` drains the queue for a grace period, then
records every job left as failed: an id handed to a client never becomes a 404.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Literal, Protocol

from .lanes import SyncFirstQueue
from .request_context import working_for
from .types import ScoringJob, TrustRecord

__all__ = ["SHUTDOWN_ERROR", "JobQueue", "MemoryJobQueue", "Process", "Publish", "SubmitResult", "key_cap"]

log = logging.getLogger("trustgate.scoring")

Process = Callable[[ScoringJob], Awaitable[TrustRecord]]
Publish = Callable[[TrustRecord], Awaitable[None]]
# "shed": the queue is full; "key_share": the job's key holds its share of the queue already; "unavailable": the
# queue's backend could not be reached. A job not accepted is dropped, its record shed.
SubmitResult = Literal["accepted", "shed", "key_share", "unavailable"]
SHUTDOWN_ERROR = "gateway shut down before scoring"


def key_cap(max_size: int, key_share: float) -> int:
    """The jobs one key may hold of a queue of ``max_size``: its share, and at least one."""
    return max(1, int(max_size * key_share))


class JobQueue(Protocol):
    """Where the request path hands jobs over: in memory, or a Redis Stream read by workers."""

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    async def submit(self, job: ScoringJob) -> SubmitResult: ...
    async def pending(self, job_id: str) -> TrustRecord | None: ...
    async def wait(self, job_id: str, timeout: float) -> TrustRecord | None: ...
    async def depth(self) -> int: ...


class MemoryJobQueue:
    def __init__(
        self,
        process: Process,
        publish: Publish,
        *,
        max_size: int,
        concurrency: int,
        key_share: float = 1.0,
        grace_s: float = 0.0,
        on_depth: Callable[[int], None] = lambda depth: None,
        on_overtaken: Callable[[int], None] = lambda count: None,
    ) -> None:
        self._process = process
        self._publish = publish
        self._jobs = SyncFirstQueue(max_size, on_overtaken=on_overtaken)
        self._per_key = key_cap(max_size, key_share)
        self._concurrency = concurrency
        self._grace_s = grace_s
        self._on_depth = on_depth
        self._pending: dict[str, TrustRecord] = {}
        self._done: dict[str, asyncio.Future[TrustRecord]] = {}
        self._workers: list[asyncio.Task[None]] = []
        self._finishing: set[asyncio.Task[None]] = set()
        self._stopping = False

    async def start(self) -> None:
        self._workers = [
            asyncio.create_task(self._work(self._jobs.get), name=f"scoring-worker-{i}")
            for i in range(self._concurrency)
        ]
        self._workers.append(asyncio.create_task(self._work(self._jobs.get_sync), name="scoring-worker-sync"))

    async def stop(self) -> None:
        """Score what is queued for up to ``grace_s``, then record every job still unscored as failed."""
        self._stopping = True
        if self._workers and self._pending:
            log.info("scoring queue: draining %d jobs for up to %.0f s", len(self._pending), self._grace_s)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._jobs.join(), self._grace_s)
        for worker in self._workers:
            worker.cancel()
        for worker in self._workers:
            with contextlib.suppress(asyncio.CancelledError):
                await worker
        self._workers = []
        await asyncio.gather(*self._finishing)  # records already scored are published, not failed
        if self._pending:
            log.warning("scoring queue: %d jobs left unscored at shutdown; recorded as failed", len(self._pending))
        await asyncio.gather(
            *(
                self._finish(
                    pending.model_copy(update={"status": "failed", "error": SHUTDOWN_ERROR, "finished_at": time.time()})
                )
                for pending in list(self._pending.values())
            )
        )

    async def submit(self, job: ScoringJob) -> SubmitResult:
        """Accept the job or shed it because the queue is full. Never waits."""
        if self._stopping:
            return "unavailable"
        if job.id in self._pending:
            return "accepted"  # idempotent per id
        if self._jobs.full():  # full first, as the Redis queue checks: a key alone at a whole share fills the queue
            return "shed"
        if self._jobs.waiting_for(job.owner) >= self._per_key:
            return "key_share"
        self._jobs.put_nowait(job)
        self._pending[job.id] = TrustRecord.for_job(job, "pending")
        self._done[job.id] = asyncio.get_running_loop().create_future()
        self._on_depth(self._jobs.qsize())
        return "accepted"

    async def pending(self, job_id: str) -> TrustRecord | None:
        return self._pending.get(job_id)

    async def depth(self) -> int:
        """Jobs waiting for a worker task (not those being scored)."""
        return self._jobs.qsize()

    async def wait(self, job_id: str, timeout: float) -> TrustRecord | None:
        """The finished record, or None if it is not done within ``timeout`` seconds."""
        future = self._done.get(job_id)
        if future is None:
            return None
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            return None

    async def _work(self, take: Callable[[], Awaitable[ScoringJob]]) -> None:
        while True:
            job = await take()
            self._on_depth(self._jobs.qsize())
            with working_for(job.request_id):  # its lines name the request whose answer it scores
                try:
                    record = await self._process(job)
                except Exception as exc:  # the pipeline already catches scorer errors; this is a last guard
                    log.exception("scoring job %s failed", job.id)
                    record = TrustRecord.for_job(job, "failed", error=type(exc).__name__)
            # Published beside the worker, which takes its next job at once: the store batches the
            # writes of many jobs, and a worker waiting on each commit would bound scoring by disk latency.
            # The job counts as done (for the drain at shutdown) once its record is published.
            finishing = asyncio.create_task(self._finish(record))
            self._finishing.add(finishing)
            finishing.add_done_callback(self._finished)

    def _finished(self, finishing: asyncio.Task[None]) -> None:
        self._finishing.discard(finishing)
        self._jobs.task_done()

    async def _finish(self, record: TrustRecord) -> None:
        """Publish the record, then stop answering for it as pending and wake whoever waits on it."""
        try:
            await self._publish(record)
        except Exception:
            log.exception("publishing trust record %s failed", record.id)
        finally:
            self._pending.pop(record.id, None)
            future = self._done.pop(record.id, None)
            if future is not None and not future.done():
                future.set_result(record)
