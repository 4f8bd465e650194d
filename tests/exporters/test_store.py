"""The SQLite result store: retention by age and count, a bounded write queue, capped records, owners, migration."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from exporters.record_size import stored_json
from exporters.store import PRUNE_EXPIRED, PRUNE_OLDEST, SqliteRecordStore
from scoring.types import BCDetails, ComponentResult, RecordScope, TrustRecord

pytestmark = pytest.mark.unit

ALL = RecordScope.everyone()


def record(i: int, age_s: float = 0.0, text: str = "") -> TrustRecord:
    details: dict[str, object] = {"checks_run": i}
    if text:
        details["answer"] = text
    return TrustRecord(
        id=f"r{i}",
        status="done",
        model="m",
        score=0.5,
        created_at=time.time() - age_s,
        components={"bc": ComponentResult(component="bc", value=0.5, details=details)},
    )


def open_store(path: Path, **options: Any) -> SqliteRecordStore:
    return SqliteRecordStore(path, **({"max_age_s": 3600, "max_records": 1000} | options))


def test_round_trip_and_retention(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = open_store(tmp_path / "s.db", max_records=3)
        await store.open()
        await store.put(record(0, age_s=7200))
        assert await store.get("r0", scope=ALL) is None  # already expired: its own write batch pruned it
        for i in range(1, 6):
            await store.put(record(i))
        got = await store.get("r5", scope=ALL)
        assert got is not None
        assert got.model_dump(exclude={"created_at"}) == record(5).model_dump(exclude={"created_at"})
        assert await store.count() == 3
        assert await store.get("r2", scope=ALL) is None
        assert (await store.get("r3", scope=ALL)).components["bc"].details.checks_run == 3  # type: ignore[union-attr]
        await store.close()

    asyncio.run(scenario())


def test_holds_at_its_size_after_every_write_with_many_rows(tmp_path: Path) -> None:
    """Written concurrently (so in batches), the store never keeps more than max_records, and keeps the newest."""

    async def scenario() -> None:
        store = open_store(tmp_path / "s.db", max_records=500)
        await store.open()
        base = time.time()
        for start in range(0, 3000, 300):
            batch = [record(i) for i in range(start, start + 300)]
            for i, item in enumerate(batch):
                item.created_at = base + start + i  # a strict order, so "the newest" is well defined
            await asyncio.gather(*(store.put(item) for item in batch))
            assert await store.count() <= 500
        assert await store.count() == 500
        assert await store.get("r2499", scope=ALL) is None and await store.get("r2500", scope=ALL) is not None
        await store.close()
        # A restart counts what is there and keeps the bound.
        reopened = open_store(tmp_path / "s.db", max_records=100)
        await reopened.open()
        for i in range(3000, 3010):
            newer = record(i)
            newer.created_at = base + i
            await reopened.put(newer)
        assert await reopened.count() == 100  # the first write's batch pruned the 400 beyond the new bound
        assert await reopened.get("r3009", scope=ALL) is not None and await reopened.get("r2500", scope=ALL) is None
        await reopened.close()

    asyncio.run(scenario())


def test_prunes_walk_the_created_at_index(tmp_path: Path) -> None:
    """Pruning never scans the whole table (a `NOT IN (SELECT … LIMIT …)` prune takes 9 s at 1M rows)."""

    async def scenario() -> None:
        store = open_store(tmp_path / "s.db")
        await store.open()
        await store.close()

    asyncio.run(scenario())
    db = sqlite3.connect(tmp_path / "s.db")
    for statement, args in ((PRUNE_EXPIRED, (0.0, 10)), (PRUNE_OLDEST, (10,))):
        steps = [row[3] for row in db.execute("EXPLAIN QUERY PLAN " + statement, args)]
        # The subquery walks the index from its oldest end (and stops at LIMIT); the delete seeks by rowid.
        assert any("USING COVERING INDEX trust_records_created" in step for step in steps), steps
        assert "SCAN trust_records" not in steps and "NOT IN" not in statement, steps
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_full_write_queue_sheds_at_once(tmp_path: Path) -> None:
    """While the database is locked, writes beyond the queue's bound are shed at once (and reported to on_shed)."""
    shed: list[int] = []

    async def scenario() -> None:
        store = open_store(tmp_path / "s.db", max_pending_writes=10, write_batch=10, on_shed=lambda: shed.append(1))
        await store.open()
        await store.put(record(0))
        blocker = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # holds the write lock: the store's writer waits on it
        puts = [asyncio.create_task(store.put(record(i))) for i in range(1, 41)]
        await asyncio.sleep(0.2)
        finished = [task for task in puts if task.done()]
        assert len(finished) == len(shed) >= 20  # shed writes return at once; queued ones wait
        assert await store.get("r0", scope=ALL) is not None  # a look-up is not stuck behind the blocked write
        blocker.rollback()
        await asyncio.gather(*puts)
        stored = [i for i in range(1, 41) if await store.get(f"r{i}", scope=ALL) is not None]
        assert len(stored) == 40 - len(shed)
        await store.close()

    asyncio.run(scenario())


