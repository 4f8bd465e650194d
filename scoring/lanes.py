"""Sync first: a sync request's scoring job goes ahead of queued async jobs.

A client in sync mode waits for its own answer's score, up to ``sync_timeout_s``;
a client in async mode reads it later. Taken in arrival order, a burst of
async jobs would make every sync waiter behind it time out. So jobs travel in
two lanes: a worker always takes the oldest sync job first, and async jobs only
when no sync job waits; and a consumer may keep one worker for sync jobs only
(``get_sync``), so that a sync job starts at once even while every other worker
holds an async job (its upstream calls then go ahead of theirs). Async jobs are
delayed, never dropped, and each delay is counted: whenever a sync job is taken while async jobs wait, ``on_overtaken``
hears how many were passed (``trustgate_scoring_async_overtaken_total``).

``SyncFirstQueue`` is an ``asyncio.Queue`` of jobs (bounded, ``put_nowait``,
``get``, ``task_done``, ``join``), so any in-process consumer of jobs can use
it as is, plus ``get_sync``. The Redis backend keeps the same two lanes as two streams
(``scoring.redis_queue``).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable
from typing import Literal

from .types import ScoringJob

__all__ = ["LANES", "Lane", "SyncFirstQueue", "lane_of"]

Lane = Literal["sync", "async"]
LANES: tuple[Lane, ...] = ("sync", "async")  # in the order a worker takes them


def lane_of(job: ScoringJob) -> Lane:
    """A job whose request waits for its score (``policy.mode: sync``) is sync; every other one is async."""
    return "sync" if job.policy.mode == "sync" else "async"


class SyncFirstQueue(asyncio.Queue[ScoringJob]):
    """A bounded job queue that hands out sync jobs before async ones, each lane first come first served.

    Built on ``asyncio.Queue``'s storage hooks (``_init``, ``_put``, ``_get``),
    as the standard library's ``PriorityQueue`` is: waiting, bounds and
    ``join`` stay asyncio's own.
    """

    def __init__(self, maxsize: int = 0, *, on_overtaken: Callable[[int], None] = lambda count: None) -> None:
        self._on_overtaken = on_overtaken
        super().__init__(maxsize)

    def _init(self, maxsize: int) -> None:
        self._queue: list[tuple[int, int, ScoringJob]] = []  # a heap of (lane's rank, arrival, job)
        self._arrival = itertools.count()
        self._async_waiting = 0
        self._sync_arrived = asyncio.Event()

    def _put(self, item: ScoringJob) -> None:
        lane = lane_of(item)
        if lane == "async":
            self._async_waiting += 1
        else:
            self._sync_arrived.set()
        heapq.heappush(self._queue, (LANES.index(lane), next(self._arrival), item))

    def _get(self) -> ScoringJob:
        rank, _, job = heapq.heappop(self._queue)
        if LANES[rank] == "async":
            self._async_waiting -= 1
        elif self._async_waiting:
            self._on_overtaken(self._async_waiting)
        return job

    async def get_sync(self) -> ScoringJob:
        """The oldest sync job, waiting for one if none is queued (async jobs are left to ``get``)."""
        while not self.waiting("sync"):
            self._sync_arrived.clear()
            await self._sync_arrived.wait()
        return self.get_nowait()  # a sync job: they come first

    def waiting(self, lane: Lane) -> int:
        """Jobs of ``lane`` not yet taken."""
        return self._async_waiting if lane == "async" else self.qsize() - self._async_waiting
