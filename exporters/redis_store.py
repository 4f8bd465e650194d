"""Trust records in Redis: one hash per id with a TTL, shared by every gateway replica and worker."""

from __future__ import annotations

from redis.asyncio import Redis
from redis.exceptions import RedisError

from scoring.types import RecordScope, StoreUnavailable, TrustRecord

from .record_size import stored_json

__all__ = ["RedisRecordStore", "record_key"]


def record_key(prefix: str, record_id: str) -> str:
    return f"{prefix}:record:{record_id}"


class RedisRecordStore:
    def __init__(self, redis: Redis, *, prefix: str, ttl_s: int, max_record_bytes: int = 64 * 1024) -> None:
        self._redis = redis
        self._prefix = prefix
        self._ttl_s = ttl_s
        self._max_record_bytes = max_record_bytes

    async def put(self, record: TrustRecord) -> None:
        key = record_key(self._prefix, record.id)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping={"status": record.status,
                                    "record": stored_json(record, self._max_record_bytes)})
            pipe.expire(key, self._ttl_s)
            await pipe.execute()

    async def get(self, record_id: str, *, scope: RecordScope) -> TrustRecord | None:
        """The record, if it exists and ``scope`` may read it; None alike for both misses (no oracle for ids).

        StoreUnavailable when Redis cannot be reached: "retry later", not "no such record".
        """
        try:
            raw = await self._redis.hget(record_key(self._prefix, record_id), "record")
        except RedisError as exc:
            raise StoreUnavailable(f"Redis unreachable: {type(exc).__name__}") from exc
        if not raw:
            return None
        record = TrustRecord.model_validate_json(raw)
        return record if scope.allows(record) else None

    async def close(self) -> None:
        """The Redis client belongs to whoever created it."""
