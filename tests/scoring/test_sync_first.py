"""Sync first in this process: the queue's lanes, and the in-memory backend built on them."""

from __future__ import annotations

import asyncio

import pytest

from scoring.lanes import SyncFirstQueue, lane_of
from scoring.queue import MemoryJobQueue
from scoring.types import ScoringJob, TrustRecord

pytestmark = pytest.mark.unit


def job(job_id: str, mode: str = "async") -> ScoringJob:
    return ScoringJob(id=job_id, model="m", question="q", answer="a", policy={"mode": mode})


def test_a_job_is_sync_only_when_its_request_waits_for_the_score() -> None:
    assert [lane_of(job("a", mode)) for mode in ("sync", "async")] == ["sync", "async"]
    assert lane_of(ScoringJob(id="b", model="m", question="q", answer="a")) == "async"  # no policy given
    assert lane_of(ScoringJob(id="p", model="m", question="q", answer="a")) == "async"  # no policy at all


def test_sync_jobs_are_taken_first_each_lane_in_arrival_order_and_passing_is_counted() -> None:
    overtaken: list[int] = []

    async def scenario() -> list[str]:
        queue = SyncFirstQueue(10, on_overtaken=overtaken.append)
        for item in (job("a1"), job("a2"), job("s1", "sync"), job("a3"), job("s2", "sync")):
            queue.put_nowait(item)
        assert (queue.waiting("sync"), queue.waiting("async"), queue.qsize()) == (2, 3, 5)
        taken = [(await queue.get()).id for _ in range(5)]
        assert queue.empty() and (queue.waiting("sync"), queue.waiting("async")) == (0, 0)
        return taken

    assert asyncio.run(scenario()) == ["s1", "s2", "a1", "a2", "a3"]
    assert overtaken == [3, 3]  # each sync job passed the three async jobs waiting then


def test_the_bound_holds_for_both_lanes_together_and_nothing_is_counted_without_async_jobs() -> None:
    overtaken: list[int] = []
    queue = SyncFirstQueue(2, on_overtaken=overtaken.append)
    queue.put_nowait(job("s1", "sync"))
    queue.put_nowait(job("a1"))
    with pytest.raises(asyncio.QueueFull):
        queue.put_nowait(job("s2", "sync"))
    assert queue.get_nowait().id == "s1" and overtaken == [1]
    assert queue.get_nowait().id == "a1"
    queue.put_nowait(job("s3", "sync"))
    assert queue.get_nowait().id == "s3" and overtaken == [1]  # no async job waited: nothing passed


def test_get_sync_waits_for_a_sync_job_and_leaves_async_ones() -> None:
    async def scenario() -> tuple[bool, str, int]:
        queue = SyncFirstQueue(10)
        queue.put_nowait(job("a1"))
        taking = asyncio.create_task(queue.get_sync())
        await asyncio.sleep(0.01)
        waited = not taking.done()
        queue.put_nowait(job("s1", "sync"))
        taken = await asyncio.wait_for(taking, 1)
        return waited, taken.id, queue.waiting("async")

    assert asyncio.run(scenario()) == (True, "s1", 1)


def test_the_memory_queue_scores_a_sync_job_at_once_ahead_of_the_async_backlog_and_drops_none() -> None:
    order: list[str] = []
    overtaken: list[int] = []

    async def scenario() -> list[TrustRecord | None]:
        release = asyncio.Event()

        async def process(item: ScoringJob) -> TrustRecord:
            if item.id == "a0":
                await release.wait()  # the one general worker is busy while the others queue up
            order.append(item.id)
            return TrustRecord.for_job(item, "done")

        async def publish(record: TrustRecord) -> None:
            return None

        queue = MemoryJobQueue(process, publish, max_size=10, concurrency=1, on_overtaken=overtaken.append)
        await queue.start()
        for item in (job("a0"), job("a1"), job("a2"), job("s1", "sync")):
            assert await queue.submit(item) == "accepted"
            await asyncio.sleep(0)  # a0 is taken at once
        scored_first = await queue.wait("s1", 5)  # by the sync-only worker, while a0 still holds the other
        waiting = asyncio.gather(*(queue.wait(i, 5) for i in ("a0", "a1", "a2")))
        release.set()
        finished = [scored_first, *await waiting]
        await queue.stop()
        return finished

    finished = asyncio.run(scenario())
    assert order == ["s1", "a0", "a1", "a2"]
    assert [r.status if r else None for r in finished] == ["done"] * 4
    assert overtaken == [2]
