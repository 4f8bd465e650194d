"""The in-process scoring queue: bounded, a fixed number of concurrent jobs, never blocking the caller.

``submit`` either accepts a job at once or sheds it (the queue is full); the
user's response never waits on it. Finished records go to ``publish`` (store,
metrics, traces — wired by the app), and callers in sync mode can ``wait`` for
a record up to a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Literal, Protocol

from .types import ScoringJob, TrustRecord

__all__ = ["JobQueue", "MemoryJobQueue", "Process", "Publish", "SubmitResult"]

log = logging.getLogger("trustgate.scoring")

Process = Callable[[ScoringJob], Awaitable[TrustRecord]]
Publish = Callable[[TrustRecord], Awaitable[None]]
# "unavailable": the queue's backend could not be reached; the job is dropped like a shed one.
SubmitResult = Literal["accepted", "shed", "unavailable"]


class JobQueue(Protocol):
    """Where the request path hands jobs over: in memory, or a Redis Stream read by workers."""

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    async def submit(self, job: ScoringJob) -> SubmitResult: ...
    async def pending(self, job_id: str) -> TrustRecord | None: ...
    async def wait(self, job_id: str, timeout: float) -> TrustRecord | None: ...


class MemoryJobQueue:
    def __init__(self, process: Process, publish: Publish, *, max_size: int, concurrency: int,
                 on_depth: Callable[[int], None] = lambda depth: None) -> None:
        self._process = process
        self._publish = publish
        self._jobs: asyncio.Queue[ScoringJob] = asyncio.Queue(max_size)
        self._concurrency = concurrency
        self._on_depth = on_depth
        self._pending: dict[str, TrustRecord] = {}
        self._done: dict[str, asyncio.Future[TrustRecord]] = {}
        self._workers: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self._workers = [asyncio.create_task(self._work(), name=f"scoring-worker-{i}")
                         for i in range(self._concurrency)]

    async def stop(self) -> None:
        for worker in self._workers:
            worker.cancel()
        for worker in self._workers:
            with contextlib.suppress(asyncio.CancelledError):
                await worker
        self._workers = []

    async def submit(self, job: ScoringJob) -> SubmitResult:
        """Accept the job or shed it because the queue is full. Never waits."""
        if job.id in self._pending:
            return "accepted"  # idempotent per id
        try:
            self._jobs.put_nowait(job)
        except asyncio.QueueFull:
            return "shed"
        self._pending[job.id] = TrustRecord.for_job(job, "pending")
        self._done[job.id] = asyncio.get_running_loop().create_future()
        self._on_depth(self._jobs.qsize())
        return "accepted"

    async def pending(self, job_id: str) -> TrustRecord | None:
        return self._pending.get(job_id)

    async def wait(self, job_id: str, timeout: float) -> TrustRecord | None:
        """The finished record, or None if it is not done within ``timeout`` seconds."""
        future = self._done.get(job_id)
        if future is None:
            return None
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            return None

    async def _work(self) -> None:
        while True:
            job = await self._jobs.get()
            self._on_depth(self._jobs.qsize())
            try:
                record = await self._process(job)
            except Exception as exc:  # the pipeline already catches scorer errors; this is a last guard
                log.exception("scoring job %s failed", job.id)
                record = TrustRecord.for_job(job, "failed", error=type(exc).__name__)
            try:
                await self._publish(record)
            except Exception:
                log.exception("publishing trust record %s failed", job.id)
            finally:
                self._pending.pop(job.id, None)
                future = self._done.pop(job.id, None)
                if future is not None and not future.done():
                    future.set_result(record)
                self._jobs.task_done()
