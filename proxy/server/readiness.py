"""Readiness from cached upstream probes: per model group, ready on any (or all) reachable groups.

``/health/readiness`` answers without a key (orchestrators probe it), so it
must not let anyone make the gateway call its upstreams at will: probes run
at most once per ``readiness_cache_s``, and concurrent callers share one
probe in flight. With several model groups, one unreachable group need not
take every replica out of service: ``readiness_mode: any`` (the default)
keeps the gateway ready while at least one group answers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from ..config.settings import HealthSettings

__all__ = ["ReadinessCheck", "ReadinessReport"]

GroupStates = dict[str, str]  # model group -> "ok" | "unreachable" | "unchecked"


@dataclass(frozen=True)
class ReadinessReport:
    ready: bool
    mode: Literal["any", "all"]
    groups: GroupStates
    checked_at: float  # wall-clock time of the probe these states come from


class ReadinessCheck:
    def __init__(
        self,
        probe: Callable[[], Awaitable[GroupStates]],
        settings: HealthSettings,
        *,
        on_probe: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._probe = probe
        self._settings = settings
        self._on_probe = on_probe
        self._clock = clock
        self._lock = asyncio.Lock()
        self._cached: tuple[float, ReadinessReport] | None = None

    async def report(self) -> ReadinessReport:
        async with self._lock:  # one probe at a time; callers queued behind it read its result
            if self._cached is None or self._clock() - self._cached[0] >= self._settings.readiness_cache_s:
                self._on_probe()
                groups = await self._probe()
                self._cached = (self._clock(), self._judge(groups))
            return self._cached[1]

    def _judge(self, groups: GroupStates) -> ReadinessReport:
        # "unchecked" (a provider without an HTTP base to probe) counts as reachable, as it cannot be told apart.
        reachable = [state != "unreachable" for state in groups.values()]
        mode = self._settings.readiness_mode
        ready = any(reachable) if mode == "any" else all(reachable)
        return ReadinessReport(ready=ready, mode=mode, groups=groups, checked_at=time.time())
