"""The SQLite result store: round trip, retention by age and by count, reads scoped to owners, migration."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

from exporters.store import SqliteRecordStore
from scoring.types import ComponentResult, RecordScope, TrustRecord


ALL = RecordScope.everyone()


def record(i: int, age_s: float = 0.0) -> TrustRecord:
    return TrustRecord(id=f"r{i}", status="done", model="m", score=0.5, created_at=time.time() - age_s,
                       components={"bc": ComponentResult(component="bc", value=0.5, details={"checks": [i]})})


def test_round_trip_and_retention(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = SqliteRecordStore(tmp_path / "s.db", max_age_s=3600, max_records=3, prune_every=1000)
        await store.open()
        await store.put(record(0, age_s=7200))
        for i in range(1, 6):
            await store.put(record(i))
        got = await store.get("r5", scope=ALL)
        assert got is not None and got.model_dump(exclude={"created_at"}) == record(5).model_dump(exclude={"created_at"})
        assert await store.count() == 6
        await store.prune()
        assert await store.count() == 3
        assert await store.get("r0", scope=ALL) is None and await store.get("r2", scope=ALL) is None
        assert (await store.get("r3", scope=ALL)).components["bc"].details == {"checks": [3]}  # type: ignore[union-attr]
        await store.close()

    asyncio.run(scenario())


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
        db.execute("INSERT INTO trust_records VALUES (?, ?, ?)",
                   ("old", time.time(), TrustRecord(id="old", status="done").model_dump_json()))

    async def scenario() -> None:
        store = SqliteRecordStore(path, max_age_s=3600, max_records=10)
        await store.open()
        assert (await store.get("old", scope=RecordScope.everyone())) is not None
        assert await store.get("old", scope=RecordScope.owned_by("team-a")) is None
        await store.put(TrustRecord(id="new", status="done", owner="team-a"))
        assert (await store.get("new", scope=RecordScope.owned_by("team-a"))) is not None
        await store.close()

    asyncio.run(scenario())
