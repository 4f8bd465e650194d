"""Feedback in the record stores: labels kept beside records, scoped like reads, on SQLite and on a real Redis."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from exporters.record_query import RecordQuery
from exporters.record_summary import LabelCount
from exporters.redis_store import RedisRecordStore
from exporters.store import SqliteRecordStore
from scoring.types import Feedback, FeedbackRefused, RecordScope, TrustRecord, TrustStatus
from tests.exporters.stores import Scenario, Store, emptied_redis
from tests.redis_server import RedisServer

EVERYONE = RecordScope.everyone()
ALICE = RecordScope.owned_by("alice")


def record(
    record_id: str, *, owner: str = "alice", model: str = "m", status: TrustStatus = "done", age_s: float = 10.0
) -> TrustRecord:
    return TrustRecord(
        id=record_id,
        status=status,
        model=model,
        owner=owner,
        score=0.7,
        label="trusted",
        created_at=time.time() - age_s,
        question="Capital of France?",
        answer="Paris",
    )


def label(correct: bool, at: float | None = None, **fields: Any) -> Feedback:
    return Feedback(correct=correct, labelled_at=time.time() if at is None else at, **fields)


@pytest.mark.integration
def test_a_label_is_kept_with_its_time_and_read_back_everywhere(run: Callable[[Scenario], None]) -> None:
    async def scenario(store: Store) -> None:
        await store.put(record("a"))
        given = label(False, score=0.2, comment="Lyon is not the capital")
        labelled = await store.set_feedback("a", given, scope=ALICE)
        assert labelled is not None and labelled.record.feedback == given and labelled.record.score == 0.7
        assert labelled.previous is None  # its first label
        for scope in (ALICE, EVERYONE):
            got = await store.get("a", scope=scope)
            assert got is not None and got.feedback == given
        page = await store.list_records(RecordQuery(), scope=ALICE)
        assert [r.feedback for r in page.data] == [given]

    run(scenario)


@pytest.mark.integration
def test_the_latest_label_wins_and_a_rewritten_record_keeps_it(run: Callable[[Scenario], None]) -> None:
    async def scenario(store: Store) -> None:
        await store.put(record("a"))
        first = label(True, at=100.0)
        await store.set_feedback("a", first, scope=ALICE)
        latest = label(False, at=200.0)
        relabelled = await store.set_feedback("a", latest, scope=EVERYONE)  # the master key labels any record
        assert relabelled is not None and relabelled.previous == first  # a relabel says what it replaced
        await store.put(record("a"))  # a redelivered job writes the record again
        got = await store.get("a", scope=ALICE)
        assert got is not None and got.feedback == latest

    run(scenario)


@pytest.mark.integration
def test_another_owner_or_an_unknown_id_labels_nothing(run: Callable[[Scenario], None]) -> None:
    async def scenario(store: Store) -> None:
        await store.put(record("a", owner="alice"))
        assert await store.set_feedback("a", label(True), scope=RecordScope.owned_by("bob")) is None
        assert await store.set_feedback("nope", label(True), scope=EVERYONE) is None
        got = await store.get("a", scope=EVERYONE)
        assert got is not None and got.feedback is None
        assert await store.get("nope", scope=EVERYONE) is None  # no record was made for the unknown id
        assert await store.labelled("m") == []

    run(scenario)


@pytest.mark.integration
@pytest.mark.parametrize("status", ["pending", "skipped", "shed"])
def test_a_record_that_was_not_scored_takes_no_label(run: Callable[[Scenario], None], status: TrustStatus) -> None:
    async def scenario(store: Store) -> None:
        await store.put(record("a", status=status))
        with pytest.raises(FeedbackRefused) as refused:
            await store.set_feedback("a", label(True), scope=ALICE)
        assert refused.value.status == status
        got = await store.get("a", scope=ALICE)
        assert got is not None and got.feedback is None
        assert await store.labelled("m") == []

    run(scenario)


@pytest.mark.integration
def test_a_failed_record_takes_a_label(run: Callable[[Scenario], None]) -> None:
    """Scoring failed part-way, but the answer went out: whether it was right is still worth knowing."""

    async def scenario(store: Store) -> None:
        await store.put(record("a", status="failed"))
        assert await store.set_feedback("a", label(True), scope=ALICE) is not None
        assert [r.id for r in await store.labelled("m")] == ["a"]

    run(scenario)


@pytest.mark.integration
def test_labelled_lists_one_models_labelled_records_newest_label_first(run: Callable[[Scenario], None]) -> None:
    async def scenario(store: Store) -> None:
        for record_id, owner, model in (
            ("a", "alice", "m"),
            ("b", "bob", "m"),
            ("c", "alice", "m"),
            ("d", "alice", "other"),
            ("e", "alice", "m"),
        ):
            await store.put(record(record_id, owner=owner, model=model))
        await store.set_feedback("b", label(True, at=300.0), scope=EVERYONE)
        await store.set_feedback("a", label(False, at=100.0), scope=ALICE)
        await store.set_feedback("c", label(True, at=200.0), scope=ALICE)
        await store.set_feedback("d", label(True, at=400.0), scope=ALICE)
        await store.set_feedback("a", label(True, at=500.0), scope=ALICE)  # relabelled: now the newest
        got = await store.labelled("m")
        assert [r.id for r in got] == ["a", "b", "c"]  # every owner's; e has no label, d is another model's
        assert [r.feedback.correct for r in got if r.feedback] == [True, True, True]
        assert [r.id for r in await store.labelled("m", limit=2)] == ["a", "b"]
        assert [r.id for r in await store.labelled("other")] == ["d"]
        assert await store.labelled("unknown") == []

    run(scenario)


@pytest.mark.integration
def test_labelled_by_reads_the_labels_those_keys_gave_and_still_give(run: Callable[[Scenario], None]) -> None:
    async def scenario(store: Store) -> None:
        for record_id in "abcd":
            await store.put(record(record_id))
        await store.set_feedback("a", label(True, at=100.0, by="master"), scope=EVERYONE)
        await store.set_feedback("b", label(True, at=200.0, by="alice"), scope=ALICE)
        await store.set_feedback("c", label(True, at=300.0, by="ops"), scope=EVERYONE)
        await store.set_feedback("d", label(True, at=400.0, by="master"), scope=EVERYONE)
        await store.set_feedback("d", label(False, at=500.0, by="alice"), scope=ALICE)  # its owner relabels it
        assert [r.id for r in await store.labelled("m", by=frozenset({"master", "ops"}))] == ["c", "a"]
        assert [r.id for r in await store.labelled("m", by=frozenset({"alice"}))] == ["d", "b"]
        assert [r.id for r in await store.labelled("m", limit=1, by=frozenset({"master", "ops"}))] == ["c"]
        assert [r.id for r in await store.labelled("m")] == ["d", "c", "b", "a"]
        assert await store.label_counts(by=frozenset({"master", "ops"})) == [LabelCount("m", 2, 2)]
        assert await store.label_counts(by=frozenset({"alice"})) == [LabelCount("m", 2, 1)]
        assert await store.label_counts(by=frozenset({"bob"})) == []
        assert await store.label_counts() == [LabelCount("m", 4, 3)]

    run(scenario)


@pytest.mark.integration
def test_listing_filters_labelled_and_unlabelled(run: Callable[[Scenario], None]) -> None:
    async def scenario(store: Store) -> None:
        for i, record_id in enumerate(("a", "b", "c")):
            await store.put(record(record_id, age_s=30.0 - i))
        await store.set_feedback("b", label(True), scope=ALICE)

        async def listed(**filters: Any) -> list[str]:
            return [r.id for r in (await store.list_records(RecordQuery(**filters), scope=ALICE)).data]

        assert await listed() == ["c", "b", "a"]
        assert await listed(labelled=True) == ["b"]
        assert await listed(labelled=False) == ["c", "a"]

    run(scenario)


@pytest.mark.unit
def test_feedback_is_validated() -> None:
    with pytest.raises(ValidationError):
        Feedback.model_validate({"correct": "true", "labelled_at": 1.0})
    with pytest.raises(ValidationError):
        Feedback(correct=True, score=1.5, labelled_at=1.0)
    with pytest.raises(ValidationError):
        Feedback(correct=True, comment="x" * 1001, labelled_at=1.0)
    assert Feedback(correct=True, comment="x" * 1000, score=0.0, labelled_at=1.0).comment == "x" * 1000


@pytest.mark.unit
def test_an_sqlite_store_from_before_feedback_is_migrated(tmp_path: Path) -> None:
    """A store written by the previous version (no feedback column, records without the field) reads and labels."""
    path = tmp_path / "old.db"
    old = record("old").model_dump_json(exclude={"feedback"})
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE trust_records (id TEXT PRIMARY KEY, created_at REAL NOT NULL, record TEXT NOT NULL,"
            " owner TEXT)"
        )
        db.execute("INSERT INTO trust_records VALUES (?, ?, ?, ?)", ("old", time.time(), old, "alice"))

    async def scenario() -> None:
        store = SqliteRecordStore(path, max_age_s=3600, max_records=10)
        await store.open()
        got = await store.get("old", scope=ALICE)
        assert got is not None and got.feedback is None
        await store.set_feedback("old", label(True), scope=ALICE)
        assert [r.id for r in await store.labelled("m")] == ["old"]
        await store.close()

    asyncio.run(scenario())


@pytest.mark.integration
def test_redis_skips_a_labelled_record_that_expired(redis_server: RedisServer) -> None:
    async def scenario() -> None:
        async with emptied_redis(redis_server.url) as redis:
            store = RedisRecordStore(redis, prefix="x", ttl_s=3600)
            for record_id in ("a", "b"):
                await store.put(record(record_id))
                await store.set_feedback(record_id, label(True), scope=ALICE)
            await redis.delete("x:record:a")  # as its TTL would
            assert [r.id for r in await store.labelled("m")] == ["b"]

    asyncio.run(scenario())
