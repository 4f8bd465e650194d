"""Rate limits per client key (``rpm``, ``tpm``, ``max_parallel_requests``) and per deployment (``rpm``, ``tpm``).

Counted in fixed one-minute windows, in process or — so that replicas share
them — in Redis when the gateway has one (``trustgate.limits.redis_url``, or
the scoring queue's Redis). Over a limit, the caller gets a 429 in OpenAI's
shape with ``Retry-After`` set to the end of the window.

``tpm`` counts the tokens of answers whose usage is known (non-streamed ones,
and streams that report it); a key at or over it is refused until the window
turns. ``max_parallel_requests`` holds a slot until the answer (or stream) ends.

The same counters hold scoring's budget per model group (``proxy.trust.scoring_budget``,
which sheds rather than answers 429), each kind of limit under its own key, so
no name can share another kind's count.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from redis.asyncio import Redis

from .errors import RateLimited

__all__ = ["Counters", "KeyLimits", "Limiter", "MemoryCounters", "RedisCounters", "Slot"]

WINDOW_S = 60
# A parallel-request slot nobody released (a replica that died holding it) lapses after this long.
SLOT_TTL_S = 600


class Counters(Protocol):
    """Shared integer counters with an expiry: all the limiter needs from a backend."""

    async def add(self, key: str, amount: int, ttl_s: int) -> int: ...
    async def get(self, key: str) -> int: ...


@dataclass
class MemoryCounters:
    clock: Callable[[], float] = time.monotonic
    _values: dict[str, tuple[int, float]] = field(default_factory=dict)

    async def add(self, key: str, amount: int, ttl_s: int) -> int:
        value = await self.get(key) + amount
        expires = self._values.get(key, (0, self.clock() + ttl_s))[1]
        self._values[key] = (value, expires)
        return value

    async def get(self, key: str) -> int:
        value, expires = self._values.get(key, (0, 0.0))
        if expires <= self.clock():
            self._values.pop(key, None)
            return 0
        return value


class RedisCounters:
    def __init__(self, redis: Redis, prefix: str = "trustgate:limits:") -> None:
        self._redis = redis
        self._prefix = prefix

    async def add(self, key: str, amount: int, ttl_s: int) -> int:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.incrby(self._prefix + key, amount)
            pipe.expire(self._prefix + key, ttl_s, nx=True)
            value, _ = await pipe.execute()
        return int(value)

    async def get(self, key: str) -> int:
        value = await self._redis.get(self._prefix + key)
        return int(value or 0)


@dataclass(frozen=True)
class KeyLimits:
    rpm: int | None = None
    tpm: int | None = None
    max_parallel_requests: int | None = None


class Slot:
    """An admitted request: report its tokens, then release its parallel slot (once)."""

    def __init__(self, limiter: Limiter, name: str, limits: KeyLimits) -> None:
        self._limiter, self._name, self._limits = limiter, name, limits
        self._released = False

    async def used_tokens(self, tokens: int) -> None:
        if self._limits.tpm is not None:
            await self._limiter.add_tokens(self._name, tokens)

    async def done(self, tokens: int) -> None:
        """A whole answer came back: count its tokens (0 when it reported none) and free the slot."""
        await self.used_tokens(tokens)
        await self.release()

    async def release(self) -> None:
        if self._released or self._limits.max_parallel_requests is None:
            return
        self._released = True
        await self._limiter.counters.add(f"parallel:{self._name}", -1, SLOT_TTL_S)


class Limiter:
    def __init__(self, counters: Counters, clock: Callable[[], float] = time.time) -> None:
        self.counters = counters
        self._clock = clock

    def window_key(self, kind: str, name: str) -> str:
        return f"{kind}:{name}:{int(self._clock() // WINDOW_S)}"

    def _left_in_window(self) -> float:
        return WINDOW_S - self._clock() % WINDOW_S

    async def count_one(self, kind: str, name: str, limit: int) -> float | None:
        """Count one use of ``kind`` by ``name``; the seconds until the window turns when that was one too many."""
        if await self.counters.add(self.window_key(kind, name), 1, WINDOW_S) > limit:
            return self._left_in_window()
        return None

    async def used_up(self, kind: str, name: str, limit: int) -> float | None:
        """The seconds until the window turns when ``name`` has used ``limit`` of ``kind`` already, else None."""
        if await self.counters.get(self.window_key(kind, name)) >= limit:
            return self._left_in_window()
        return None

    async def add(self, kind: str, name: str, amount: int) -> None:
        if amount > 0:
            await self.counters.add(self.window_key(kind, name), amount, WINDOW_S)

    async def over_rpm(self, name: str, rpm: int) -> float | None:
        """Count one request; the seconds until the window turns when that was one too many, else None."""
        return await self.count_one("rpm", name, rpm)

    async def over_tpm(self, name: str, tpm: int) -> float | None:
        """The seconds until the window turns when ``name`` has used its tokens, else None."""
        return await self.used_up("tpm", name, tpm)

    async def add_tokens(self, name: str, tokens: int) -> None:
        await self.add("tpm", name, tokens)

    async def admit(self, name: str, limits: KeyLimits) -> Slot:
        """Count the request against ``name``'s limits; 429 (nothing held) when one is reached."""
        if limits.tpm is not None and (wait := await self.over_tpm(name, limits.tpm)) is not None:
            raise self._refused(f"tokens per minute ({limits.tpm})", wait)
        if limits.rpm is not None and (wait := await self.over_rpm(name, limits.rpm)) is not None:
            raise self._refused(f"requests per minute ({limits.rpm})", wait)
        if limits.max_parallel_requests is not None:
            held = await self.counters.add(f"parallel:{name}", 1, SLOT_TTL_S)
            if held > limits.max_parallel_requests:
                await self.counters.add(f"parallel:{name}", -1, SLOT_TTL_S)
                raise self._refused(f"parallel requests ({limits.max_parallel_requests})", 1.0)
        return Slot(self, name, limits)

    @staticmethod
    def _refused(what: str, retry_after: float) -> RateLimited:
        return RateLimited(f"Rate limit reached: {what}", code="rate_limit_exceeded", retry_after=retry_after)
