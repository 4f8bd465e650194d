"""The SQLite result store: round trip, retention by age and by count."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from exporters.store import SqliteRecordStore
from scoring.types import ComponentResult, TrustRecord


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
        got = await store.get("r5")
        assert got is not None and got.model_dump(exclude={"created_at"}) == record(5).model_dump(exclude={"created_at"})
        assert await store.count() == 6
        await store.prune()
        assert await store.count() == 3
        assert await store.get("r0") is None and await store.get("r2") is None
        assert (await store.get("r3")).components["bc"].details == {"checks": [3]}  # type: ignore[union-attr]
        await store.close()

    asyncio.run(scenario())
