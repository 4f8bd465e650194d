"""Redis-mode observability on a real redis-server: the stream's backlog as the queue depth (gateway and
worker), the worker's own metrics and probes, and the sync-timeout counter."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import httpx
import pytest

from exporters import RedisRecordStore
from scoring.redis_queue import RedisStreamWorker, StreamKeys
from scoring.request_context import current_request_id
from scoring.settings import QueueSettings
from scoring.types import ScoringJob, TrustRecord
from tests.fake_upstream import FakeUpstream
from tests.proxy.metric_samples import samples
from tests.proxy.redis_gateway import RedisDeployment, chat
from tests.proxy.scored_gateway import chat as memory_chat
from tests.proxy.scored_gateway import one_after_the_other, scoring_config
from tests.redis_server import RedisServer, free_port
from tests.servers import ServerThread
from tests.worker_events import RecordedEvents

pytestmark = pytest.mark.integration

DEPTH = ("trustgate_scoring_queue_depth", frozenset())


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def metric(url: str, name: str, **labels: str) -> float | None:
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(f"{url}/metrics", timeout=5).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    return None


def probe(url: str, path: str) -> int:
    try:
        return httpx.get(f"{url}{path}", timeout=2).status_code
    except httpx.TransportError:
        return 0


def test_jobs_waiting_with_no_worker_are_the_queue_depth(redis_deployment: RedisDeployment) -> None:
    config = redis_deployment.config()
    gateway = redis_deployment.gateway(config)
    replica = redis_deployment.gateway(config)
    assert samples(gateway)[DEPTH] == 0  # no stream yet
    for i in range(7):
        assert chat(gateway, f"wait {i}").headers["x-trust-status"] == "pending"
    assert samples(gateway)[DEPTH] == 7
    assert samples(replica)[DEPTH] == 7, "every replica reports the shared backlog, not its own"


def test_the_backlog_counts_jobs_in_hand_until_they_are_acknowledged(redis_server: RedisServer) -> None:
    """lag + pending: a job a worker holds is still backlog; an acknowledged one is not."""
    settings = QueueSettings(backend="redis", redis_url=redis_server.url, concurrency=2)
    keys = StreamKeys(settings.redis_prefix)

    async def scenario() -> list[int]:
        from redis.asyncio import Redis

        redis = Redis.from_url(redis_server.url, decode_responses=True, socket_timeout=2)
        store = RedisRecordStore(redis, prefix=settings.redis_prefix, ttl_s=600)
        release = asyncio.Event()

        async def slow(job: ScoringJob) -> TrustRecord:
            await release.wait()
            return TrustRecord(id=job.id, status="done", model=job.model)

        worker = RedisStreamWorker(redis, store, settings, process=slow, publish=store.put, consumer="w1", block_ms=50)
        for i in range(5):
            await redis.xadd(
                keys.stream, {"job": ScoringJob(id=f"j{i}", model="m", question="q", answer="a").model_dump_json()}
            )
        seen = [await worker.depth()]  # no group yet: the whole stream
        await worker.ensure_group()
        seen.append(await worker.depth())  # a group that has read nothing: all lag
        stop = asyncio.Event()
        run = asyncio.create_task(worker.run(stop, grace_s=5))
        while len(await redis.xpending_range(keys.stream, keys.group, min="-", max="+", count=10)) < 2:
            await asyncio.sleep(0.02)
        seen.append(await worker.depth())  # 3 undelivered + 2 in hand
        release.set()
        while await redis.xlen(keys.stream):
            await asyncio.sleep(0.02)
        seen.append(await worker.depth())
        stop.set()
        await run
        await redis.aclose()
        return seen

    assert asyncio.run(scenario()) == [5, 5, 5, 0]


def test_worker_metrics_and_probes(redis_deployment: RedisDeployment, redis_server: RedisServer) -> None:
    config = redis_deployment.config(redis_timeout_s=0.5)
    gateway = redis_deployment.gateway(config)
    for i in range(3):
        chat(gateway, f"before the worker {i}")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    redis_deployment.start_worker(config, 0.2, "--metrics-port", str(port))
    wait_for(lambda: probe(url, "/health/readiness") == 200, "worker readiness")
    assert probe(url, "/health/liveness") == 200
    wait_for(lambda: metric(url, "trustgate_worker_jobs_total", outcome="done") == 3, "three jobs done")
    assert metric(url, "trustgate_worker_jobs_in_flight") == 0
    assert metric(url, "trustgate_worker_job_duration_seconds_count", outcome="done") == 3
    assert (metric(url, "trustgate_worker_job_duration_seconds_sum", outcome="done") or 0) >= 3 * 0.2
    assert metric(url, "trustgate_scoring_queue_depth") == 0
    assert metric(url, "trustgate_worker_jobs_reclaimed_total") == 0
    redis_server.stop()
    wait_for(lambda: probe(url, "/health/readiness") == 503, "readiness to fail without Redis")
    assert probe(url, "/health/liveness") == 200, "a Redis outage is not a reason to restart the worker"


def test_retries_reclaims_and_dead_letters_are_reported(redis_server: RedisServer) -> None:
    settings = QueueSettings(
        backend="redis", redis_url=redis_server.url, claim_idle_s=0.1, max_attempts=2, concurrency=1
    )
    keys = StreamKeys(settings.redis_prefix)
    events = RecordedEvents()

    async def scenario() -> None:
        from redis.asyncio import Redis

        redis = Redis.from_url(redis_server.url, decode_responses=True, socket_timeout=2)
        store = RedisRecordStore(redis, prefix=settings.redis_prefix, ttl_s=600)

        async def always_fails(job: ScoringJob) -> TrustRecord:
            raise ValueError("no")

        worker = RedisStreamWorker(
            redis, store, settings, process=always_fails, publish=store.put, consumer="w1", events=events, block_ms=50
        )
        await worker.ensure_group()
        await redis.xadd(
            keys.stream, {"job": ScoringJob(id="j1", model="m", question="q", answer="a").model_dump_json()}
        )
        stop = asyncio.Event()
        run = asyncio.create_task(worker.run(stop, grace_s=1))
        deadline = time.monotonic() + 15
        while not events.dead and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        stop.set()
        await run
        await redis.aclose()

    asyncio.run(scenario())
    assert events.dead == ["m"]
    assert events.outcomes == ["retry", "retry", "dead_letter"]  # two deliveries failed; the third gave up
    assert events.reclaimed == 2 and events.in_flight == 0


@pytest.mark.parametrize("timeout_s, expected", [(1.1, 1.0), (5.0, 0.0)])  # the series exists from start-up
def test_sync_responses_that_outlast_the_timeout_are_counted(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], timeout_s: float, expected: float
) -> None:
    config = scoring_config(fake_upstream.url, mode="sync", sync_timeout_s=timeout_s)  # type: ignore[attr-defined]
    gateway = start_gateway(config, scorers=one_after_the_other(0.6))  # 1.2 s at least, each within 1 s
    status = memory_chat(gateway).headers["x-trust-status"]
    assert status == ("pending" if expected else "done")
    assert (
        samples(gateway).get(("trustgate_scoring_sync_timeouts_total", frozenset({"model": "fake"}.items())))
        == expected
    )


def test_a_worker_scores_each_job_under_its_requests_id(redis_server: RedisServer) -> None:
    """A worker's lines while it scores a job (its scorers', litellm's) name the request whose answer it is."""
    settings = QueueSettings(backend="redis", redis_url=redis_server.url, concurrency=1)
    keys = StreamKeys(settings.redis_prefix)
    working_for: list[str] = []

    async def scenario() -> None:
        from redis.asyncio import Redis

        redis = Redis.from_url(redis_server.url, decode_responses=True, socket_timeout=2)
        store = RedisRecordStore(redis, prefix=settings.redis_prefix, ttl_s=600)

        async def noting(job: ScoringJob) -> TrustRecord:
            working_for.append(current_request_id.get())
            return TrustRecord(id=job.id, status="done", model=job.model)

        worker = RedisStreamWorker(
            redis, store, settings, process=noting, publish=store.put, consumer="w1", block_ms=50
        )
        await worker.ensure_group()
        for i, request_id in enumerate(["client-id.1", None]):
            await redis.xadd(
                keys.stream,
                {
                    "job": ScoringJob(
                        id=f"j{i}", model="m", question="q", answer="a", request_id=request_id
                    ).model_dump_json()
                },
            )
        stop = asyncio.Event()
        run = asyncio.create_task(worker.run(stop, grace_s=1))
        deadline = time.monotonic() + 15
        while len(working_for) < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        stop.set()
        await run
        await redis.aclose()

    asyncio.run(scenario())
    assert working_for == ["client-id.1", "-"]
    assert current_request_id.get() == "-"
