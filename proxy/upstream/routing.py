"""Which deployment of a model group a try goes to, on the pass-through path.

LiteLLM's Router chooses for the litellm path; this module does the same job,
after the same config keys, for the groups the gateway forwards itself:

- ``simple-shuffle`` (LiteLLM's default): a weighted random choice, by each
  deployment's ``weight``, else its ``rpm``, else its ``tpm`` (the first of these
  the group sets), else evenly — as LiteLLM's simple shuffle weighs them.
- ``least-busy``: the deployment with the fewest calls in flight from this
  process (a stream counts until it is closed).
- ``latency-based-routing``: the deployment with the lowest mean latency over its
  last ``LATENCY_SAMPLES`` calls (a whole reply; for a stream, until it opened);
  one not yet called counts as fastest, so each is measured, and a failed call
  counts as taking its whole ``timeout``, so a failing deployment is not "fast".

Ties go to a weighted random choice. A retry goes to a deployment the request
has not tried yet while there is one. A deployment at its
``max_parallel_requests`` is passed over while another has room; when every
one is full the try fails as a provider's 429 would (``deployment_rate_limited``,
retried by ``router_settings.num_retries``), as litellm's Router does on the
litellm path, rather than queueing without bound.
"""

from __future__ import annotations

import asyncio
import random
from collections import deque
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import TypeVar, cast

from ..base.errors import UpstreamError, UpstreamRateLimited
from ..config.litellm_config import RoutingStrategy
from ..config.settings import Deployment
from .completion import UpstreamStream
from .slots import held_until_closed, once

__all__ = ["LATENCY_SAMPLES", "GroupRouter"]

T = TypeVar("T")

LATENCY_SAMPLES = 10


def _weights(deployments: Sequence[Deployment]) -> list[float]:
    """LiteLLM's simple-shuffle weights: ``weight``, else ``rpm``, else ``tpm``, else all alike."""
    for metric in ("weight", "rpm", "tpm"):
        values = [float(getattr(d, metric) or 0) for d in deployments]
        if max(values) > 0:
            return values
    return [1.0] * len(deployments)


class GroupRouter:
    """The deployments of one model group, and the state its strategy chooses by."""

    def __init__(
        self,
        deployments: Sequence[Deployment],
        strategy: RoutingStrategy,
        *,
        default_timeout: float,
        limit_parallel: bool = True,
        rng: random.Random | None = None,
    ) -> None:
        """``limit_parallel``: enforce ``max_parallel_requests`` here (not where litellm's Router already does)."""
        self._deployments = list(deployments)
        self._strategy = strategy
        self._weights = _weights(self._deployments)
        self._limits = [d.max_parallel_requests if limit_parallel else None for d in self._deployments]
        self._penalties = [d.deadline(default_timeout) for d in self._deployments]
        self._in_flight = [0] * len(self._deployments)
        self._latencies: list[deque[float]] = [deque(maxlen=LATENCY_SAMPLES) for _ in self._deployments]
        self._rng = rng or random.Random()
        # Whether anything reads the calls in flight or their times: a limit, or a strategy that chooses among
        # several by them. Else a call goes straight through (the usual group: one deployment, no limit).
        self._tracked = any(limit is not None for limit in self._limits) or (
            len(self._deployments) > 1 and strategy in ("least-busy", "latency-based-routing")
        )

    def in_flight(self, index: int) -> int:
        """Calls in flight to deployment ``index``, where they are counted (``_tracked``)."""
        return self._in_flight[index]

    def choose(self, tried: Collection[int]) -> int:
        """The index of the deployment for the next try of a request that has tried ``tried``."""
        if len(self._deployments) == 1:  # the usual group: nothing to choose (``run`` refuses it when full)
            return 0
        candidates = [i for i in range(len(self._deployments)) if i not in tried] or list(range(len(self._deployments)))
        with_room = [i for i in candidates if not self._full(i)]
        candidates = with_room or candidates
        if self._strategy == "least-busy":
            fewest = min(self._in_flight[i] for i in candidates)
            candidates = [i for i in candidates if self._in_flight[i] == fewest]
        elif self._strategy == "latency-based-routing":
            fastest = min(self._latency(i) for i in candidates)
            candidates = [i for i in candidates if self._latency(i) == fastest]
        weights = [self._weights[i] for i in candidates]
        if sum(weights) <= 0:
            weights = [1.0] * len(candidates)
        return self._rng.choices(candidates, weights=weights)[0]

    def _full(self, index: int) -> bool:
        limit = self._limits[index]
        return limit is not None and self._in_flight[index] >= limit

    def _latency(self, index: int) -> float:
        samples = self._latencies[index]
        return sum(samples) / len(samples) if samples else 0.0

    async def run(self, index: int, name: str, call: Callable[[], Awaitable[T]]) -> T:
        """``call`` to deployment ``index``, counted in flight (a stream until closed) and timed.

        Refused with a 429 when the deployment is at its ``max_parallel_requests``.
        """
        if not self._tracked:
            return await call()
        if self._full(index):
            raise UpstreamRateLimited(
                f"{name} is at its max_parallel_requests limit ({self._limits[index]})", code="deployment_rate_limited"
            )
        self._in_flight[index] += 1
        release = once(lambda: self._leave(index))
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            result = await call()
        except UpstreamError as exc:
            release()
            if not exc.client_fault:
                self._latencies[index].append(max(loop.time() - started, self._penalties[index]))
            raise
        except BaseException:
            release()
            raise
        self._latencies[index].append(loop.time() - started)
        if isinstance(result, UpstreamStream):
            return cast(T, held_until_closed(result, release))
        release()
        return result

    def _leave(self, index: int) -> None:
        self._in_flight[index] -= 1
