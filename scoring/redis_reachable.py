"""A Redis failure is "the store is unavailable, retry later", never "no such thing": one rule for every store
kept in Redis (trust records, learned fits)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from redis.exceptions import RedisError

from .types import StoreUnavailable

__all__ = ["redis_reachable"]


@contextlib.contextmanager
def redis_reachable() -> Iterator[None]:
    """Raise StoreUnavailable (naming only the error's type, never its text) for any Redis error inside."""
    try:
        yield
    except RedisError as exc:
        raise StoreUnavailable(f"Redis unreachable: {type(exc).__name__}") from exc
