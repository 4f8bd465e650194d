"""Readiness from cached upstream probes: per model group, ready on any (or all) reachable groups.

``/health/readiness`` answers without a key (orchestrators probe it), so it
must not let anyone make the gateway call its upstreams at will: probes run
at most once per ``readiness_cache_s``, and concurrent callers share one
probe in flight (``CachedProbe``). With several model groups, one unreachable group need not
take every replica out of service: ``readiness_mode: any`` (the default)
keeps the gateway ready while at least one group answers.

Every deployment is probed (``upstream.probes``), the first time at start-up
(``start``), so that one nobody answers at is named in the log before any
request fails on it: once when it goes down, with its address and what the
probe met, and once when it answers again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from ..config.settings import HealthSettings
from ..upstream.probes import DeploymentProbe, ProbeState
from .cached_probe import CachedProbe

__all__ = ["ReadinessCheck", "ReadinessReport"]

log = logging.getLogger("trustgate.readiness")

GroupStates = dict[str, str]  # model group -> "ok" | "unreachable" | "unchecked"


@dataclass(frozen=True)
class ReadinessReport:
    ready: bool
    mode: Literal["any", "all"]
    groups: GroupStates
    deployments: list[DeploymentProbe]
    checked_at: float  # wall-clock time of the probe these states come from


def _group_states(deployments: list[DeploymentProbe]) -> GroupStates:
    """A group is ok while one of its deployments answers, unchecked while none can be probed and none is
    known down, unreachable when every one it could probe is down."""
    states: dict[str, set[ProbeState]] = {}
    for deployment in deployments:
        states.setdefault(deployment.model, set()).add(deployment.state)
    return {
        group: "ok" if "up" in found else "unreachable" if found == {"down"} else "unchecked"
        for group, found in states.items()
    }


class ReadinessCheck:
    def __init__(
        self,
        probe: Callable[[], Awaitable[list[DeploymentProbe]]],
        settings: HealthSettings,
        *,
        on_probe: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._probe = probe
        self._settings = settings
        self._cached = CachedProbe(self._judged, settings.readiness_cache_s, on_probe=on_probe, clock=clock)
        self._down: set[tuple[int, str | None]] = set()  # (place, address) of the deployments found down

    async def report(self) -> ReadinessReport:
        return await self._cached.result()

    async def _judged(self) -> ReadinessReport:
        deployments = await self._probe()
        self._log_changes(deployments)
        return self._judge(deployments)

    @contextlib.asynccontextmanager
    async def start(self) -> AsyncIterator[None]:
        """The first probe, run beside the gateway's start rather than before it (an address that does not
        answer would hold the start for the probe's timeout); cancelled if the gateway stops first."""
        first = asyncio.create_task(self._first_probe())
        try:
            yield
        finally:
            first.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await first

    async def _first_probe(self) -> None:
        try:
            await self.report()
        except Exception:  # a probe meets upstream errors itself: anything else is a fault, logged here once
            log.exception("the readiness probe at start-up failed")

    def _log_changes(self, deployments: list[DeploymentProbe]) -> None:
        for deployment in deployments:
            key = (deployment.place, deployment.address)
            if deployment.state == "down" and key not in self._down:
                self._down.add(key)
                log.warning("deployment %s is down: %s", deployment.name, deployment.reason)
            elif deployment.state != "down" and key in self._down:
                self._down.discard(key)
                log.info("deployment %s answers again", deployment.name)

    def _judge(self, deployments: list[DeploymentProbe]) -> ReadinessReport:
        groups = _group_states(deployments)
        # "unchecked" (a deployment whose address litellm cannot say) counts as reachable: it cannot be told apart.
        reachable = [state != "unreachable" for state in groups.values()]
        mode = self._settings.readiness_mode
        ready = any(reachable) if mode == "any" else all(reachable)
        return ReadinessReport(ready=ready, mode=mode, groups=groups, deployments=deployments, checked_at=time.time())
