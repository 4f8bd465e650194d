"""Keys made at run time in Redis, shared by every replica: a key made on one gateway works on all of them at once,
and one deleted is refused by all of them at once.

Three Redis keys under the deployment's prefix: a hash of token → key, a hash
of name → token (names are unique), and a version counter. Each write is one
Lua script, so that the check (a name or token taken, ``max_keys`` reached),
the write and the version's rise happen as one step whatever the replicas do
at the same moment. A key and the version are read together in one
transaction (``read``), and each request by a cached key reads the version
alone (``version``: one ``GET``), which is what keeps every replica's cache
exact (``key_store.KeyCache``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.asyncio import Redis

from scoring import redis_reachable

from .key_store import KeyConflict, StoredKey

__all__ = ["RedisKeyTable"]

# KEYS: by token, by name, version. ARGV: token, name, the key's JSON, max keys.
_ADD = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 'token' end
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1 then return 'name' end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[4]) then return 'full' end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[2], ARGV[1])
redis.call('INCR', KEYS[3])
return 'ok'
"""
# KEYS: by token, by name, version. ARGV: token, name, the key's JSON.
_REPLACE = """
if redis.call('HGET', KEYS[2], ARGV[2]) ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('INCR', KEYS[3])
return 1
"""
# KEYS: by token, by name, version. ARGV: token, name, token, name, ...
_REMOVE = """
local removed = {}
for i = 1, #ARGV, 2 do
  if redis.call('HDEL', KEYS[1], ARGV[i]) == 1 then table.insert(removed, ARGV[i]) end
  if redis.call('HGET', KEYS[2], ARGV[i + 1]) == ARGV[i] then redis.call('HDEL', KEYS[2], ARGV[i + 1]) end
end
redis.call('INCR', KEYS[3])
return removed
"""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisKeyTable:
    """``KeyTable`` in Redis under ``<prefix>:keys:``."""

    def __init__(self, redis: Redis, prefix: str) -> None:
        self._redis = redis
        self._by_token = f"{prefix}:keys:by-token"
        self._by_name = f"{prefix}:keys:by-name"
        self._version = f"{prefix}:keys:version"
        self._add = redis.register_script(_ADD)
        self._replace = redis.register_script(_REPLACE)
        self._remove = redis.register_script(_REMOVE)

    @property
    def _keys(self) -> list[str]:
        return [self._by_token, self._by_name, self._version]

    async def version(self) -> int:
        with redis_reachable():
            return int(await self._redis.get(self._version) or 0)

    async def read(self, token: str) -> tuple[int, StoredKey | None]:
        with redis_reachable():
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.get(self._version)
                pipe.hget(self._by_token, token)
                version, found = await pipe.execute()
        return int(version or 0), StoredKey.model_validate_json(found) if found else None

    async def by_name(self, name: str) -> StoredKey | None:
        with redis_reachable():
            token = await self._redis.hget(self._by_name, name)
            found = await self._redis.hget(self._by_token, _text(token)) if token else None
        return StoredKey.model_validate_json(found) if found else None

    async def all(self) -> list[StoredKey]:
        with redis_reachable():
            found = await self._redis.hvals(self._by_token)
        return sorted((StoredKey.model_validate_json(item) for item in found), key=lambda k: (k.created_at, k.token))

    async def add(self, key: StoredKey, max_keys: int) -> None:
        args: list[str | int] = [key.token, key.name, key.model_dump_json(), max_keys]
        with redis_reachable():
            outcome = _text(await self._add(keys=self._keys, args=args))
        if outcome != "ok":
            raise KeyConflict(outcome)  # type: ignore[arg-type]  # the script's words are Conflict's

    async def replace(self, key: StoredKey) -> bool:
        with redis_reachable():
            return bool(await self._replace(keys=self._keys, args=[key.token, key.name, key.model_dump_json()]))

    async def remove(self, keys: Sequence[StoredKey]) -> list[str]:
        pairs = [part for key in keys for part in (key.token, key.name)]
        with redis_reachable():
            removed = await self._remove(keys=self._keys, args=pairs)
        return [_text(token) for token in removed]

    async def close(self) -> None:
        """The Redis client is its opener's to close."""