def test_long_texts_are_truncated_with_a_marker(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = open_store(tmp_path / "s.db", max_record_bytes=4096)
        await store.open()
        await store.put(record(1, text="x" * 1_000_000))
        got = await store.get("r1", scope=ALL)
        await store.close()
        details = got.components["bc"].details if got is not None else None
        assert got is not None and got.score == 0.5 and isinstance(details, BCDetails) and details.checks_run == 1
        answer = (details.model_extra or {})["answer"]  # a field of no BCDetails: kept as it was written
        kept = len(answer.split("…")[0])
        assert answer.endswith(f"…[truncated {1_000_000 - kept} chars]") and 0 < kept < 4096
        assert len(got.model_dump_json().encode()) <= 4096

    asyncio.run(scenario())


def test_a_record_of_many_short_texts_keeps_its_verdict() -> None:
    many = record(1)
    many.components["bc"] = ComponentResult(
        component="bc", value=0.5, details={"options": [f"option {i} " * 10 for i in range(2000)]}
    )
    capped = TrustRecord.model_validate_json(stored_json(many, 2048))
    assert capped.score == 0.5 and capped.status == "done"
    assert "exceeded 2048 bytes" in (capped.components["bc"].details.model_extra or {})["truncated"]  # type: ignore[union-attr]


def test_reads_are_scoped_to_the_owner(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = SqliteRecordStore(tmp_path / "s.db", max_age_s=3600, max_records=10)
        await store.open()
        await store.put(TrustRecord(id="a1", status="done", owner="team-a"))
        assert (await store.get("a1", scope=RecordScope.owned_by("team-a"))) is not None
        assert await store.get("a1", scope=RecordScope.owned_by("team-b")) is None
        assert (await store.get("a1", scope=RecordScope.everyone())).owner == "team-a"  # type: ignore[union-attr]
        await store.close()

    asyncio.run(scenario())


def test_a_store_from_before_owners_is_migrated(tmp_path: Path) -> None:
    """Rows written by an older version keep working; without an owner they are for admins only."""
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE trust_records (id TEXT PRIMARY KEY, created_at REAL NOT NULL, record TEXT NOT NULL)")
        db.execute(
            "INSERT INTO trust_records VALUES (?, ?, ?)",
            ("old", time.time(), TrustRecord(id="old", status="done").model_dump_json()),
        )

    async def scenario() -> None:
        store = SqliteRecordStore(path, max_age_s=3600, max_records=10)
        await store.open()
        assert (await store.get("old", scope=RecordScope.everyone())) is not None
        assert await store.get("old", scope=RecordScope.owned_by("team-a")) is None
        await store.put(TrustRecord(id="new", status="done", owner="team-a"))
        assert (await store.get("new", scope=RecordScope.owned_by("team-a"))) is not None
        await store.close()

    asyncio.run(scenario())
