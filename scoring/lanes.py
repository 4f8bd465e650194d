"""Sync first, and every key its turn: the order in which queued scoring jobs are taken.

A client in sync mode waits for its own answer's score, up to ``sync_timeout_s``;
a client in async mode reads it later. Taken in arrival order, a burst of
async jobs would make every sync waiter behind it time out. So jobs travel in
two lanes: a worker always takes a sync job first, and async jobs only when no
sync job waits; and a consumer may keep one worker for sync jobs only
(``get_sync``), so that a sync job starts at once even while every other worker
holds an async job (its upstream calls then go ahead of theirs). Async jobs are
delayed, never dropped, and each delay is counted: whenever a sync job is taken
while async jobs wait, ``on_overtaken`` hears how many were passed
(``trustgate_scoring_async_overtaken_total``).

Within a lane the keys (the names of the keys that asked) take turns: the next
job is the oldest of the key whose turn it is, and that key goes to the back of
the line. One key's burst then delays another key's job by one of its own jobs
per turn, not by the whole burst, so a key that fills its share of the queue
(``queue.key_share``, enforced by the queue with ``waiting_for``) cannot leave
another key's sync waiter to time out.

``SyncFirstQueue`` is an ``asyncio.Queue`` of jobs (bounded, ``put_nowait``,
``get``, ``task_done``, ``join``), so any in-process consumer of jobs can use
it as is, plus ``get_sync`` and ``waiting_for``. The Redis backend keeps the
same two lanes as two streams (``scoring.redis_queue``).
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from typing import Literal

from .types import ScoringJob

__all__ = ["LANES", "Lane", "SyncFirstQueue", "lane_of"]

Lane = Literal["sync", "async"]
LANES: tuple[Lane, ...] = ("sync", "async")  # in the order a worker takes them


def lane_of(job: ScoringJob) -> Lane:
    """A job whose request waits for its score (``policy.mode: sync``) is sync; every other one is async."""
    return "sync" if job.policy.mode == "sync" else "async"


class _Turns:
    """One lane's jobs: each key's in arrival order, the keys in the order of their turns."""

    def __init__(self) -> None:
        self._by_key: collections.OrderedDict[str, collections.deque[ScoringJob]] = collections.OrderedDict()
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def add(self, key: str, job: ScoringJob) -> None:
        self._by_key.setdefault(key, collections.deque()).append(job)
        self._count += 1

    def take(self) -> ScoringJob:
        """The oldest job of the key whose turn it is; that key goes to the back of the line."""
        key, jobs = next(iter(self._by_key.items()))
        job = jobs.popleft()
        if jobs:
            self._by_key.move_to_end(key)
        else:
            del self._by_key[key]
        self._count -= 1
        return job


class _Lanes:
    """Both lanes, as ``asyncio.Queue`` keeps its storage (``len`` and truth are all it asks of it)."""

    def __init__(self) -> None:
        self.turns: dict[Lane, _Turns] = {lane: _Turns() for lane in LANES}
        self.per_key: collections.Counter[str] = collections.Counter()

    def __len__(self) -> int:
        return sum(len(turns) for turns in self.turns.values())


def _key_of(job: ScoringJob) -> str:
    return job.owner or ""


class SyncFirstQueue(asyncio.Queue[ScoringJob]):
    """A bounded job queue that hands out sync jobs before async ones, the keys taking turns within each lane.

    Built on ``asyncio.Queue``'s storage hooks (``_init``, ``_put``, ``_get``),
    as the standard library's ``PriorityQueue`` is: waiting, bounds and
    ``join`` stay asyncio's own.
    """

    def __init__(self, maxsize: int = 0, *, on_overtaken: Callable[[int], None] = lambda count: None) -> None:
        self._on_overtaken = on_overtaken
        super().__init__(maxsize)

    def _init(self, maxsize: int) -> None:
        self._queue = _Lanes()  # asyncio.Queue only takes its len and truth
        self._sync_arrived = asyncio.Event()

    def _put(self, item: ScoringJob) -> None:
        lane = lane_of(item)
        if lane == "sync":
            self._sync_arrived.set()
        self._queue.turns[lane].add(_key_of(item), item)
        self._queue.per_key[_key_of(item)] += 1

    def _get(self) -> ScoringJob:
        turns = self._queue.turns
        if turns["sync"]:
            job = turns["sync"].take()
            if turns["async"]:
                self._on_overtaken(len(turns["async"]))
        else:
            job = turns["async"].take()
        key = _key_of(job)
        self._queue.per_key[key] -= 1
        if not self._queue.per_key[key]:
            del self._queue.per_key[key]
        return job

    async def get_sync(self) -> ScoringJob:
        """The next sync job, waiting for one if none is queued (async jobs are left to ``get``)."""
        while not self.waiting("sync"):
            self._sync_arrived.clear()
            await self._sync_arrived.wait()
        return self.get_nowait()  # a sync job: they come first

    def waiting(self, lane: Lane) -> int:
        """Jobs of ``lane`` not yet taken."""
        return len(self._queue.turns[lane])

    def waiting_for(self, owner: str | None) -> int:
        """Jobs of the key named ``owner`` not yet taken, in both lanes."""
        return self._queue.per_key[owner or ""]
