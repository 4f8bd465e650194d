"""An expensive probe of the upstreams, run at most once per ``max_age_s`` however often it is asked for.

``/health/readiness`` (open to probes without a key) and ``/health`` (a call
to every deployment) both answer from one: concurrent callers share the run
in flight, and later ones its result until it is ``max_age_s`` old, so that
nobody makes the gateway call its upstreams at will.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

__all__ = ["CachedProbe"]

T = TypeVar("T")


class CachedProbe(Generic[T]):
    def __init__(
        self,
        probe: Callable[[], Awaitable[T]],
        max_age_s: float,
        *,
        on_probe: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._probe = probe
        self._max_age_s = max_age_s
        self._on_probe = on_probe
        self._clock = clock
        self._lock = asyncio.Lock()
        self._cached: tuple[float, T] | None = None

    async def result(self) -> T:
        async with self._lock:  # one probe at a time; callers queued behind it read its result
            if self._cached is None or self._clock() - self._cached[0] >= self._max_age_s:
                self._on_probe()
                found = await self._probe()
                self._cached = (self._clock(), found)
            return self._cached[1]
