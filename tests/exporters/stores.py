"""The record stores as their tests hold them: either kind behind one name, and a Redis emptied for each test."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from redis.asyncio import Redis

from exporters.redis_store import RedisRecordStore
from exporters.store import SqliteRecordStore

Store = SqliteRecordStore | RedisRecordStore
Scenario = Callable[[Store], Coroutine[Any, Any, None]]


@contextlib.asynccontextmanager
async def emptied_redis(url: str) -> AsyncIterator[Redis]:
    """A client of the module's Redis with no key left by an earlier test, closed when the block ends."""
    redis = Redis.from_url(url, decode_responses=True)
    await redis.flushdb()
    yield redis
    await redis.aclose()
