"""Admission to a single-slot upstream: user calls go ahead of queued scoring calls.

The embedded llama.cpp server answers one request at a time and queues the
rest in arrival order, so a user's request sent while twenty scoring re-asks
wait would wait behind all of them. The gateway therefore keeps the queue
itself: at most ``capacity`` calls are at the server at once, and a free slot
goes to the waiting call of the highest priority (user, then the scoring of a
sync request, whose client waits for it, then the scoring of async ones), first
come first served within a priority.
"""

from __future__ import annotations

import asyncio
import enum
import heapq
import itertools
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace

from ..base.errors import UpstreamTimeout
from .completion import UpstreamStream

__all__ = ["Priority", "PrioritySlots", "held_until_closed", "once"]


class Priority(enum.IntEnum):
    """Lower goes first."""

    USER = 0
    SYNC_SCORING = 1  # a scorer's call for a request whose client waits for the score
    SCORING = 2

    @property
    def for_scoring(self) -> bool:
        return self is not Priority.USER


class PrioritySlots:
    def __init__(self, capacity: int) -> None:
        self._free = capacity
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._arrival = itertools.count()

    @property
    def waiting(self) -> int:
        return sum(not future.done() for _, _, future in self._waiting)

    async def acquire(self, priority: Priority, timeout: float) -> None:
        """Wait for a slot, at most ``timeout`` seconds (then ``UpstreamTimeout``, as a slow upstream would)."""
        if self._free > 0:  # free slots exist only while no call waits: release hands them over directly
            self._free -= 1
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (int(priority), next(self._arrival), future))
        try:
            await asyncio.wait_for(asyncio.shield(future), timeout)
        except BaseException as exc:
            if future.done() and not future.cancelled():
                self.release()  # the slot was handed over just as this call gave up: pass it on
            future.cancel()
            if isinstance(exc, TimeoutError):
                raise UpstreamTimeout(
                    "the local model is busy: no slot within the timeout", code="upstream_timeout"
                ) from exc
            raise

    def release(self) -> None:
        while self._waiting:
            _, _, future = heapq.heappop(self._waiting)
            if not future.done():
                future.set_result(None)
                return
        self._free += 1

    @asynccontextmanager
    async def held(self, priority: Priority, timeout: float) -> AsyncIterator[None]:
        await self.acquire(priority, timeout)
        try:
            yield
        finally:
            self.release()

    async def open_stream(
        self, priority: Priority, timeout: float, open_stream: Callable[[], Awaitable[UpstreamStream]]
    ) -> UpstreamStream:
        """Open a stream holding a slot until the stream is closed (or, as a backstop, collected)."""
        await self.acquire(priority, timeout)
        release = once(self.release)
        try:
            stream = await open_stream()
        except BaseException:
            release()
            raise
        return held_until_closed(stream, release)


def held_until_closed(stream: UpstreamStream, release: Callable[[], None]) -> UpstreamStream:
    """``stream``, calling ``release`` (made idempotent by ``once``) when it is closed or, as a backstop, collected."""

    async def close_and_release() -> None:
        try:
            await stream.close()  # refers to ``stream`` itself: a stream wrapped twice keeps the inner one alive
        finally:
            release()
            backstop.detach()  # released: nothing for the collector to do (and no wake-up of the loop)

    held = replace(stream, close=close_and_release)
    loop = asyncio.get_running_loop()
    # A response whose body never started (client gone at once) never closes its stream:
    # release when the stream object is collected, or what it holds would stay taken.
    backstop = weakref.finalize(held, _release_from_any_thread, loop, release)
    return held


def once(action: Callable[[], None]) -> Callable[[], None]:
    done = False

    def run() -> None:
        nonlocal done
        if not done:
            done = True
            action()

    return run


def _release_from_any_thread(loop: asyncio.AbstractEventLoop, release: Callable[[], None]) -> None:
    if not loop.is_closed():
        loop.call_soon_threadsafe(release)
