"""Listing and summarising trust records: the same filters, pages and owners on SQLite and on a real Redis."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from exporters import redis_store
from exporters.record_query import RecordPage, RecordQuery, decode_cursor
from exporters.redis_store import RedisRecordStore
from exporters.store import SqliteRecordStore
from scoring.types import ComponentResult, RecordScope, TrustRecord
from tests.exporters.stores import Scenario, Store, emptied_redis
from tests.redis_server import RedisServer

NOW = time.time()
EVERYONE = RecordScope.everyone()


def record(
    i: int,
    *,
    owner: str = "alice",
    model: str = "m",
    label: str | None = "trusted",
    score: float | None = 0.9,
    bc: float | None = 0.8,
    error: str | None = None,
    status: str = "done",
    age_s: float | None = None,
) -> TrustRecord:
    components = {} if bc is None else {"bc": ComponentResult(component="bc", value=bc)}
    return TrustRecord(
        id=f"r{i:05d}",
        status=status,
        model=model,
        owner=owner,
        label=label,  # type: ignore[arg-type]
        score=score,
        error=error,
        components=components,
        created_at=NOW - (age_s if age_s is not None else 1000 - i),
    )


async def fill(store: Store, records: list[TrustRecord]) -> None:
    for r in records:
        await store.put(r)


async def all_pages(store: Store, owner: str | None = None, **filters: Any) -> list[list[str]]:
    scope = RecordScope(owner)
    pages, cursor = [], None
    for _ in range(100):
        page: RecordPage = await store.list_records(RecordQuery(**filters, cursor=cursor), scope=scope)
        pages.append([r.id for r in page.data])
        if page.next_cursor is None:
            return pages
        cursor = page.next_cursor
    raise AssertionError("paging did not end")


def flat(pages: list[list[str]]) -> list[str]:
    return [record_id for page in pages for record_id in page]


def ids(*numbers: int) -> list[str]:
    return [f"r{i:05d}" for i in numbers]


@pytest.mark.integration
def test_pages_newest_first_without_repeats(run: Callable[[Scenario], None]) -> None:
    async def scenario(store: Store) -> None:
        await fill(store, [record(i) for i in range(25)])
        assert await all_pages(store, limit=10) == [ids(*range(24, 14, -1)), ids(*range(14, 4, -1)), ids(4, 3, 2, 1, 0)]

    run(scenario)


@pytest.mark.integration
def test_pages_are_stable_when_records_arrive_between_them(run: Callable[[Scenario], None]) -> None:
    async def scenario(store: Store) -> None:
        await fill(store, [record(i) for i in range(10)])
        first = await store.list_records(RecordQuery(limit=4), scope=EVERYONE)
        await fill(store, [record(i) for i in range(10, 15)])  # newer than everything listed
        second = await store.list_records(RecordQuery(limit=4, cursor=first.next_cursor), scope=EVERYONE)
        assert [r.id for r in first.data] == ids(9, 8, 7, 6)
        assert [r.id for r in second.data] == ids(5, 4, 3, 2)

    run(scenario)


@pytest.mark.integration
def test_records_of_the_same_instant_are_neither_repeated_nor_lost(run: Callable[[Scenario], None]) -> None:
    async def scenario(store: Store) -> None:
        await fill(store, [record(i, age_s=5.0) for i in range(7)] + [record(7, age_s=1.0)])
        assert await all_pages(store, limit=3) == [ids(7, 6, 5), ids(4, 3, 2), ids(1, 0)]

    run(scenario)


@pytest.mark.integration
def test_each_filter(run: Callable[[Scenario], None]) -> None:
    async def scenario(store: Store) -> None:
        await fill(
            store,
            [
                record(0, model="a", label="trusted", score=0.9, bc=1.0),
                record(1, model="b", label="untrusted", score=0.1, bc=0.0, error="fc: timeout"),
                record(2, model="a", label="uncertain", score=0.5, bc=0.5),
                record(3, model="b", label=None, score=None, bc=None, status="shed", error="scoring queue full"),
                record(4, model="a", label="untrusted", score=0.3, bc=1.0, age_s=7200),
            ],
        )

        async def listed(**filters: Any) -> list[str]:
            return [r.id for r in (await store.list_records(RecordQuery(**filters), scope=EVERYONE)).data]

        assert await listed(model="a") == ids(2, 0, 4)
        assert await listed(label="untrusted") == ids(1, 4)
        assert await listed(status="shed") == ids(3)
        assert await listed(has_error=True) == ids(3, 1)
        assert await listed(has_error=False) == ids(2, 0, 4)
        assert await listed(min_score=0.3, max_score=0.5) == ids(2, 4)
        assert await listed(score_of="bc", min_score=1.0) == ids(0, 4)
        assert await listed(score_of="bc", max_score=0.0) == ids(1)
        assert await listed(since=datetime.fromtimestamp(NOW - 3600, UTC)) == ids(3, 2, 1, 0)
        assert await listed(until=NOW - 3600) == ids(4)
        assert await listed(model="a", label="untrusted", until=NOW) == ids(4)
        assert await listed(model="nobody") == []

    run(scenario)


@pytest.mark.integration
def test_a_filtered_listing_pages_through_the_matches(run: Callable[[Scenario], None]) -> None:
    async def scenario(store: Store) -> None:
        await fill(store, [record(i, label="untrusted" if i % 3 == 0 else "trusted") for i in range(30)])
        pages = await all_pages(store, label="untrusted", limit=4)
        assert flat(pages) == ids(*range(27, -1, -3))
        assert [len(p) for p in pages] == [4, 4, 2]

    run(scenario)


@pytest.mark.integration
def test_an_owner_sees_only_its_records(run: Callable[[Scenario], None]) -> None:
    async def scenario(store: Store) -> None:
        await fill(store, [record(i, owner="alice" if i % 2 else "bob") for i in range(10)])
        assert flat(await all_pages(store, owner="bob", limit=3)) == ids(8, 6, 4, 2, 0)
        assert flat(await all_pages(store, owner="alice", limit=3)) == ids(9, 7, 5, 3, 1)
        assert len(flat(await all_pages(store, owner=None, limit=3))) == 10
        assert (await store.list_records(RecordQuery(), scope=RecordScope.owned_by("carol"))).data == []
        summary = await store.summary(scope=RecordScope.owned_by("bob"), since=NOW - 2000, until=NOW, buckets=4)
        assert summary.total == 5

    run(scenario)


@pytest.mark.integration
def test_summary_counts_labels_models_histogram_and_rate(run: Callable[[Scenario], None]) -> None:
    async def scenario(store: Store) -> None:
        await fill(
            store,
            [
                record(0, model="a", label="trusted", score=0.95, age_s=3500),
                record(1, model="a", label="untrusted", score=0.05, age_s=3500),
                record(2, model="b", label="untrusted", score=0.2, age_s=100),
                record(3, model="b", label=None, score=None, status="failed", age_s=100),
                record(4, model="b", label="trusted", score=1.0, age_s=9000),  # outside the window
            ],
        )
        summary = await store.summary(scope=EVERYONE, since=NOW - 3600, until=NOW, buckets=2)
        assert summary.total == 4 and not summary.truncated
        assert summary.by_label == {"trusted": 1, "untrusted": 2, "none": 1}
        assert summary.models["a"].histogram == [1, 0, 0, 0, 0, 0, 0, 0, 0, 1]
        assert summary.models["b"].by_label == {"untrusted": 1, "none": 1}
        assert [(b.scored, b.untrusted, b.rate) for b in summary.low_trust] == [(2, 1, 0.5), (1, 1, 1.0)]

    run(scenario)


@pytest.mark.unit
def test_a_store_written_before_listings_gains_its_columns_on_open(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:  # the schema of a store from before listings (and before owners)
        db.execute("CREATE TABLE trust_records (id TEXT PRIMARY KEY, created_at REAL NOT NULL, record TEXT NOT NULL)")
        db.execute(
            "INSERT INTO trust_records VALUES (?, ?, ?)", ("r00001", NOW, record(1, owner="x").model_dump_json())
        )
    db.close()

    async def scenario() -> None:
        store = SqliteRecordStore(path, max_age_s=86400, max_records=100)
        await store.open()
        page = await store.list_records(RecordQuery(label="trusted"), scope=EVERYONE)
        assert [r.id for r in page.data] == ids(1)
        assert (await store.list_records(RecordQuery(), scope=RecordScope.owned_by("x"))).data == []  # no owner kept
        await store.close()

    asyncio.run(scenario())


@pytest.mark.unit
@pytest.mark.parametrize(
    "params",
    [
        {"limit": 0},
        {"limit": 201},
        {"label": "great"},
        {"status": "lost"},
        {"score_of": "xx"},
        {"min_score": 1.5},
        {"min_score": 0.8, "max_score": 0.2},
        {"since": "yesterday"},
        {"since": NOW, "until": NOW - 1},
        {"cursor": "not-a-cursor"},
        {"owner": "bob"},
    ],
)
def test_bad_filters_are_refused(params: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        RecordQuery.model_validate(params)


@pytest.mark.unit
def test_a_cursor_names_a_position() -> None:
    query = RecordQuery(limit=2)
    assert query.after is None
    with pytest.raises(ValueError):
        decode_cursor("WzEsMiwzXQ")  # [1,2,3]


@pytest.mark.integration
def test_a_redis_scan_stops_at_its_limit_and_the_cursor_goes_on(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_store, "SCAN_LIMIT", 7)

    async def scenario() -> None:
        async with emptied_redis(redis_server.url) as redis:
            store = RedisRecordStore(redis, prefix="s", ttl_s=3600)
            await fill(store, [record(i, label="untrusted" if i in (2, 17) else "trusted") for i in range(20)])
            first = await store.list_records(RecordQuery(label="untrusted"), scope=EVERYONE)
            assert [r.id for r in first.data] == ids(17) and first.next_cursor is not None  # read 7 of 20, then stopped
            assert flat(await all_pages(store, label="untrusted")) == ids(17, 2)

    asyncio.run(scenario())


@pytest.mark.integration
def test_redis_index_is_bounded_by_max_records_and_skips_expired_records(redis_server: RedisServer) -> None:
    async def scenario() -> None:
        async with emptied_redis(redis_server.url) as redis:
            store = RedisRecordStore(redis, prefix="b", ttl_s=3600, max_records=5)
            await fill(store, [record(i, owner="alice") for i in range(8)])
            assert await redis.zcard("b:records-by-time") == 5
            assert await redis.zcard("b:records-by-time:owner:alice") == 5
            await redis.delete("b:record:r00007")  # as if its TTL ran out before the index was trimmed
            page = await store.list_records(RecordQuery(), scope=RecordScope.owned_by("alice"))
            assert [r.id for r in page.data] == ids(6, 5, 4, 3)
            await store.put(record(99, owner="alice", age_s=7200))  # older than the TTL: trimmed at once
            assert await redis.zscore("b:records-by-time", "r00099") is None

    asyncio.run(scenario())
