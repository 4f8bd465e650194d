"""Scale-out on a real Redis: gateway → stream → worker processes → shared records, and what happens when parts die."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import httpx
import pytest
import redis

from exporters import RedisRecordStore
from scoring.redis_queue import RedisStreamWorker, StreamKeys
from scoring.settings import QueueSettings
from scoring.types import RecordScope, ScoringJob, TrustRecord
from tests.conftest import MASTER_KEY
from tests.proxy.metric_samples import samples
from tests.proxy.redis_gateway import RedisDeployment, chat, start_ready_worker
from tests.proxy.scored_gateway import wait_for_record
from tests.redis_server import RedisServer, free_port
from tests.worker_events import RecordedEvents

pytestmark = pytest.mark.integration

AUTH = {"authorization": f"Bearer {MASTER_KEY}"}


def pending_jobs(server: RedisServer) -> int:
    """Jobs delivered to a worker and not yet acknowledged (0 before any worker made the group)."""
    keys = StreamKeys("trustgate")
    try:
        return int(server.client().xpending(keys.stream, keys.group)["pending"])
    except redis.ResponseError:
        return 0


def wait_until_a_worker_holds_a_job(server: RedisServer) -> None:
    deadline = time.monotonic() + 20
    while pending_jobs(server) == 0:
        assert time.monotonic() < deadline, "no worker took a job"
        time.sleep(0.05)


def test_jobs_flow_through_the_stream_to_a_worker_and_back(
    redis_deployment: RedisDeployment, redis_server: RedisServer
) -> None:
    config = redis_deployment.config()
    gateway = redis_deployment.gateway(config)  # the gateway's own scorers never run
    worker = redis_deployment.start_worker(config)
    response = chat(gateway, "flow", mode="sync")
    assert response.headers["x-trust-status"] == "done" and response.headers["x-trust-score"] == "0.8000"
    record = wait_for_record(gateway, response.headers["x-trust-id"])
    assert record["components"]["bc"]["details"] == {
        "worker_pid": worker.pid,
        "heard": "You said: check: You said: flow",
    }
    replica = redis_deployment.gateway(config)  # any replica reads the shared record
    assert httpx.get(f"{replica.url}/v1/trust/{record['id']}", headers=AUTH).json() == record
    assert redis_server.client().xlen(StreamKeys("trustgate").stream) == 0  # acknowledged and removed


def test_two_workers_share_the_load(redis_deployment: RedisDeployment) -> None:
    config = redis_deployment.config()
    gateway = redis_deployment.gateway(config)
    workers = {start_ready_worker(redis_deployment.start_worker, config, 0.3) for _ in range(2)}
    ids = [chat(gateway, f"job {i}").headers["x-trust-id"] for i in range(12)]
    scored_by = [wait_for_record(gateway, i, timeout=30)["components"]["bc"]["details"]["worker_pid"] for i in ids]
    assert set(scored_by) == workers
    assert min(scored_by.count(pid) for pid in workers) >= 3


def test_a_killed_worker_loses_nothing(redis_deployment: RedisDeployment, redis_server: RedisServer) -> None:
    config = redis_deployment.config()
    gateway = redis_deployment.gateway(config)
    doomed = redis_deployment.start_worker(config, 30.0)  # takes a job and sits on it
    ids = [chat(gateway, f"job {i}").headers["x-trust-id"] for i in range(3)]
    wait_until_a_worker_holds_a_job(redis_server)
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.wait(timeout=10)
    survivor = redis_deployment.start_worker(config, 0.0)
    records = [wait_for_record(gateway, i, timeout=30) for i in ids]
    assert all(r["status"] == "done" and r["score"] == 0.8 for r in records)
    assert {r["components"]["bc"]["details"]["worker_pid"] for r in records} == {survivor.pid}
    assert pending_jobs(redis_server) == 0


def test_graceful_shutdown_finishes_the_job_in_hand(
    redis_deployment: RedisDeployment, redis_server: RedisServer
) -> None:
    config = redis_deployment.config()
    gateway = redis_deployment.gateway(config)
    worker = redis_deployment.start_worker(config, 1.5)
    record_id = chat(gateway, "finish me").headers["x-trust-id"]
    wait_until_a_worker_holds_a_job(redis_server)
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=20) == 0
    assert wait_for_record(gateway, record_id, timeout=1)["status"] == "done"


def test_a_full_stream_sheds_new_jobs(redis_deployment: RedisDeployment, redis_server: RedisServer) -> None:
    # one key fills it: the whole bound is what is looked at (queue.key_share has tests of its own)
    config = redis_deployment.config(max_size=3, key_share=1.0)
    gateway = redis_deployment.gateway(config)  # no worker: the backlog only grows
    statuses = [chat(gateway, f"q{i}").headers["x-trust-status"] for i in range(5)]
    assert statuses == ["pending"] * 3 + ["shed"] * 2
    assert redis_server.client().xlen(StreamKeys("trustgate").stream) == 3


def test_worker_serves_its_own_metrics(redis_deployment: RedisDeployment) -> None:
    config = redis_deployment.config()
    gateway = redis_deployment.gateway(config)
    port = free_port()
    redis_deployment.start_worker(config, 0.0, "--metrics-port", str(port))
    chat(gateway, "count me", mode="sync")
    text = httpx.get(f"http://127.0.0.1:{port}/metrics").text
    assert 'trustgate_scoring_jobs_total{model="fake",status="done"} 1.0' in text
    assert 'trustgate_upstream_calls_total{model="fake",purpose="bc"} 1.0' in text


def test_repeatedly_failing_jobs_go_to_the_dead_letter_stream(redis_server: RedisServer) -> None:
    settings = QueueSettings(
        backend="redis", redis_url=redis_server.url, claim_idle_s=0.1, max_attempts=2, concurrency=2
    )
    keys = StreamKeys(settings.redis_prefix)
    events = RecordedEvents()

    async def scenario() -> list[TrustRecord | None]:
        from redis.asyncio import Redis

        redis = Redis.from_url(redis_server.url, decode_responses=True, socket_timeout=2)
        store = RedisRecordStore(redis, prefix=settings.redis_prefix, ttl_s=600)

        async def always_fails(job: ScoringJob) -> TrustRecord:
            raise ValueError(f"cannot score {job.id}")

        worker = RedisStreamWorker(
            redis, store, settings, process=always_fails, publish=store.put, consumer="w1", events=events, block_ms=100
        )
        await worker.ensure_group()
        for job_id in ("j1", "j2"):
            await redis.xadd(
                keys.stream,
                {"job": ScoringJob(id=job_id, model=f"model-{job_id}", question="q", answer="a").model_dump_json()},
            )
        await redis.xadd(keys.stream, {"not-a-job": "x"})
        stop = asyncio.Event()
        run = asyncio.create_task(worker.run(stop, grace_s=1))
        deadline = time.monotonic() + 15
        while len(events.dead) < 3 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        stop.set()
        await run
        records = [await store.get(i, scope=RecordScope.everyone()) for i in ("j1", "j2")]
        await redis.aclose()
        return records

    records = asyncio.run(scenario())
    assert sorted(events.dead) == ["model-j1", "model-j2", "unknown"]  # "unknown": the malformed entry
    client = redis_server.client()
    letters = [fields for _, fields in client.xrange(keys.dead_letters)]
    assert sorted(f.get("error", "") for f in letters) == [
        "ValueError: cannot score j1",
        "ValueError: cannot score j2",
        "malformed job entry",
    ]
    assert all(
        r is not None and r.status == "failed" and "dead-lettered after 2 attempts" in (r.error or "") for r in records
    )
    assert pending_jobs(redis_server) == 0


def test_redis_restart_degrades_scoring_but_never_user_traffic(
    redis_deployment: RedisDeployment, redis_server: RedisServer, tmp_path: Path
) -> None:
    config = redis_deployment.config(redis_timeout_s=0.5)
    gateway = redis_deployment.gateway(config)
    redis_deployment.start_worker(config)
    assert chat(gateway, "before", mode="sync").headers["x-trust-status"] == "done"
    redis_server.stop()
    during = [chat(gateway, f"during {i}", mode="sync") for i in range(3)]
    assert all(
        r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == f"You said: during {i}"
        for i, r in enumerate(during)
    )
    assert {r.headers["x-trust-status"] for r in during} == {"shed"}
    restarted = RedisServer(tmp_path, port=redis_server.port).start()
    try:
        deadline = time.monotonic() + 20
        while chat(gateway, "after", mode="sync").headers["x-trust-status"] != "done":
            assert time.monotonic() < deadline, "scoring did not recover after Redis came back"
            time.sleep(0.2)
        unavailable = frozenset({"model": "fake", "reason": "queue_unavailable"}.items())
        shed = samples(gateway)[("trustgate_scoring_shed_jobs_total", unavailable)]
        assert shed >= 3
    finally:
        restarted.stop()
