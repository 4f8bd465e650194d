"""The gateway's rate-limit counters, counted on by its local scoring worker too.

Without Redis (``limits.redis_url`` unset, the memory queue) the limiter's
counters live in the gateway's memory: deployments' ``rpm`` / ``tpm`` and
scoring's budget (``scoring.budget``). A local scoring worker makes scoring's
calls in another process; with counters of its own, each process would let
through a deployment's whole ``rpm``. So the worker's limiter counts on the
gateway's counters (``LentCounters``, the worker's side: one small frame
each way per counter operation), which the gateway answers from its own
(``CounterLender``). One budget, one ``rpm``, as when scoring ran inline.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Callable

from scoring.local_transport import CountAnswer, CountAsk, FrameKind

from ..base.limits import Counters

__all__ = ["CounterLender", "LentCounters"]

Send = Callable[[FrameKind, bytes], None]


class LentCounters:
    """The worker's side: ``Counters`` whose every operation the gateway answers."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._numbers = itertools.count(1)
        self._asked: dict[int, asyncio.Future[int]] = {}

    async def add(self, key: str, amount: int, ttl_s: int) -> int:
        return await self._ask(CountAsk(ask=next(self._numbers), key=key, amount=amount, ttl_s=ttl_s))

    async def get(self, key: str) -> int:
        return await self._ask(CountAsk(ask=next(self._numbers), key=key))

    async def _ask(self, asked: CountAsk) -> int:
        answer: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._asked[asked.ask] = answer
        try:
            self._send(FrameKind.COUNT_ASK, asked.model_dump_json().encode())
            return await answer
        finally:
            self._asked.pop(asked.ask, None)

    def answer(self, payload: bytes) -> None:
        reply = CountAnswer.model_validate_json(payload)
        asked = self._asked.get(reply.ask)
        if asked is not None and not asked.done():
            asked.set_result(reply.value)

    def disconnected(self) -> None:
        """The gateway is gone: every operation waiting for it fails."""
        for asked in self._asked.values():
            if not asked.done():
                asked.set_exception(ConnectionError("the gateway closed the connection"))


class CounterLender:
    """The gateway's side, for one worker: its counter operations done on the gateway's counters."""

    def __init__(self, counters: Counters, send: Send) -> None:
        self._counters = counters
        self._send = send
        self._running: set[asyncio.Task[None]] = set()

    def ask(self, payload: bytes) -> None:
        task = asyncio.create_task(self._answer(CountAsk.model_validate_json(payload)))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _answer(self, asked: CountAsk) -> None:
        if asked.amount is None:
            value = await self._counters.get(asked.key)
        else:
            value = await self._counters.add(asked.key, asked.amount, asked.ttl_s)
        with contextlib.suppress(ConnectionError, RuntimeError):  # the worker is gone: nobody to answer
            self._send(FrameKind.COUNT_ANSWER, CountAnswer(ask=asked.ask, value=value).model_dump_json().encode())

    def close(self) -> None:
        for task in self._running:
            task.cancel()
