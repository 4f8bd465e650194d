"""Trust records written straight into a store (SQLite or Redis) before a gateway or the console reads them."""

from __future__ import annotations

import asyncio
from pathlib import Path

from redis.asyncio import Redis

from exporters.redis_store import RedisRecordStore
from exporters.store import SqliteRecordStore
from scoring.types import TrustRecord

KEYS = [{"key": "sk-alice", "name": "alice"}, {"key": "sk-bob", "name": "bob"}]


def stored(path: Path, records: list[TrustRecord]) -> None:
    async def write() -> None:
        store = SqliteRecordStore(path, max_age_s=86400, max_records=1000)
        await store.open()
        for r in records:
            await store.put(r)
        await store.close()

    asyncio.run(write())


def stored_in_redis(url: str, records: list[TrustRecord]) -> None:
    async def write() -> None:
        redis = Redis.from_url(url, decode_responses=True)
        await redis.flushdb()
        store = RedisRecordStore(redis, prefix="trustgate", ttl_s=86400)
        for r in records:
            await store.put(r)
        await redis.aclose()

    asyncio.run(write())
