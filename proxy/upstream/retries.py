"""Retries of upstream calls: exponential backoff with jitter, ``Retry-After`` honoured up to a cap.

User calls retry what LiteLLM would retry (408, 429, 5xx, unreachable) up to
``router_settings.num_retries`` times, waiting ``backoff_initial_s · 2ⁿ`` plus
``jitter_s`` (at most ``backoff_max_s``), or what the upstream asked for in
``Retry-After`` when it did — and not at all when it asked for longer than
``retry_after_cap_s``: then its 429 goes back to the client, ``Retry-After`` and all.

Scoring calls must never amplify an upstream's trouble, so they also obey:

- a retry budget (``RetryBudget``): their retries are at most a fraction of
  their calls over a sliding window, and
- a back-off window: after a 429 from a model group, scoring calls to it are
  not made at all (they are shed, and counted) until its ``Retry-After`` (or the
  first backoff step) has passed. User calls are never shed.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ..base.errors import UpstreamError, UpstreamRateLimited
from ..config.settings import RetrySettings, RouterSettings

__all__ = ["OnScoringShed", "RetryBudget", "RetryPolicy"]

T = TypeVar("T")

OnScoringShed = Callable[[str, str], None]  # (model group, reason: "rate_limited" | "retry_budget")


class RetryBudget:
    """Retries allowed as a share of calls over a sliding window.

    With ``ratio`` 0.1, ten scoring calls earn one retry; ``minimum`` retries
    per window are always allowed so that a quiet gateway still retries a blip.
    """

    def __init__(
        self, ratio: float, minimum: int, window_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._ratio = ratio
        self._minimum = minimum
        self._window = window_s
        self._clock = clock
        self._calls: deque[float] = deque()
        self._retries: deque[float] = deque()

    def _trim(self, now: float) -> None:
        for stamps in (self._calls, self._retries):
            while stamps and stamps[0] <= now - self._window:
                stamps.popleft()

    def record_call(self) -> None:
        now = self._clock()
        self._trim(now)
        self._calls.append(now)

    def try_retry(self) -> bool:
        """Spend one retry if the budget has one."""
        now = self._clock()
        self._trim(now)
        if len(self._retries) >= self._minimum + self._ratio * len(self._calls):
            return False
        self._retries.append(now)
        return True


class RetryPolicy:
    """How one upstream call is tried: up to ``num_retries`` more tries, with waits, for what is worth it.

    The loop is written out rather than run by a retry library: every user
    request passes through it, nearly always on a first try that succeeds, and
    tenacity's per-call machinery (its retry object, a call state, an attempt
    context per try) cost about 30 µs of the gateway's CPU per request, about
    5% of it (BENCHMARKS.md). Here a first try costs a loop step.
    """

    def __init__(
        self,
        router: RouterSettings,
        settings: RetrySettings,
        *,
        on_scoring_shed: OnScoringShed = lambda group, reason: None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._attempts = router.num_retries + 1
        self._min_wait = router.retry_after  # LiteLLM's: the least time between two tries
        self._settings = settings
        self._budget = RetryBudget(
            settings.scoring_retry_ratio, settings.scoring_min_retries, settings.scoring_budget_window_s, clock
        )
        self._on_scoring_shed = on_scoring_shed
        self._clock = clock
        self._sleep = sleep
        self._limited_until: dict[str, float] = {}

    async def run(self, group: str, call: Callable[[int], Awaitable[T]], *, for_scoring: bool = False) -> T:
        """``call(attempt)`` until it succeeds, is not worth retrying, or the attempts run out."""
        if for_scoring:
            self._admit_scoring(group)
            self._budget.record_call()
        for attempt in range(self._attempts):
            try:
                return await call(attempt)
            except UpstreamError as exc:
                if isinstance(exc, UpstreamRateLimited):
                    self._note_rate_limited(group, exc)
                if attempt + 1 == self._attempts or not self._worth_retrying(group, exc, for_scoring):
                    raise
                wait = self._wait(exc, attempt)
            await self._sleep(wait)
        raise AssertionError("unreachable: the last try returns or raises")

    def _worth_retrying(self, group: str, exc: UpstreamError, for_scoring: bool) -> bool:
        if not exc.retryable:
            return False
        if exc.retry_after is not None and exc.retry_after > self._settings.retry_after_cap_s:
            return False  # longer than we will hold a request: the client gets the 429 and its Retry-After
        if for_scoring and not self._budget.try_retry():
            self._on_scoring_shed(group, "retry_budget")
            return False
        return True

    def _wait(self, exc: UpstreamError, attempt: int) -> float:
        """The wait after try ``attempt`` (0: the first) failed with ``exc``: its ``Retry-After``, else the
        backoff step ``backoff_initial_s · 2^attempt`` plus up to ``jitter_s``, at most ``backoff_max_s`` — never
        under ``router_settings.retry_after``."""
        if exc.retry_after is not None:
            wait = exc.retry_after
        else:
            step = self._settings.backoff_initial_s * 2**attempt + random.uniform(0, self._settings.jitter_s)
            wait = min(step, self._settings.backoff_max_s)
        return max(wait, self._min_wait)

    def _note_rate_limited(self, group: str, exc: UpstreamRateLimited) -> None:
        pause = exc.retry_after if exc.retry_after is not None else self._settings.backoff_initial_s
        until = self._clock() + min(pause, self._settings.retry_after_cap_s)
        self._limited_until[group] = max(until, self._limited_until.get(group, 0.0))

    def _admit_scoring(self, group: str) -> None:
        """Shed a scoring call while its group is in the back-off window of a 429."""
        left = self._limited_until.get(group, 0.0) - self._clock()
        if left > 0:
            self._on_scoring_shed(group, "rate_limited")
            raise UpstreamRateLimited(
                f"scoring call not made: model group `{group}` is rate limited",
                code="scoring_backoff",
                retry_after=left,
            )
