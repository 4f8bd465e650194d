"""Sync first, end to end: a sync request's scoring job goes ahead of the async backlog, on both backends.

The memory backend through a real gateway over real sockets; the Redis backend
on a real redis-server, with the gateway's queue and a worker's consumer.
Async jobs are delayed, never dropped, and the delay is counted
(``trustgate_scoring_async_overtaken_total``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import httpx
import pytest

from exporters import RedisRecordStore
from scoring.redis_queue import RedisJobQueue, RedisStreamWorker, StreamKeys
from scoring.settings import QueueSettings
from scoring.types import RecordScope, ScoringJob, TrustRecord
from tests.fake_upstream import FakeUpstream
from tests.proxy.metric_samples import samples
from tests.proxy.scored_gateway import AUTH, AskingScorer, chat, scoring_config, wait_for_record
from tests.redis_server import RedisServer
from tests.servers import ServerThread
from tests.worker_events import RecordedEvents

pytestmark = pytest.mark.integration

OVERTAKEN = ("trustgate_scoring_async_overtaken_total", frozenset())


def test_a_sync_request_is_scored_before_the_async_backlog(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = scoring_config(
        fake_upstream.url,
        sync_timeout_s=30,  # type: ignore[attr-defined]
        queue={"concurrency": 1, "scorer_timeout_s": 10},
    )
    gateway = start_gateway(config, scorers=[AskingScorer("bc", 0.9, delay=1.0)])
    assert samples(gateway)[OVERTAKEN] == 0
    backlog = [chat(gateway, f"Who is async {i}?").headers["x-trust-id"] for i in range(3)]
    sync = chat(gateway, "Who is sync?", headers={"x-trustgate-mode": "sync"})
    assert sync.headers["x-trust-status"] == "done"
    finished = {record_id: wait_for_record(gateway, record_id, timeout=30)["finished_at"] for record_id in backlog}
    sync_finished = httpx.get(f"{gateway.url}/v1/trust/{sync.headers['x-trust-id']}", headers=AUTH).json()
    # async 0 was being scored when the sync job came; the sync job went ahead of async 1 and 2
    assert sync_finished["finished_at"] < min(finished[backlog[1]], finished[backlog[2]])
    assert samples(gateway)[OVERTAKEN] == 2


def _job(job_id: str, mode: str) -> ScoringJob:
    return ScoringJob(id=job_id, model="m", question="q", answer="a", policy={"mode": mode})


def test_a_redis_worker_takes_sync_jobs_first_and_the_bound_spans_both_lanes(redis_server: RedisServer) -> None:
    # one key's jobs only: the bound of the whole queue is what is looked at (queue.key_share has tests of its own)
    settings = QueueSettings(backend="redis", redis_url=redis_server.url, concurrency=1, max_size=5, key_share=1.0)
    events = RecordedEvents()
    order: list[str] = []

    async def scenario() -> tuple[list[str], int, list[TrustRecord | None]]:
        from redis.asyncio import Redis

        redis = Redis.from_url(redis_server.url, decode_responses=True, socket_timeout=2)
        store = RedisRecordStore(redis, prefix=settings.redis_prefix, ttl_s=600)
        queue = RedisJobQueue(redis, store, settings)
        outcomes = [
            await queue.submit(_job(job_id, mode))
            for job_id, mode in (
                ("a1", "async"),
                ("a2", "async"),
                ("a3", "async"),
                ("s1", "sync"),
                ("s2", "sync"),
                ("s3", "sync"),
                ("a4", "async"),
            )
        ]
        depth = await queue.depth()

        async def process(job: ScoringJob) -> TrustRecord:
            order.append(job.id)
            return TrustRecord.for_job(job, "done")

        worker = RedisStreamWorker(
            redis, store, settings, process=process, publish=store.put, consumer="w1", events=events, block_ms=100
        )
        stop = asyncio.Event()
        run = asyncio.create_task(worker.run(stop, grace_s=1))
        deadline = time.monotonic() + 15
        while len(order) < 5 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        stop.set()
        await run
        records = [await store.get(i, scope=RecordScope.everyone()) for i in ("a1", "a2", "a3", "s1", "s2")]
        await redis.aclose()
        return outcomes, depth, records

    outcomes, depth, records = asyncio.run(scenario())
    assert outcomes == ["accepted"] * 5 + ["shed", "shed"]  # 5 in all, whichever lane
    assert depth == 5
    assert sorted(order[:2]) == ["s1", "s2"] and order[2:] == ["a1", "a2", "a3"]  # s2 in the worker's reserve
    assert all(r is not None and r.status == "done" for r in records)
    assert events.overtaken == 6  # each sync job passed the three async jobs waiting
    client = redis_server.client()
    keys = StreamKeys(settings.redis_prefix)
    assert (client.xlen(keys.stream), client.xlen(keys.sync_stream)) == (0, 0)  # acknowledged and removed


def test_a_sync_job_whose_worker_died_is_reclaimed_first(redis_server: RedisServer) -> None:
    settings = QueueSettings(backend="redis", redis_url=redis_server.url, concurrency=1, claim_idle_s=0.1)
    keys = StreamKeys(settings.redis_prefix)
    events = RecordedEvents()
    order: list[str] = []

    async def scenario() -> None:
        from redis.asyncio import Redis

        redis = Redis.from_url(redis_server.url, decode_responses=True, socket_timeout=2)
        store = RedisRecordStore(redis, prefix=settings.redis_prefix, ttl_s=600)
        queue = RedisJobQueue(redis, store, settings)

        async def process(job: ScoringJob) -> TrustRecord:
            order.append(job.id)
            return TrustRecord.for_job(job, "done")

        worker = RedisStreamWorker(
            redis, store, settings, process=process, publish=store.put, consumer="w2", events=events, block_ms=100
        )
        await worker.ensure_group()
        for job_id, mode in (("a1", "async"), ("s1", "sync")):
            assert await queue.submit(_job(job_id, mode)) == "accepted"
        # a worker that read both and died before acknowledging either
        await redis.xreadgroup(keys.group, "dead", {keys.stream: ">", keys.sync_stream: ">"}, count=5)
        assert await queue.depth() == 2  # in hand is still backlog
        await asyncio.sleep(0.2)
        stop = asyncio.Event()
        run = asyncio.create_task(worker.run(stop, grace_s=1))
        deadline = time.monotonic() + 15
        while len(order) < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        stop.set()
        await run
        assert await queue.depth() == 0
        await redis.aclose()

    asyncio.run(scenario())
    assert order == ["s1", "a1"] and events.reclaimed == 2
    assert int(redis_server.client().xpending(keys.sync_stream, keys.group)["pending"]) == 0


def test_a_redis_worker_with_every_slot_taken_still_starts_a_sync_job(redis_server: RedisServer) -> None:
    settings = QueueSettings(backend="redis", redis_url=redis_server.url, concurrency=1)
    order: list[str] = []

    async def scenario() -> None:
        from redis.asyncio import Redis

        redis = Redis.from_url(redis_server.url, decode_responses=True, socket_timeout=2)
        store = RedisRecordStore(redis, prefix=settings.redis_prefix, ttl_s=600)
        queue = RedisJobQueue(redis, store, settings)
        release = asyncio.Event()

        async def process(job: ScoringJob) -> TrustRecord:
            order.append(f"start {job.id}")
            if job.id == "a1":
                await release.wait()  # holds the worker's one slot
            order.append(f"end {job.id}")
            return TrustRecord.for_job(job, "done")

        worker = RedisStreamWorker(
            redis, store, settings, process=process, publish=store.put, consumer="w3", block_ms=100
        )
        stop = asyncio.Event()
        run = asyncio.create_task(worker.run(stop, grace_s=1))
        for job_id, mode in (("a1", "async"), ("a2", "async")):
            assert await queue.submit(_job(job_id, mode)) == "accepted"
        deadline = time.monotonic() + 15
        while "start a1" not in order and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert await queue.submit(_job("s1", "sync")) == "accepted"
        assert await queue.wait("s1", 10) is not None  # scored while a1 still holds the slot
        release.set()
        assert await queue.wait("a2", 10) is not None
        stop.set()
        await run
        await redis.aclose()

    asyncio.run(scenario())
    assert order == ["start a1", "start s1", "end s1", "end a1", "start a2", "end a2"]
