"""A scoring job's policy (``JobPolicy``): typed, so a job written before it still reads, and malformed RAG labels
are refused where they arrive instead of being read as "not given", as a lenient reader would."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from exporters import RedisRecordStore
from scoring.redis_queue import RedisStreamWorker, StreamKeys
from scoring.settings import QueueSettings
from scoring.types import JobPolicy, RagLabels, RecordScope, ScoringJob, TrustRecord
from tests.redis_server import RedisServer
from tests.worker_events import RecordedEvents


def job_json(policy: Any) -> str:
    """A job as the queue and the Redis stream carry it, with ``policy`` as written."""
    return json.dumps(
        {
            "id": "job-1",
            "model": "fake",
            "question": "How tall is it?",
            "answer": "330 m [1].",
            "documents": [{"id": "a", "title": "Tower", "text": "It is 330 metres tall."}],
            "policy": policy,
        }
    )


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path).start()
    yield server
    server.stop()


@pytest.mark.unit
def test_a_job_written_before_the_typed_policy_reads_the_same() -> None:
    """The untyped shape an older gateway writes: a dict with the mode and, on a RAG request, the labels."""
    old = ScoringJob.model_validate_json(
        job_json({"mode": "sync", "rag": {"answerable": False, "reference_claims": ["It is 330 m."]}})
    )
    assert old.policy == JobPolicy(mode="sync", rag=RagLabels(False, ("It is 330 m.",)))
    assert ScoringJob.model_validate_json(job_json({"mode": "async"})).policy == JobPolicy()
    assert ScoringJob.model_validate_json(old.model_dump_json()) == old


@pytest.mark.unit
@pytest.mark.parametrize(
    "labels",
    [
        {"answerable": "yes"},
        {"answerable": 1},
        {"reference_claims": "It is tall."},
        {"reference_claims": ["It is tall.", "   "]},
        {"reference_claims": [42]},
        {"reference_claims": ["claim"] * 51},
        "answerable",
    ],
)
def test_malformed_labels_in_a_job_are_refused_not_read_as_not_given(labels: Any) -> None:
    with pytest.raises(ValidationError):
        ScoringJob.model_validate_json(job_json({"mode": "sync", "rag": labels}))


@pytest.mark.integration
def test_a_stream_entry_with_malformed_labels_is_dead_lettered_never_scored(redis_server: RedisServer) -> None:
    settings = QueueSettings(backend="redis", redis_url=redis_server.url, claim_idle_s=0.1, max_attempts=2)
    keys = StreamKeys(settings.redis_prefix)
    events = RecordedEvents()
    scored: list[ScoringJob] = []

    async def scenario() -> None:
        from redis.asyncio import Redis

        redis = Redis.from_url(redis_server.url, decode_responses=True, socket_timeout=2)
        store = RedisRecordStore(redis, prefix=settings.redis_prefix, ttl_s=600)

        async def score(job: ScoringJob) -> TrustRecord:
            scored.append(job)
            return TrustRecord.for_job(job, "done")

        worker = RedisStreamWorker(
            redis, store, settings, process=score, publish=store.put, consumer="w1", events=events, block_ms=100
        )
        await worker.ensure_group()
        await redis.xadd(keys.stream, {"job": job_json({"mode": "async", "rag": {"answerable": "yes"}})})
        stop = asyncio.Event()
        run = asyncio.create_task(worker.run(stop, grace_s=1))
        deadline = time.monotonic() + 15
        while not events.dead and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        stop.set()
        await run
        assert await store.get("job-1", scope=RecordScope.everyone()) is None
        await redis.aclose()

    asyncio.run(scenario())
    assert scored == [] and events.dead == ["unknown"]
    letters = [fields for _, fields in redis_server.client().xrange(keys.dead_letters)]
    assert [f.get("error") for f in letters] == ["malformed job entry"]
